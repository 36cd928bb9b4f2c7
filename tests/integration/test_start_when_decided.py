"""A call approved while other calls of the same reply run starts at once (not after
the slowest of them), and the results still follow the reply's order; a paused run
starts nothing, and a cancelled one still waits for the calls it stops."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import DecisionSignal
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowFailureError

from durable_agents.testing import Call, Reply
from tests.support import agents
from tests.support.histories import payloads_of
from tests.support.runs import start, state_of, wait_for_status

MAIL_THEN_NAP = Reply(
    tool_calls=(
        Call("send_email", {"to": "ann", "body": "hi"}, "e1"),
        Call("nap", {"seconds": 3}, "n1"),
    )
)
APPROVE = DecisionSignal(call_id="e1", approver="ann")


async def napping() -> None:
    """Until the nap of the batch has begun."""
    async with asyncio.timeout(15):
        while not any(name == "nap" for name, *_ in agents.CALLS):
            await asyncio.sleep(0.05)


def events_of(history_json: str) -> list[dict]:
    return json.loads(history_json)["events"]


def run_tool_events(events: list[dict]) -> dict[str, tuple[int, int | None]]:
    """For each run_tool activity, by its summary's tool: scheduled and closed event ids."""
    found: dict[str, tuple[int, int | None]] = {}
    for e in events:
        attrs = e.get("activityTaskScheduledEventAttributes")
        if attrs and attrs["activityType"]["name"] == "run_tool":
            summary = b"".join(p["data"] for p in payloads_of(e.get("userMetadata", {})))
            tool = "nap" if b"tool nap(" in summary else "send_email"
            found[tool] = (int(e["eventId"]), None)
    for e in events:
        for kind in ("Completed", "Canceled"):
            attrs = e.get(f"activityTask{kind}EventAttributes")
            if attrs:
                for tool, (scheduled, _) in found.items():
                    if int(attrs["scheduledEventId"]) == scheduled:
                        found[tool] = (scheduled, int(e["eventId"]))
    return found


async def test_an_approval_during_a_slow_batch_starts_its_call_at_once(worker, model_server):
    model_server.script(MAIL_THEN_NAP, Reply(content="done"))
    handle = await start(worker, "mail and nap", agent="assistant")
    await napping()
    await handle.signal(contract.SIGNAL_APPROVE, APPROVE)
    assert (await handle.result()).status is RunStatus.COMPLETED
    calls = run_tool_events(events_of((await handle.fetch_history()).to_json()))
    nap_done = calls["nap"][1]
    assert nap_done is not None and calls["send_email"][0] < nap_done  # mailed while napping
    results = [i.call_id for i in (await state_of(handle)).items if isinstance(i, ToolResult)]
    assert results == ["e1", "n1"]  # the reply's order, though the nap began first


async def test_a_paused_run_starts_no_approved_call_until_resumed(worker, model_server):
    model_server.script(MAIL_THEN_NAP, Reply(content="done"))
    handle = await start(worker, "mail and nap", agent="assistant")
    await napping()
    await handle.signal(contract.SIGNAL_PAUSE, {"by": "ops", "reason": "check"})
    await handle.signal(contract.SIGNAL_APPROVE, APPROVE)
    await wait_for_status(handle, RunStatus.PAUSED, timeout=30)  # the nap ended meanwhile
    assert [name for name, *_ in agents.CALLS] == ["nap"]  # the email did not start
    await handle.signal(contract.SIGNAL_RESUME, {"by": "ops"})
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert [name for name, *_ in agents.CALLS] == ["nap", "send_email"]


async def test_a_cancelled_run_waits_for_the_calls_it_stops(worker, model_server):
    model_server.script(MAIL_THEN_NAP)
    handle = await start(worker, "mail and nap", agent="assistant")
    await napping()
    await handle.cancel()
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    events = events_of((await handle.fetch_history()).to_json())
    kinds = [e["eventType"].removeprefix("EVENT_TYPE_") for e in events]
    assert "ACTIVITY_TASK_CANCELED" in kinds
    assert kinds.index("ACTIVITY_TASK_CANCELED") < kinds.index("WORKFLOW_EXECUTION_CANCELED")
