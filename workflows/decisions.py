"""Approve/reject decisions as pure functions of RunState.

A decision applies to one pending call of the latest reply. A signal that
cannot apply never fails the run: it is held (its call is not proposed yet
because a model call is under way), ignored (an exact repeat), or recorded
as refused with the reason. The `decide` update is checked before it is accepted.

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

from durable_agents.workflows import answers, budget, handoffs, short_ids, signed_decisions
from durable_agents.workflows.agent_spec import ApprovalPolicy
from durable_agents.workflows.approval_policy import (
    arguments_problem,
    condition_holds,
    limits_problem,
)
from durable_agents.workflows.audit import DecisionAttempt
from durable_agents.workflows.contract import ERROR_APPROVAL_TIMEOUT
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import DecideInput, PendingApproval, parse_time
from durable_agents.workflows.revoked_approvals import reopened_because
from durable_agents.workflows.run_items import (
    AssistantMessage,
    BudgetRequest,
    Decision,
    ToolCall,
    ToolResult,
)
from durable_agents.workflows.state import ErrorInfo, RunState


class _NotYetProposed(DecisionRefused):
    """The call id is unknown while a model reply is still to come."""


Via = Literal["signal", "update"]


def check(
    state: RunState,
    request: DecideInput,
    *,
    now: datetime,
    model_call_pending: bool = False,
) -> ToolCall:
    """The pending call `request` would decide; raises DecisionRefused if it cannot.

    The decision must also match what it names (run, arguments digest, expiry), carry
    a valid signature where given or where the policy requires one, respect the
    policy's `allow_always`, and keep edited arguments within the policy's limits.
    """
    if state.status.is_final:
        raise DecisionRefused(f"run {state.run_id} has ended ({state.status.value})")
    call_id = short_ids.resolve(state, request.call_id)
    found = _find_call(state, call_id)
    if found is None:
        if model_call_pending:
            raise _NotYetProposed(f"no tool call {call_id} yet: the model is still answering")
        raise DecisionRefused(f"no tool call {call_id} in run {state.run_id}")
    turn, call = found
    asked = budget.request_for(state, call_id)
    earlier = decided(state).get(call_id)
    if earlier is not None:
        raise DecisionRefused(
            f"tool call {call_id} is already decided ({earlier.decision} by {earlier.approver})"
        )
    if call_id in _answered(state):
        raise DecisionRefused(f"tool call {call_id} (turn {turn}) is already resolved")
    if not call.needs_approval:
        raise DecisionRefused(f"tool call {call_id} ({call.tool}) needs no approval")
    tool = state.agent.tool(call.tool) if asked is None else None
    if (
        tool is None and asked is None
    ):  # a call a resumed snapshot left open, of a tool the agent lacks
        raise DecisionRefused(f"tool call {call_id} names no tool of the agent ({call.tool})")
    if call not in pending_calls(state):
        raise DecisionRefused(f"tool call {call_id} (turn {turn}) is not waiting for a decision")
    answers.check(call, tool, request)
    policy = tool.approval if tool is not None else state.agent.budget_approval
    _check_binding(state, request, call, policy, now=now)
    if asked is not None and request.always:
        raise DecisionRefused("a budget extension is decided once: `always` is refused")
    if policy.approvers is not None and request.approver not in policy.approvers:
        raise DecisionRefused(
            f"{request.approver} may not decide {call.tool} calls "
            f"(allowed: {', '.join(policy.approvers) or 'nobody'})"
        )
    if request.arguments is not None:
        if request.decision != "approve":
            raise DecisionRefused("only an approval can carry edited arguments")
        problem = (
            arguments_problem(tool, request.arguments)
            if tool is not None
            else budget.arguments_problem(asked, request.arguments)  # type: ignore[arg-type]
        )
        if problem is None:
            sensitive = tool.sensitive if tool is not None else []
            problem = limits_problem(
                _limited(state, policy, asked), request.arguments, sensitive=sensitive
            )
        if problem:
            raise DecisionRefused(f"edited arguments are not valid for {call.tool}: {problem}")
    elif asked is not None and request.decision == "approve":
        problem = limits_problem(_limited(state, policy, asked), json.loads(call.arguments))
        if problem:
            raise DecisionRefused(
                f"the proposed budget is outside the policy's limits ({problem}): approve "
                "with arguments within them"
            )
    return call


def _check_binding(
    state: RunState, request: DecideInput, call: ToolCall, policy: ApprovalPolicy, *, now: datetime
) -> None:
    problem = signed_decisions.binding_problem(
        request,
        run_id=state.run_id,
        digest=signed_decisions.call_sha256(call),
        now=now,
        execution_id=state.execution_id,
    )
    if problem is not None:
        raise DecisionRefused(problem)
    signed = policy.require_signature or policy.separate_duties or request.signature is not None
    if signed:
        key = signed_decisions.verify(
            request,
            state.agent.approver_keys,
            now=now,
            execution_bound=state.execution_id is not None,
        )
        if policy.separate_duties and request.decision == "approve":
            _check_separation(state, call, key.owner)
    if request.always and not policy.allow_always:
        raise DecisionRefused(f"the policy of {call.tool} does not allow `always`")
    if request.always_when is not None and not request.always:
        raise DecisionRefused("`always_when` goes with `always`")
    if request.always and request.arguments is not None:
        raise DecisionRefused(
            "`always` with edited arguments is refused: the rule would approve the "
            "arguments that were edited away"
        )


def _check_separation(state: RunState, call: ToolCall, approver: str) -> None:
    if state.started_by is None:
        raise DecisionRefused(
            f"the policy of {call.tool} separates duties: the run's start must be signed "
            "(start_signature), so that who started it is known, but it was not"
        )
    if state.started_by.owner == approver:
        raise DecisionRefused(
            f"the policy of {call.tool} separates duties: {approver} started this run "
            f"(key {state.started_by.key_id!r}) and may not approve its calls"
        )


def apply(state: RunState, request: DecideInput, *, via: Via, now: datetime) -> Decision:
    """Record a decision (with `always`, also on the pending calls its rule covers)."""
    call = check(state, request, now=now)
    signed = request.signature.key_id if request.signature is not None else None
    recorded = Decision(
        call_id=call.call_id,
        decision=request.decision,
        approver=request.approver,
        reason=request.reason,
        always=request.always,
        via=via,
        sender=request.sender,
        arguments=request.arguments,
        run_id=request.run_id,
        arguments_sha256=signed_decisions.call_sha256(call),
        expires_at=request.expires_at,
        signed_by=signed,
        always_when=request.always_when,
        execution_id=request.execution_id,
        metadata=request.metadata,
        result=request.result if request.decision == "answer" else None,
        short_id=short_ids.of(state, call),
        at=now,
    )
    record(state, recorded)
    asked = budget.request_for(state, call.call_id)
    if asked is not None:
        budget.extend(state, asked, recorded)
    if request.always:
        for other in pending_calls(state):
            if other.tool == call.tool and covers(state, recorded, other, now=now):
                record(state, rule_decision(recorded, other, now=now))
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
    `hold_limit`, a signal that would be held past it is refused instead. Only a
    plain rejection is held: an approval, an `always` or a signed
    decision must name a call that is proposed, so nobody approves unseen arguments."""
    try:
        check(state, request, model_call_pending=model_call_pending, now=now)
    except _NotYetProposed as err:
        why = None
        if hold_limit is not None and len(state.held_decisions) >= hold_limit:
            why = f"{err}; {hold_limit} decisions are held already"
        elif (
            request.decision != "reject"
            or request.always
            or request.signature
            or request.arguments is not None
            or request.always_when is not None
        ):
            why = (
                f"{err}; only a plain rejection is held for a call not yet proposed "
                "(approve it once it is pending, with its arguments_sha256)"
            )
        if why is not None:
            state.refused_decisions.append(_attempt(request, now=now, refused_because=why))
            return None
        state.held_decisions.append(_attempt(request, now=now))
        return None
    except DecisionRefused as err:
        if not _is_repeat(state, request):
            state.refused_decisions.append(_attempt(request, now=now, refused_because=str(err)))
        return None
    except Exception as err:  # a check that cannot be made (e.g. a server's odd schema)
        # is a refusal, never a failed workflow task: the signal stays in history, and
        # every retry of the task would fail on it again.
        why = f"this decision cannot be checked ({type(err).__name__}); it is refused"
        state.refused_decisions.append(_attempt(request, now=now, refused_because=why))
        return None
    return apply(state, request, via="signal", now=now)


