"""Model endpoint faults, one run each, through a real worker process: transient ones
are retried (with backoff and jitter) and the run completes; requests the provider
refuses fail the run at once, saying why."""

from __future__ import annotations

import asyncio
import time

import pytest
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowFailureError

from durable_agents.testing import Fault, Hang, Raw
from tests.chaos.conftest import plan
from tests.chaos.runs import start

DONE = plan("charge", {"amount": 1, "seconds": 0})

TRANSIENT = {
    "HTTP 500": Fault(500, "internal error"),
    "HTTP 503": Fault(503, "overloaded"),
    "429 with Retry-After: 1": Fault(429, "slow down", headers={"retry-after": "1"}),
    "connection reset mid-body": Raw({"id": "x", "choices": []}, cut_at=5),
    "malformed JSON (200)": Raw('{"id": "x", "choices": [{'),
    "gateway HTML page (200)": Raw("<html>502 Bad Gateway</html>", content_type="text/html"),
    "JSON without choices (200)": Raw({"id": "x", "object": "chat.completion"}),
}


async def _timed_run(client, workers) -> tuple[float, object]:
    started = time.monotonic()
    handle = await start(client, workers.task_queue, DONE)
    try:
        result = await handle.result()
    except WorkflowFailureError as err:
        result = err
    return time.monotonic() - started, result


KEPT_IN_MAKE_TEST = ("HTTP 503", "malformed JSON (200)")
"""The fast slice: the others take ~3 s each of backoff and run in `make chaos`."""


@pytest.mark.parametrize(
    "name",
    [
        name if name in KEPT_IN_MAKE_TEST else pytest.param(name, marks=pytest.mark.chaos_slow)
        for name in TRANSIENT
    ],
)
async def test_transient_model_faults_are_retried_and_the_run_completes(
    client, workers, endpoint, report, name
):
    await workers.start("a")
    fault = TRANSIENT[name]
    endpoint.script(fault, fault)  # twice in a row
    took, result = await _timed_run(client, workers)
    assert getattr(result, "status", None) is RunStatus.COMPLETED, (name, result)
    assert len(endpoint.requests) == 4  # the two faults, then the plan's two replies
    report.add(f"model fault {name}, twice, then answers", "completed", f"{took:.1f} s")


REFUSED = [(400, "bad request"), (401, "invalid api key"), (404, "no such model")]


async def test_refused_model_requests_fail_the_run_at_once(client, workers, endpoint, report):
    await workers.start("a")  # one worker process, a run per refusal in turn (not 3 starts)
    for status, reason in REFUSED:
        before = len(endpoint.requests)
        endpoint.script(Fault(status, reason))
        took, result = await _timed_run(client, workers)
        assert isinstance(result, WorkflowFailureError), status
        cause = result.cause
        while getattr(cause, "cause", None) is not None:
            cause = cause.cause
        assert f"HTTP {status}: {reason}" in str(cause)
        assert len(endpoint.requests) == before + 1  # never retried
        report.add(
            f"model answers HTTP {status}",
            "run failed at once, reason kept",
            f"failed {took:.1f} s after start: `{cause}`",
        )


@pytest.mark.chaos_slow
async def test_a_hanging_then_down_endpoint_is_waited_out(client, workers, endpoint, report):
    await workers.start("a")
    endpoint.script(Hang(30))
    took, result = await _timed_run(client, workers)
    assert getattr(result, "status", None) is RunStatus.COMPLETED
    hang = f"hung request: completed in {took:.1f} s (request timeout 8 s, then retried)"
    endpoint.stop()
    handle = await start(client, workers.task_queue, DONE)
    down = 10.0
    await asyncio.sleep(down)
    endpoint.start()
    back = time.monotonic()
    assert (await handle.result()).status is RunStatus.COMPLETED
    report.add(
        "model endpoint hangs; then is down for 10 s",
        "both runs completed",
        f"{hang}; down endpoint: completed {time.monotonic() - back:.1f} s after it came back",
    )
