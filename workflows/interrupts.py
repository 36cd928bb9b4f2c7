"""Steering a run while it works (issue 48), the pure part: asking for an interrupt,
applying it once the model call and tools under way have stopped (`settle`: every call
of the latest reply without a result is answered as interrupted, so the conversation
stays valid for every provider), and what a run interrupted by the `interrupt` update
does next (`halted`). The workflow stops the calls (`workflows.steering`).

Pure: no Temporal, no I/O; time is passed in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from durable_agents.workflows import answers, decisions
from durable_agents.workflows.agent_spec import ToolSpec
from durable_agents.workflows.interrupt_models import (
    INTERRUPTIONS_KEPT,
    NOTE_CHARS,
    CallWas,
    InterruptedCall,
    Interruption,
    PendingInterrupt,
)
from durable_agents.workflows.payloads import ToolOutcome
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ToolCall,
    ToolResult,
    UserMessage,
)
from durable_agents.workflows.state import RunState


def ask(
    state: RunState,
    *,
    via: Literal["message", "update"],
    by: str | None = None,
    reason: str | None = None,
    now: datetime,
) -> None:
    """Ask the run to stop its turn. A second ask before the first is applied joins it;
    a message's ask overrides the update's (the run answers the message instead of
    stopping)."""
    pending = state.interrupt
    if pending is None:
        state.interrupt = PendingInterrupt(via=via, by=by, reason=reason, at=now)
    elif via == "message" and pending.via == "update":
        state.interrupt = pending.model_copy(update={"via": "message"})
    state.updated_at = now


def problem(state: RunState, *, working: bool) -> str | None:
    """Why the `interrupt` update is refused (None: it is taken); `working`: the run is
    on a turn (not waiting for the user's next message)."""
    if state.status.is_final:
        return f"run {state.run_id} has ended ({state.status.value}): there is nothing to stop"
    if not state.agent.allow_interrupt:
        return forbidden(state)
    if state.interrupt is not None:
        return f"run {state.run_id} is being interrupted already (asked at {state.interrupt.at})"
    if not working:
        return f"run {state.run_id} waits for the user's next message: there is no turn to stop"
    return None


def forbidden(state: RunState) -> str:
    """Why an interrupt is refused by an agent that takes none."""
    return (
        f"agent {state.agent.name} takes no interrupts (allow_interrupt=False): its turns "
        "are not stopped by a sender; send the message with while_busy=queue"
    )


def prefix(pending: PendingInterrupt) -> str:
    """How an interrupted call's result begins: who interrupted it, and why."""
    if pending.via == "message":
        return "Interrupted by a new message"
    who = f" by {pending.by}" if pending.by else ""
    why = f": {pending.reason}" if pending.reason else ""
    return f"Interrupted{who}{why}"[:1_000]


def stopped_note(
    pending: PendingInterrupt,
    spec: ToolSpec | None,
    late: ToolOutcome | None,
    child: str | None = None,
    *,
    heartbeats: bool = False,
) -> str:
    """What is known of a call that was running when the turn was stopped: `late` is
    its outcome if it came anyway (the tool did not stop in time), `child` the run of an
    agent called as a tool (cancelled with it); `heartbeats`: the tool's activity ran
    with a heartbeat timeout (the worker's setting), so a cancel reached it."""
    said = prefix(pending)
    if late is not None:  # the call keeps its own result: this is what the record says
        what = "failed" if late.is_error else "finished"
        return _cut(f"{said}, but the call had {what}; it keeps its own result: {late.content}")
    if child is not None:
        return f"{said} while it ran: its run {child} was cancelled."
    if spec is not None and spec.mcp_server is not None:
        return (
            f"{said} while it ran: the MCP server was not told (its call does not "
            "heartbeat), so the call may still run there and take effect."
        )
    if spec is not None and spec.local:
        return (
            f"{said} while it ran: the local tool was asked to stop; one that is not async "
            "runs on until it returns, and may take effect."
        )
    if spec is not None and not heartbeats:
        return (
            f"{said} while it ran: the tool was asked to stop but cannot hear it (it has no "
            "heartbeat), so it may still run and take effect."
        )
    return f"{said} while it ran: the tool was stopped; it did not finish."


def settle(state: RunState, *, now: datetime) -> Interruption | None:
    """Apply the interrupt asked, once what ran has stopped: answer each call of the
    latest reply without a result as interrupted (withdrawn if it waited for a
    decision), record the interruption and clear the ask. None: none was asked."""
    pending = state.interrupt
    if pending is None:
        return None
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    reply = next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)
    replied = reply.tool_calls if reply else []
    open_calls = [c for c in replied if c.call_id not in answered]
    decided = decisions.decided(state)
    calls: list[InterruptedCall] = [  # ran on past the stop and finished: its own result
        InterruptedCall(call_id=c.call_id, tool=c.tool[:200], was="finished", note=note)
        for c in replied
        if c.call_id in answered and (note := pending.notes.get(c.call_id)) is not None
    ]
    for call in open_calls:
        was = _was(call, decided, pending, answers.kind(state.agent.tool(call.tool)))
        note = pending.notes.get(call.call_id) or _untouched_note(pending, was)
        state.items.append(
            ToolResult(call_id=call.call_id, content=note, is_error=True, interrupted=True)
        )
        calls.append(
            InterruptedCall(call_id=call.call_id, tool=call.tool[:200], was=was, note=note)
        )
    record = Interruption(
        via=pending.via,
        by=pending.by,
        reason=pending.reason,
        at=pending.at,
        applied_at=now,
        turn=state.turn,
        model_call=pending.model_call,
        calls=calls,
        # The update's record counts the messages queued before it too (they reach the
        # conversation next): they were sent before it, not "a message that came since".
        item=len(state.items) + (len(state.queued_messages) if pending.via == "update" else 0),
    )
    state.interruptions = [*state.interruptions, record][-INTERRUPTIONS_KEPT:]
    state.interrupt = None
    state.updated_at = now
    return record


def halted(state: RunState) -> bool:
    """The `interrupt` update stopped the run's latest turn and no message came since:
    a session waits for one, another run ends `interrupted`."""
    if not state.interruptions or state.interrupt is not None:
        return False
    last = state.interruptions[-1]
    if last.via != "update":
        return False
    later = state.items[last.item :]
    return not any(isinstance(i, UserMessage) and not i.feedback for i in later)


def _was(
    call: ToolCall, decided: dict[str, Decision], pending: PendingInterrupt, kind: answers.Kind
) -> CallWas:
    if call.call_id in pending.notes:
        return "running"
    if call.needs_approval and call.call_id not in decided:
        return "awaiting_answer" if kind == "answer" else "awaiting_approval"
    if call.needs_approval:
        return "approved"
    return "not_started"


def _untouched_note(pending: PendingInterrupt, was: str) -> str:
    said = prefix(pending)
    if was == "awaiting_approval":
        return f"{said}: the call was waiting for approval and is withdrawn; it was not run."
    if was == "awaiting_answer":
        return f"{said}: the call was waiting for an answer and is withdrawn; it got none."
    if was == "approved":
        return f"{said}: the call was approved but had not started; it was not run."
    return f"{said}: the call was not run."


def _cut(text: str) -> str:
    return text if len(text) <= NOTE_CHARS else text[: NOTE_CHARS - 1] + "…"
