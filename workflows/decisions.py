"""Approve/reject decisions as pure functions of RunState.

A decision applies to one pending call of the latest reply. A signal that
cannot apply never fails the run: it is held (its call is not proposed yet
because a model call is under way), ignored (an exact repeat), or recorded
as refused with the reason. The `decide` update is checked before it is
accepted, so a refused update leaves no trace.

Holding is limited to the time a model call is under way on purpose: call ids
come from the model, so the reply being produced is the only place an id a
sender knows can still be on its way into the state (the model activity has
completed, the workflow has not recorded it yet). At any other time an unknown
id cannot become known, and refusing it at once tells the sender of a typo.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Literal

from durable_agents.workflows.approval_policy import arguments_problem
from durable_agents.workflows.contract import ERROR_APPROVAL_TIMEOUT
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import DecideInput, PendingApproval
from durable_agents.workflows.state import (
    AssistantMessage,
    Decision,
    DecisionAttempt,
    ErrorInfo,
    RunState,
    ToolCall,
    ToolResult,
)


class _NotYetProposed(DecisionRefused):
    """The call id is unknown while a model reply is still to come."""


Via = Literal["signal", "update"]


def check(state: RunState, request: DecideInput, *, model_call_pending: bool = False) -> ToolCall:
    """The pending call `request` would decide; raises DecisionRefused if it cannot."""
    if state.status.is_final:
        raise DecisionRefused(f"run {state.run_id} has ended ({state.status.value})")
    call_id = request.call_id
    found = _find_call(state, call_id)
    if found is None:
        if model_call_pending:
            raise _NotYetProposed(f"no tool call {call_id} yet: the model is still answering")
        raise DecisionRefused(f"no tool call {call_id} in run {state.run_id}")
    turn, call = found
    earlier = decided(state).get(call_id)
    if earlier is not None:
        raise DecisionRefused(
            f"tool call {call_id} is already decided ({earlier.decision} by {earlier.approver})"
        )
    if call_id in _answered(state):
        raise DecisionRefused(f"tool call {call_id} (turn {turn}) is already resolved")
    if not call.needs_approval:
        raise DecisionRefused(f"tool call {call_id} ({call.tool}) needs no approval")
    policy = state.agent.require_tool(call.tool).approval
    if policy.approvers is not None and request.approver not in policy.approvers:
        raise DecisionRefused(
            f"{request.approver} may not decide {call.tool} calls "
            f"(allowed: {', '.join(policy.approvers) or 'nobody'})"
        )
    if request.arguments is not None:
        if request.decision != "approve":
            raise DecisionRefused("only an approval can carry edited arguments")
        problem = arguments_problem(state.agent.require_tool(call.tool), request.arguments)
        if problem:
            raise DecisionRefused(f"edited arguments are not valid for {call.tool}: {problem}")
    return call


def apply(state: RunState, request: DecideInput, *, via: Via, now: datetime) -> Decision:
    """Record a decision (with `always`, also on the tool's other pending calls)."""
    call = check(state, request)
    recorded = Decision(
        call_id=call.call_id,
        decision=request.decision,
        approver=request.approver,
        reason=request.reason,
        always=request.always,
        via=via,
        sender=request.sender,
        arguments=request.arguments,
        at=now,
    )
    record(state, recorded)
    if request.always:
        for other in pending_calls(state):
            if other.tool == call.tool:
                record(state, rule_decision(recorded, other.call_id, now=now))
    state.updated_at = now
    return recorded


def receive_signal(
    state: RunState,
    request: DecideInput,
    *,
    model_call_pending: bool,
    now: datetime,
    hold_limit: int | None = None,
) -> Decision | None:
    """Apply a decision signal, or hold, ignore or refuse it (never raises). With
    `hold_limit`, a signal that would be held past it is refused instead."""
    try:
        check(state, request, model_call_pending=model_call_pending)
    except _NotYetProposed as err:
        if hold_limit is not None and len(state.held_decisions) >= hold_limit:
            why = f"{err}; {hold_limit} decisions are held already"
            state.refused_decisions.append(_attempt(request, now=now, refused_because=why))
            return None
        state.held_decisions.append(_attempt(request, now=now))
        return None
    except DecisionRefused as err:
        if not _is_repeat(state, request):
            state.refused_decisions.append(_attempt(request, now=now, refused_because=str(err)))
        return None
    return apply(state, request, via="signal", now=now)


def malformed_attempt(
    decision: Literal["approve", "reject"],
    data: object,
    problem: str,
    *,
    now: datetime,
    clip_to: int | None = None,
) -> DecisionAttempt:
    """The audit record of a decision signal whose payload is not a valid one.

    `data` is the payload as JSON (whatever shape it has); its `call_id` and
    `approver` are kept when they are strings, so the refusal can be found (cut to
    `clip_to` characters when given).
    """
    fields = data if isinstance(data, dict) else {}
    call_id, approver = fields.get("call_id"), fields.get("approver")

    def kept(value: object) -> str:
        text = value if isinstance(value, str) else ""
        return text if clip_to is None or len(text) <= clip_to else text[: clip_to - 1] + "…"

    return DecisionAttempt(
        call_id=kept(call_id),
        decision=decision,
        approver=kept(approver),
        at=now,
        refused_because=f"invalid {decision} payload: {problem}",
    )


def release_held(state: RunState, *, now: datetime) -> None:
    """After a model reply: apply held signals whose call it proposed, refuse the rest."""
    held, state.held_decisions = state.held_decisions, []
    for attempt in held:
        request = DecideInput(**attempt.model_dump(exclude={"at", "refused_because"}))
        receive_signal(state, request, model_call_pending=False, now=now)


def rule_decision(source: Decision, call_id: str, *, now: datetime) -> Decision:
    """The decision an `always` decision makes on another call of the same tool."""
    return Decision(
        call_id=call_id,
        decision=source.decision,
        approver=source.approver,
        reason=source.reason,
        via="rule",
        at=now,
    )


def standing_rule(state: RunState, tool: str) -> Decision | None:
    """The latest explicit `always` decision on a call of `tool`, if any."""
    tools = {c.call_id: c.tool for c in _all_calls(state)}
    rules = [d for d in decided(state).values() if d.always and tools.get(d.call_id) == tool]
    return rules[-1] if rules else None


def expire(state: RunState, *, now: datetime) -> ErrorInfo | None:
    """Apply each pending call's timeout outcome once its deadline has passed.

    Returns the error that fails the run when a policy says `fail`.
    """
    for call, deadline in deadlines(state):
        if deadline > now:
            continue
        policy = state.agent.require_tool(call.tool).approval
        waited = _words(policy.timeout)  # type: ignore[arg-type]
        if policy.on_timeout == "fail":
            return ErrorInfo(
                type=ERROR_APPROVAL_TIMEOUT,
                message=f"no decision on {call.tool} call {call.call_id} within {waited}",
                details={"call_id": call.call_id, "tool": call.tool},
            )
        record(
            state,
            Decision(
                call_id=call.call_id,
                decision="reject",
                approver="system",
                reason=f"no decision within {waited}",
                via="timeout",
                at=now,
            ),
        )
    return None


def deadlines(state: RunState) -> list[tuple[ToolCall, datetime]]:
    """Pending calls whose tool has an approval timeout, with their deadlines."""
    reply = _last_reply(state)
    found = []
    for call in pending_calls(state):
        timeout = state.agent.require_tool(call.tool).approval.timeout
        if reply is not None and timeout is not None:
            found.append((call, reply.at + timeout))
    return found


def pending_calls(state: RunState) -> list[ToolCall]:
    """Calls of the latest reply that wait for a decision."""
    reply = _last_reply(state)
    if reply is None or state.status.is_final:
        return []
    done = decided(state).keys() | _answered(state)
    return [c for c in reply.tool_calls if c.needs_approval and c.call_id not in done]


def pending_approvals(state: RunState) -> list[PendingApproval]:
    """The `get_pending_approvals` view of the pending calls."""
    reply = _last_reply(state)
    return [
        PendingApproval(
            call_id=c.call_id, tool=c.tool, arguments=c.arguments, requested_at=reply.at
        )
        for c in pending_calls(state)
        if reply is not None
    ]


def decided(state: RunState) -> dict[str, Decision]:
    """Every decision by call id."""
    return {i.call_id: i for i in state.items if isinstance(i, Decision)}


def arguments_for(call: ToolCall, decision: Decision | None) -> str:
    """The arguments a call runs with: the approver's edit, else the model's."""
    if decision is not None and decision.arguments is not None:
        return json.dumps(decision.arguments)
    return call.arguments


# --- helpers ---------------------------------------------------------------------


def record(state: RunState, decision: Decision) -> None:
    """Append a decision; a rejection also answers the call for the model."""
    state.items.append(decision)
    if decision.decision == "reject":
        who = {
            "rule": f"a standing rule of {decision.approver}",
            "timeout": "the approval deadline",
        }.get(decision.via, decision.approver)
        because = f": {decision.reason}" if decision.reason else "."
        state.items.append(
            ToolResult(
                call_id=decision.call_id,
                content=f"Tool call rejected by {who}{because} Do not retry it unchanged.",
                is_error=True,
            )
        )


def _attempt(
    request: DecideInput, *, now: datetime, refused_because: str | None = None
) -> DecisionAttempt:
    return DecisionAttempt(
        **request.model_dump(exclude={"decision"}),
        decision=request.decision,
        at=now,
        refused_because=refused_because,
    )


def _is_repeat(state: RunState, request: DecideInput) -> bool:
    """Exactly the decision already recorded (same approver, reason, `always` and
    arguments): idempotent. Anything else on a decided call is refused, so a
    changed reason or `always` is never dropped without a trace."""
    earlier = decided(state).get(request.call_id)
    return (
        earlier is not None
        and earlier.via in ("signal", "update")
        and (earlier.decision, earlier.approver, earlier.reason, earlier.always, earlier.arguments)
        == (request.decision, request.approver, request.reason, request.always, request.arguments)
    )


def _last_reply(state: RunState) -> AssistantMessage | None:
    return next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)


def _all_calls(state: RunState) -> list[ToolCall]:
    return [c for i in state.items if isinstance(i, AssistantMessage) for c in i.tool_calls]


def _find_call(state: RunState, call_id: str) -> tuple[int, ToolCall] | None:
    for item in reversed(state.items):
        if isinstance(item, AssistantMessage):
            for call in item.tool_calls:
                if call.call_id == call_id:
                    return item.turn, call
    return None


def _answered(state: RunState) -> set[str]:
    return {i.call_id for i in state.items if isinstance(i, ToolResult)}


def _words(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{delta.total_seconds():g} s"
