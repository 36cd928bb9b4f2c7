"""The events of the loop's steps, as a run's event stream carries them: the run
started, a turn (model call) started, the model answered, a tool call was proposed,
started, finished, the run continued as new. (Approvals, pause and the run's end are
`workflows.run_events`, which webhooks carry too.)

Each builder returns the event's own fields; `stamped` adds the pinned ones (`seq`,
`at`, `run_id`, `agent`). Events are small: text, arguments and results are
previews (`PREVIEW` characters), sensitive arguments masked. Pure: no Temporal
imports, no I/O; time is passed in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from durable_agents.workflows import argument_view, at_most_once, details, handoffs
from durable_agents.workflows.interrupt_models import Interruption
from durable_agents.workflows.payloads import ToolOutcome
from durable_agents.workflows.run_items import AssistantMessage, ToolCall, UserMessage
from durable_agents.workflows.state import BackgroundRun, RunState
from durable_agents.workflows.tree_payloads import SubRunFinished

PREVIEW = 200
"""The most characters of text an event carries (a preview, with `…` when cut)."""


def stamped(state: RunState, event: dict[str, Any], *, seq: int, now: datetime) -> dict[str, Any]:
    """`event` with the pinned fields first, fields without a value left out."""
    head = {
        "seq": seq,
        "type": event["type"],
        "at": iso(now),
        "run_id": state.run_id,
        "agent": state.agent.name,
    }
    return head | {k: v for k, v in event.items() if k not in head and v is not None}


def run_started(state: RunState) -> dict[str, Any]:
    first = next((i for i in state.items if isinstance(i, UserMessage)), None)
    return {
        "type": "run_started",
        "turn": state.turn,
        "session": state.session,
        "input": preview(first.content) if first is not None else None,
    }


def turn_started(state: RunState) -> dict[str, Any]:
    return {"type": "turn_started", "turn": state.turn + 1}


def replied(state: RunState, reply: AssistantMessage | None) -> list[dict[str, Any]]:
    """The events of the model's reply just recorded: `model_finished`, then a
    `tool_proposed` for each of its calls."""
    if reply is None:
        return []
    return [model_finished(state, reply), *(tool_proposed(state, c) for c in reply.tool_calls)]


def model_finished(state: RunState, reply: AssistantMessage) -> dict[str, Any]:
    return {
        "type": "model_finished",
        "turn": reply.turn,
        "text": preview(reply.content) if reply.content else None,
        "tool_calls": len(reply.tool_calls),
        "usage": reply.usage.model_dump(mode="json") if reply.usage is not None else None,
    }


def tool_proposed(state: RunState, call: ToolCall) -> dict[str, Any]:
    return {
        "type": "tool_proposed",
        "call_id": call.call_id,
        "tool": call.tool,
        "call": _summary(state, call),
        "needs_approval": call.needs_approval,
    }


def tool_started(state: RunState, call: ToolCall) -> dict[str, Any]:
    return {
        "type": "tool_started",
        "call_id": call.call_id,
        "tool": call.tool,
        "call": _summary(state, call),
    }


def tool_finished(call: ToolCall, outcome: ToolOutcome) -> dict[str, Any]:
    return {
        "type": "tool_finished",
        "call_id": call.call_id,
        "tool": call.tool,
        "is_error": outcome.is_error,
        "interrupted": True if outcome.interrupted else None,  # left out unless true
        "result": preview(outcome.content),
    }


def interrupted_at_start(calls: list[ToolCall]) -> list[dict[str, Any]]:
    """The calls a resumed snapshot had started, answered interrupted as the run began."""
    return [tool_finished(c, at_most_once.interrupted(c, at_most_once.RESUMED)) for c in calls]


def handoff(state: RunState, call: ToolCall, to_agent: str) -> dict[str, Any]:
    """The run goes on with `to_agent` from the next model call."""
    reason = handoffs.reason(call)
    return {
        "type": "handoff",
        "call_id": call.call_id,
        "from_agent": state.agent.name,
        "to_agent": to_agent,
        "turn": state.turn,
        "reason": preview(reason) if reason is not None else None,
    }


def child_started(
    call: ToolCall, agent: str, child_run_id: str, *, in_background: bool = False
) -> dict[str, Any]:
    """An agent called as a tool started as a run of its own (`in_background`: the call
    did not wait for it, `Agent.as_tool(wait=False)`)."""
    event: dict[str, Any] = {
        "type": "child_started",
        "call_id": call.call_id,
        "child_agent": agent,
        "child_run_id": child_run_id,
    }
    if in_background:
        event["background"] = True
    return event


def child_finished(entry: BackgroundRun | None, end: SubRunFinished) -> dict[str, Any]:
    """An agent the run started in the background ended; its output goes to the model."""
    event: dict[str, Any] = {
        "type": "child_finished",
        "child_run_id": end.run_id,
        "status": end.status.value,
    }
    if entry is not None:
        event.update(call_id=entry.call_id, child_agent=entry.agent)
    if end.error:
        event["reason"] = end.error
    return event


def continued_as_new(state: RunState) -> dict[str, Any]:
    return {"type": "continued_as_new", "turn": state.turn}


def interrupted(state: RunState, record: Interruption) -> dict[str, Any]:
    """The turn was stopped: the model call cut, the calls answered as interrupted."""
    return {
        "type": "interrupted",
        "via": record.via,
        "by": record.by,
        "reason": preview(record.reason) if record.reason else None,
        "turn": record.turn,
        "model_call": record.model_call,
        "calls": [
            {"call_id": c.call_id, "tool": c.tool, "was": c.was, "note": preview(c.note)}
            for c in record.calls
        ],
    }


def iso(moment: datetime) -> str:
    """RFC 3339, UTC as `Z`."""
    return moment.isoformat().replace("+00:00", "Z")


def preview(text: str) -> str:
    """`text` cut to `PREVIEW` characters."""
    return text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"


def _summary(state: RunState, call: ToolCall) -> str:
    """`refund(order=A12, amount=40)`, sensitive values masked."""
    spec = state.agent.tool(call.tool)
    shown = argument_view.redacted(call.arguments, spec.sensitive if spec is not None else [])
    return details.tool_call_summary(call.tool, shown, limit=PREVIEW)
