"""Cancelling a run reaches its running tool through the heartbeat: the tool stops,
its side effect never happens, and the run says `cancelled` only once it has stopped;
a tool that ignores the cancel is reported."""

from __future__ import annotations

import time

import pytest
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowFailureError

from tests.chaos import ledger
from tests.chaos.conftest import plan
from tests.chaos.harness import wait_until
from tests.chaos.runs import start, status


async def _cancel_mid_tool(client, workers, ledger_path, tool: str, args: dict):
    await workers.start("a")
    handle = await start(client, workers.task_queue, plan(tool, args))
    await wait_until(lambda: ledger.attempts(ledger_path, handle.id), 30, "the tool to start")
    cancelled_at = time.monotonic()
    await handle.cancel()
    try:
        await handle.result()
    except WorkflowFailureError:
        pass
    took = time.monotonic() - cancelled_at
    view = await status(handle)
    assert view is not None and view.status is RunStatus.CANCELLED
    return handle, took


async def test_cancel_stops_a_running_tool_before_its_side_effect(
    client, workers, ledger_path, report
):
    args = {"amount": 9, "seconds": 20}
    handle, took = await _cancel_mid_tool(client, workers, ledger_path, "charge", args)
    assert ledger.effects(ledger_path, handle.id) == []  # stopped before its side effect
    assert len(ledger.attempts(ledger_path, handle.id)) == 1  # not retried either
    report.add(
        "cancel a run mid-tool (sync tool checking `ToolContext.cancelled`)",
        "cancelled; the tool stopped, no side effect",
        f"run reported cancelled {took:.1f} s after the cancel, with the tool stopped",
    )


@pytest.mark.chaos_slow  # 18 s with the stubborn tool's thread at exit
async def test_a_tool_that_ignores_the_cancel_is_reported(client, workers, ledger_path, report):
    handle, took = await _cancel_mid_tool(client, workers, ledger_path, "stubborn", {"seconds": 15})
    # reported cancelled while the tool still ran (its effect comes after its 15 s)
    assert ledger.effects(ledger_path, handle.id) == []
    [worker] = workers.started
    await wait_until(
        lambda: any("still running in its thread" in line for line in worker.log),
        10,
        "the worker's warning about the stubborn tool",
    )
    report.add(
        "cancel a run mid-tool, the tool ignores it",
        "cancelled; the worker logs that the tool runs on",
        f"run reported cancelled {took:.1f} s after the cancel (2 s grace for the tool)",
    )
