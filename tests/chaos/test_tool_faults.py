"""Tools that misbehave, in a real worker process: each failure goes back to the model
as the call's result, and the run completes."""

from __future__ import annotations

import asyncio
import time

from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import contract
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunStatus

from tests.chaos.conftest import plan
from tests.chaos.runs import retry_causes, start, task_failures

FAULTS = {
    "raises (2 attempts)": ("explode", {}, "failed: boom"),
    # Either side may end an attempt first: the server's start-to-close timer or the
    # worker's own deadline (`ToolTimeout`, which a loaded machine lets win); both say so.
    "hangs past its 1 s timeout (2 attempts)": ("hang", {}, "timeout"),
    "returns a value that is not JSON": ("not_json", {}, "not JSON-serialisable"),
    "returns 5 MB": ("huge", {"megabytes": 5}, None),
}
ATTEMPTS = {"explode": "boom", "hang": ("TIMEOUT_TYPE_START_TO_CLOSE", "ran past its 1s timeout")}
"""The tools tried twice (`tests.chaos.agents`), and what ended their first attempt: the
error the model reads came after the second."""


async def test_tool_faults_go_back_to_the_model_and_the_run_completes(client, workers, report):
    await workers.start("a")

    async def run(tool: str, args: dict) -> tuple:
        started = time.monotonic()
        handle = await start(client, workers.task_queue, plan(tool, args))
        return handle, await handle.result(), time.monotonic() - started

    # side by side, on one worker: each fault is its own run (14 s one after another)
    runs = await asyncio.gather(*(run(tool, args) for tool, args, _ in FAULTS.values()))
    figures = []
    for (name, (tool, _, error)), (handle, result, took) in zip(FAULTS.items(), runs, strict=True):
        assert result.status is RunStatus.COMPLETED, name
        state = await read_state(querying(handle))
        [outcome] = [i for i in state.items if isinstance(i, ToolResult)]
        if error is None:
            assert not outcome.is_error and len(outcome.content) == 5_000_000
        else:
            assert outcome.is_error and error in outcome.content, outcome.content
        assert await task_failures(handle) == 0
        if tool in ATTEMPTS:  # the server started a second attempt after the first ended
            [first_ended] = await retry_causes(handle, contract.ACTIVITY_RUN_TOOL)
            assert first_ended.endswith(ATTEMPTS[tool]), (name, first_ended)
        figures.append(f"{name}: {took:.1f} s")
    report.add(
        "tool faults (one run each, side by side)",
        "all completed, errors told to the model",
        "; ".join(figures),
    )
