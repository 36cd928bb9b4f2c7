"""A call approved while other calls of the same reply run starts at once (not after
the slowest of them), and the results still follow the reply's order."""

from __future__ import annotations

import asyncio
import json
import time

from durable_agents.workflows import contract
from durable_agents.workflows.payloads import DecisionSignal
from durable_agents.workflows.state import RunStatus, ToolResult

from durable_agents.testing import Call, Reply
from tests.support import agents
from tests.support.runs import start, state_of, wait_for_status


def event_times(events: list[dict], kind: str, activity: str | None = None) -> list[int]:
    return [
        int(e["eventId"])
        for e in events
        if e["eventType"] == f"EVENT_TYPE_{kind}"
        and (
            activity is None
            or e["activityTaskScheduledEventAttributes"]["activityType"]["name"] == activity
        )
    ]


async def test_an_approval_during_a_slow_batch_starts_its_call_at_once(worker, model_server):
    model_server.script(
        Reply(
            tool_calls=(
                Call("nap", {"seconds": 3}, "n1"),
                Call("send_email", {"to": "ann", "body": "hi"}, "e1"),
            )
        ),
        Reply(content="done"),
    )
    handle = await start(worker, "nap and mail", agent="assistant")
    await wait_for_status(handle, RunStatus.RUNNING)
    while not any(name == "nap" for name, *_ in agents.CALLS):  # the batch has begun
        await asyncio.sleep(0.05)
    approved = time.monotonic()
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    assert (await handle.result()).status is RunStatus.COMPLETED
    mailed = next(n for n, (name, *_rest) in enumerate(agents.CALLS) if name == "send_email")
    assert [name for name, *_ in agents.CALLS][: mailed + 1] == ["nap", "send_email"]
    assert agents.NAPS and agents.NAPS[-1][1] - approved > 1.5  # the nap still ran then
    events = json.loads((await handle.fetch_history()).to_json())["events"]
    nap_done = event_times(events, "ACTIVITY_TASK_COMPLETED")
    scheduled = event_times(events, "ACTIVITY_TASK_SCHEDULED", "run_tool")
    assert len(scheduled) == 2 and scheduled[1] < max(nap_done)  # the email before the nap ended
    results = [i.call_id for i in (await state_of(handle)).items if isinstance(i, ToolResult)]
    assert results == ["n1", "e1"]  # the reply's order
