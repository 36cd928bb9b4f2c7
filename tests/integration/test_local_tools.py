"""`@tool(local=True)`: a fast tool runs as a local activity in the worker that runs
the run's workflow task (no activity task through the server), and the Temporal UI
still shows what ran (the local activity's marker carries the call's summary); a
tool that needs approval next to it still runs as an activity of its own."""

from __future__ import annotations

import json

from durable_agents.workflows import contract
from durable_agents.workflows.payloads import DecisionSignal
from durable_agents.workflows.state import RunStatus

from durable_agents.testing import Call, Reply
from tests.support import agents
from tests.support.histories import payloads_of
from tests.support.runs import start, state_of, tool_results, wait_for_status


def scheduled_tools(events: list[dict]) -> list[str]:
    """The activity types scheduled as activity tasks, in order."""
    return [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
    ]


def local_markers(events: list[dict]) -> list[dict]:
    return [
        e
        for e in events
        if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED"
        and e["markerRecordedEventAttributes"]["markerName"] == "core_local_activity"
    ]


async def test_a_local_tool_runs_in_the_workflow_worker_and_the_ui_shows_what_ran(
    worker, model_server
):
    model_server.script(
        Reply(tool_calls=(Call("lookup", {"key": "A12"}, "l1"),)),
        Reply(content="A12 was delivered"),
    )
    handle = await start(worker, "where is A12?", agent="quick")
    result = await handle.result()
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "A12 was delivered")
    assert tool_results(await state_of(handle))["l1"].content == "delivered"
    assert [c[:2] for c in agents.CALLS] == [("lookup", {"key": "A12"})]  # once
    events = json.loads((await handle.fetch_history()).to_json())["events"]
    assert "run_tool" not in scheduled_tools(events)  # no activity task for it
    [marker] = local_markers(events)
    summary = payloads_of(marker.get("userMetadata", {}))
    assert any(b"tool lookup(key=A12)" in p["data"] for p in summary), summary


async def test_a_call_needing_approval_beside_it_runs_as_an_activity_of_its_own(
    worker, model_server
):
    model_server.script(
        Reply(
            tool_calls=(
                Call("lookup", {"key": "B7"}, "l1"),
                Call("send_email", {"to": "ann", "body": "B7 in transit"}, "e1"),
            )
        ),
        Reply(content="told ann"),
    )
    handle = await start(worker, "tell ann about B7", agent="quick")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    assert (await handle.result()).status is RunStatus.COMPLETED
    events = json.loads((await handle.fetch_history()).to_json())["events"]
    assert scheduled_tools(events).count("run_tool") == 1  # the email
    assert len(local_markers(events)) == 1  # the lookup
    results = tool_results(await state_of(handle))
    assert (results["l1"].content, results["e1"].content) == ("in transit", "sent to ann")
