"""The activities count every failure once, with its reason: called directly in an
ActivityEnvironment whose metric meter is a real Prometheus-serving runtime."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest
from durable_agents.activities import telemetry
from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.run_tool import ToolActivities
from durable_agents.workflows.contract import ERROR_TOOL_TIMEOUT
from durable_agents.workflows.payloads import ModelRequest, ToolRequest
from durable_agents.workflows.run_items import UserMessage
from openai import AsyncOpenAI
from temporalio.activity import ActivityCancellationDetails
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_agents.testing import Reply
from tests.integration.test_lifecycle import wait_for_file
from tests.support.ops_support import Metered, eventually, metered_client, samples, total

HALF_SECOND = timedelta(seconds=0.5)
TOOLS = ToolActivities(AgentRegistry.from_modules(["tests.support.ops_agents"]))


@pytest.fixture(scope="module")
async def metered(env) -> Metered:
    return await metered_client(env)


@dataclasses.dataclass
class Probe:
    """An ActivityEnvironment reporting to `metered` under its own task queue label."""

    metered: Metered
    env: ActivityEnvironment
    queue: str

    async def counted(self, name: str, **labels: str) -> float:
        """`name`'s total for this probe, once it shows (the exposition lags a little)."""

        async def read():
            return [s for s in samples(await asyncio.to_thread(self.metered.scrape)) if self._of(s)]

        found = await eventually(read, lambda f: total(f, name) > 0)
        return total(found, name, **labels)

    def _of(self, sample) -> bool:
        return sample[1].get("task_queue") == self.queue


@pytest.fixture
def probe(metered) -> Probe:
    env = ActivityEnvironment()
    queue = f"probe-{uuid.uuid4().hex[:8]}"
    env.info = dataclasses.replace(env.info, task_queue=queue)
    env.metric_meter = metered.runtime.metric_meter
    return Probe(metered, env, queue)


def tool_request(tool: str, arguments: str = "{}", context=None) -> ToolRequest:
    return ToolRequest(
        run_id="r",
        agent="napper",
        tool=tool,
        call_id="c1",
        arguments=arguments,
        idempotency_key="r/c1",
        context=context,
    )


async def cancelled_while(
    probe: Probe, details: ActivityCancellationDetails, run: Awaitable, started: Callable
) -> None:
    task = asyncio.ensure_future(run)
    await started()
    probe.env.cancel(details)
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize(
    ("details", "reason"),
    [
        (ActivityCancellationDetails(cancel_requested=True), "cancelled"),
        (ActivityCancellationDetails(worker_shutdown=True), "worker_shutdown"),
        (ActivityCancellationDetails(timed_out=True), "timed_out"),
    ],
    ids=["run-cancelled", "worker-shutdown", "heartbeat-timeout"],
)
async def test_a_cancelled_tool_counts_one_failure_with_the_cause(probe, tmp_path, details, reason):
    probe.env.info = dataclasses.replace(probe.env.info, start_to_close_timeout=None)
    request = tool_request("nap", '{"seconds": 30}', context={"marks": str(tmp_path)})
    run = probe.env.run(TOOLS.run_tool, request)
    await cancelled_while(probe, details, run, lambda: wait_for_file(tmp_path / "started"))

    assert await probe.counted(telemetry.TOOL_FAILURES, tool="nap", reason=reason) == 1
    assert await probe.counted(telemetry.TOOL_FAILURES) == 1
    assert not (tmp_path / "finished").exists()


async def test_a_tool_past_its_timeout_is_cut_off_and_counted_as_timed_out(probe):
    probe.env.info = dataclasses.replace(probe.env.info, start_to_close_timeout=HALF_SECOND)
    with pytest.raises(ApplicationError) as caught:
        await probe.env.run(TOOLS.run_tool, tool_request("stall", '{"seconds": 30}'))

    assert caught.value.type == ERROR_TOOL_TIMEOUT
    assert caught.value.message == "tool 'stall' ran past its 0.5s timeout"
    assert not caught.value.non_retryable
    assert await probe.counted(telemetry.TOOL_FAILURES, tool="stall", reason="timed_out") == 1
    assert await probe.counted(telemetry.TOOL_FAILURES) == 1


async def test_a_result_that_is_not_json_counts_one_failure(probe):
    with pytest.raises(ApplicationError, match="tool result of type object is not JSON"):
        await probe.env.run(TOOLS.run_tool, tool_request("gadget"))

    reason = "unserialisable_result"
    assert await probe.counted(telemetry.TOOL_FAILURES, tool="gadget", reason=reason) == 1
    assert await probe.counted(telemetry.TOOL_FAILURES) == 1


async def test_a_cancelled_model_call_is_counted_with_its_cause(probe, model_server):
    model_server.script(Reply(content="too late", delay_seconds=30))
    client = AsyncOpenAI(base_url=model_server.base_url, api_key="t", max_retries=0)
    request = ModelRequest(
        model="test-model", instructions="", items=[UserMessage(content="hi")], tools=[], turn=1
    )
    run = probe.env.run(ModelActivities(client).call_model, request)

    async def asked() -> None:
        async def requests() -> list:
            return list(model_server.requests)

        await eventually(requests, bool)

    await cancelled_while(probe, ActivityCancellationDetails(cancel_requested=True), run, asked)
    await client.close()
    model = {"model": "test-model"}
    assert await probe.counted(telemetry.MODEL_CALLS, **model, outcome="cancelled") == 1
    assert await probe.counted(telemetry.MODEL_CALLS) == 1