def malformed_attempt(
    decision: Literal["approve", "reject", "answer"],
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
        fields = attempt.model_dump(exclude={"at", "refused_because", "via", "decision"})
        request = DecideInput(**fields, decision=attempt.decision)
        receive_signal(state, request, model_call_pending=False, now=now)


def rule_decision(source: Decision, call: ToolCall, *, now: datetime) -> Decision:
    """The decision an `always` rule makes on a call it covers, `signed_by` the rule's key."""
    return Decision(
        call_id=call.call_id,
        decision=source.decision,
        approver=source.approver,
        reason=source.reason,
        via="rule",
        signed_by=source.signed_by,
        arguments_sha256=(
            signed_decisions.call_sha256(call) if source.arguments_sha256 is not None else None
        ),
        at=now,
    )


def standing_rule(state: RunState, call: ToolCall, *, now: datetime) -> Decision | None:
    """The latest explicit `always` decision that covers `call` (see `covers`), if any."""
    since = handoffs.latest(state)  # rules given to an earlier agent decide nothing now
    later = state.items[since + 1 :] if since is not None else state.items
    tools = {
        c.call_id: c.tool for i in later if isinstance(i, AssistantMessage) for c in i.tool_calls
    }
    rules = [
        d
        for d in decided(state).values()
        if d.always and tools.get(d.call_id) == call.tool and covers(state, d, call, now=now)
    ]
    return rules[-1] if rules else None


def covers(state: RunState, rule: Decision, call: ToolCall, *, now: datetime) -> bool:
    """Whether the `always` decision `rule` decides `call` too: same tool, before the
    rule expires, still allowed by the tool's policy (`allow_always`, `approvers`, a
    signature where one is required, the limits), not revoked, and on the same
    arguments or, with `always_when`, on arguments meeting all of its conditions. A
    rule without a digest (a snapshot may carry one) covers nothing new."""
    policy = state.agent.require_tool(call.tool).approval
    if rule.call_id in state.revoked_rules:
        return False
    if rule.expires_at is not None and now >= parse_time(rule.expires_at):
        return False
    if not policy.allow_always or (policy.require_signature and rule.signed_by is None):
        return False
    if policy.approvers is not None and rule.approver not in policy.approvers:
        return False
    if policy.separate_duties and (
        rule.signed_by is None
        or state.started_by is None
        or state.started_by.owner == rule.approver
    ):
        return False  # e.g. the rule came with a snapshot its approver resumed
    arguments = signed_decisions.call_arguments(call)
    if arguments is None or limits_problem(policy, arguments) is not None:
        return False
    if rule.always_when is not None:
        return all(condition_holds(c, arguments) for c in rule.always_when)
    digest = signed_decisions.call_sha256(call)
    return rule.arguments_sha256 is not None and digest == rule.arguments_sha256


def always_rules_on(state: RunState, tools: set[str]) -> list[str]:
    """Call ids of the `always` decisions made on calls of `tools`."""
    tool_of = {c.call_id: c.tool for c in _all_calls(state)}
    return [
        d.call_id for d in decided(state).values() if d.always and tool_of.get(d.call_id) in tools
    ]


def expire(state: RunState, *, now: datetime) -> ErrorInfo | None:
    """Apply each pending call's timeout outcome once its deadline has passed.

    Returns the error that fails the run when a policy says `fail`.
    """
    for call, deadline in deadlines(state):
        if deadline > now:
            continue
        policy = _policy(state, call)
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
    found = []
    for call in pending_calls(state):
        timeout = _policy(state, call).timeout
        asked_at = _asked_at(state, call)
        if asked_at is not None and timeout is not None:
            found.append((call, asked_at + timeout))
    return found


def pending_calls(state: RunState) -> list[ToolCall]:
    """Calls of the latest reply that wait for a decision."""
    reply = _last_reply(state)
    asked = budget.open_request(state)
    extension = [budget.as_call(asked)] if asked is not None else []
    if reply is None or state.status.is_final:
        return extension
    done = decided(state).keys() | _answered(state)
    return [c for c in reply.tool_calls if c.needs_approval and c.call_id not in done] + extension


def pending_approvals(state: RunState) -> list[PendingApproval]:
    """The `get_pending_approvals` view of the pending calls."""
    return [
        PendingApproval(
            call_id=c.call_id,
            tool=c.tool,
            arguments=c.arguments,
            requested_at=asked_at,
            args=signed_decisions.call_arguments(c),
            arguments_sha256=signed_decisions.call_sha256(c),
            run_id=state.run_id,
            execution_id=state.execution_id,
            sensitive=sensitive_names(state, c),
            path=[state.agent.name],
            kind=answers.kind(tool := state.agent.tool(c.tool)),
            answer_schema=tool.answer_schema if tool is not None else None,
            short_id=short_ids.of(state, c),
            reopened_because=reopened_because(state, c.call_id),
        )
        for c in pending_calls(state)
        if (asked_at := _asked_at(state, c)) is not None
    ]


def sensitive_names(state: RunState, call: ToolCall) -> list[str]:
    """The argument names of `call` its tool marks sensitive."""
    if budget.request_for(state, call.call_id) is not None:
        return []
    tool = state.agent.tool(call.tool)
    return tool.sensitive if tool is not None else []


def decided(state: RunState) -> dict[str, Decision]:
    """Every decision by call id."""
    return {i.call_id: i for i in state.items if isinstance(i, Decision)}


def approves(decision: Decision | None, call: ToolCall) -> bool:
    """Whether `decision` decides `call`: it names the call and, when it is bound to
    arguments, to this call's arguments (a second
    call under the same id, from a forged snapshot, is not decided by it)."""
    if decision is None:
        return False
    return decision.arguments_sha256 is None or (
        decision.arguments_sha256 == signed_decisions.call_sha256(call)
    )


def arguments_for(call: ToolCall, decision: Decision | None) -> str:
    """The arguments a call runs with: the approver's edit, else the model's."""
    if decision is not None and decision.arguments is not None:
        return json.dumps(decision.arguments)
    return call.arguments


# --- helpers ---------------------------------------------------------------------


def record(state: RunState, decision: Decision) -> None:
    """Append a decision; a rejection or an answer also answers the call for the model."""
    state.items.append(decision)
    if decision.decision == "answer":
        content = answers.result_text(decision.result)
        state.items.append(ToolResult(call_id=decision.call_id, content=content))
    if decision.decision == "reject" and budget.request_for(state, decision.call_id) is None:
        who = {
            "rule": f"a standing rule of {decision.approver}",
            "timeout": "the approval deadline",
            "evaluator": f"the evaluator {decision.approver.removeprefix('evaluator:')}",
        }.get(decision.via, decision.approver)
        reason = (decision.reason or "").strip()
        because = f": {reason}" if reason else ""
        because += "" if because.endswith((".", "!", "?")) else "."
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
    """The audit entry of a decision signal. A refused one keeps no edited arguments or
    `always_when` (16 KB each): refusals, up to REFUSALS_KEPT of them, must stay small."""
    bulk = {"arguments", "always_when", "metadata"} if refused_because is not None else set()
    return DecisionAttempt(  # an answer's `result` is not kept (it was never taken)
        **request.model_dump(exclude={"decision", "result", *bulk}),
        decision=request.decision,
        at=now,
        refused_because=refused_because,
    )


def _is_repeat(state: RunState, request: DecideInput) -> bool:
    """Exactly the decision already recorded (same approver, reason, `always` and
    arguments): idempotent. Anything else on a decided call is refused, so a
    changed reason or `always` is never dropped without a trace."""
    try:
        earlier = decided(state).get(short_ids.resolve(state, request.call_id))
    except DecisionRefused:
        return False
    return (
        earlier is not None
        and earlier.via in ("signal", "update")
        and (earlier.decision, earlier.approver, earlier.reason, earlier.always, earlier.arguments)
        == (request.decision, request.approver, request.reason, request.always, request.arguments)
        and (earlier.decision != "answer" or earlier.result == request.result)
    )


def _limited(
    state: RunState, policy: ApprovalPolicy, asked: BudgetRequest | None
) -> ApprovalPolicy:
    """`policy`, with only the limits on the budget `asked` extends (`budget.limits`)."""
    if asked is None:
        return policy
    return policy.model_copy(update={"limits": budget.limits(state, asked.kind)})


def _policy(state: RunState, call: ToolCall) -> ApprovalPolicy:
    """The policy deciding `call`: its tool's, or the agent's for budget extensions."""
    if budget.request_for(state, call.call_id) is not None:
        return state.agent.budget_approval
    return state.agent.require_tool(call.tool).approval


def _asked_at(state: RunState, call: ToolCall) -> datetime | None:
    """When `call` started to wait: its reply's time, or its budget request's."""
    asked = budget.request_for(state, call.call_id)
    if asked is not None:
        return asked.at
    reply = _last_reply(state)
    return reply.at if reply is not None else None


def _last_reply(state: RunState) -> AssistantMessage | None:
    return next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)


def all_calls(state: RunState) -> list[ToolCall]:
    """Every call the model proposed in the run, oldest first."""
    return _all_calls(state)


def _all_calls(state: RunState) -> list[ToolCall]:
    return [c for i in state.items if isinstance(i, AssistantMessage) for c in i.tool_calls]


def _find_call(state: RunState, call_id: str) -> tuple[int, ToolCall] | None:
    asked = budget.request_for(state, call_id)
    if asked is not None:
        return state.turn, budget.as_call(asked)
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


def signed_approval_keys(state: RunState, call_id: str) -> list[str]:
    """`KEY_ID PUBLIC_KEY` (as frozen) of the keys that signed `call_id`'s approvals, a
    rule's too: its worker checks them against the keys it trusts now (ToolRequest)."""
    frozen = {k.key_id: k.public_key for k in state.agent.approver_keys}
    signed = {
        i.signed_by
        for i in state.items
        if isinstance(i, Decision)
        and i.call_id == call_id
        and i.decision == "approve"
        and i.signed_by is not None
    }
    return sorted(f"{key} {frozen.get(key, '?')}" for key in signed)[:16]
