"""At-most-once tools (`@tool(at_most_once=True)`): what a run records as such a call
starts, and how a call whose outcome was lost is answered. Pure: no Temporal, no I/O.

The workflow hears of an activity only when it ends, never when an attempt starts. So
a run counts a call as started when it schedules the call's one attempt: `mark_started`
stamps the call in the same workflow task that schedules the activity, and from then on

- the activity has one attempt and a heartbeat timeout: a retry never starts it again,
  and a worker that dies mid-call is noticed; its lost outcome is answered `interrupted`;
- a snapshot read while the call runs holds the stamp: the run resumed or forked from it
  answers the call `interrupted` (`interrupt_started`) instead of starting it again.

An error the tool raises is its answer, as for any tool (it is not tried again): only an
outcome nobody received is "interrupted". A call stamped but never started (its workflow
task failed after the stamp was read) is answered interrupted too: "may or may not" holds.
"""

from __future__ import annotations

from datetime import datetime

from durable_agents.workflows.payloads import ToolOutcome
from durable_agents.workflows.run_items import AssistantMessage, ToolCall, ToolResult
from durable_agents.workflows.state import RunState

RESUMED = "the run was resumed from a snapshot taken while the call ran"
"""Why a call open in a resumed snapshot is answered interrupted."""


def message(tool: str, why: str) -> str:
    """What the model reads for an interrupted call of `tool`."""
    return (
        f"Interrupted: the call to tool '{tool}' started, but its outcome was lost ({why}). "
        f"It may or may not have taken effect. It was not run again: '{tool}' runs at most "
        "once. Check whether it took effect before calling it again."
    )


def interrupted(call: ToolCall, why: str) -> ToolOutcome:
    """The outcome of `call` whose attempt's outcome was lost, for `why`."""
    return ToolOutcome(
        call_id=call.call_id, content=message(call.tool, why), is_error=True, interrupted=True
    )


def mark_started(state: RunState, call_id: str, *, now: datetime) -> bool:
    """Stamp call `call_id` of the latest reply as started; False if it already was (it
    must not start again)."""
    reply = _last_reply(state)
    call = next((c for c in reply.tool_calls if c.call_id == call_id), None) if reply else None
    if call is not None and call.started_at is not None:
        return False
    if call is not None:
        call.started_at = now
    return True


def started_open(state: RunState) -> list[ToolCall]:
    """The calls of the latest reply stamped started and without a result."""
    reply = _last_reply(state)
    if reply is None:
        return []
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    return [c for c in reply.tool_calls if c.started_at is not None and c.call_id not in answered]


def interrupt_started(state: RunState) -> list[ToolOutcome]:
    """Answer every started call without a result as interrupted (a resumed snapshot's);
    the outcomes recorded, in the reply's order."""
    outcomes = [interrupted(c, RESUMED) for c in started_open(state)]
    for outcome in outcomes:
        state.items.append(
            ToolResult(
                call_id=outcome.call_id,
                content=outcome.content,
                is_error=True,
                interrupted=True,
            )
        )
    return outcomes


def _last_reply(state: RunState) -> AssistantMessage | None:
    return next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)
