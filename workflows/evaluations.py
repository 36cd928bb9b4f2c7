"""An approval policy's evaluator (`ApprovalPolicy.evaluator`), decided as pure
functions of RunState: which waiting calls it is asked about, the request (an agent's
model call held to the run's budgets first), and what its answer does.

It approves only within the policy's `auto_approve_within`; it may reject; anything
else (escalate, a failure, a timeout, an approval outside the limits) leaves the call
to a person. A person who decided first wins: the late verdict is recorded as ignored.
A policy that requires a signature or separates duties is never given to it: such a
call escalates at once, recorded so. Every verdict lands in `RunState.evaluations`;
one that decides is also a `Decision` with `via: "evaluator"`.
"""

from __future__ import annotations

import json
from datetime import datetime

from durable_agents.workflows import budget, decisions, signed_decisions
from durable_agents.workflows.agent_spec import ApprovalPolicy, EvaluatorRef, ModelSettings
from durable_agents.workflows.approval_policy import limits_problem
from durable_agents.workflows.audit import Evaluation
from durable_agents.workflows.check_payloads import EvaluationRequest, EvaluationResult
from durable_agents.workflows.payloads import ModelRequest
from durable_agents.workflows.run_items import Decision, ToolCall, Usage, UserMessage
from durable_agents.workflows.state import RunState

MAX_OUTPUT_TOKENS = 400
"""The most an agent evaluator's reply may use: its verdict and a short reason."""
REASON_CHARS = 2_000

VERDICT_FORMAT = (
    'Answer with one JSON object and nothing else: {"decision": "approve" | "reject" | '
    '"escalate", "reason": "<one sentence>"}. Escalate when unsure: a person then decides.'
)


def policy_of(state: RunState, call: ToolCall) -> ApprovalPolicy | None:
    """The policy of `call`'s tool, if the agent has the tool."""
    tool = state.agent.tool(call.tool)
    return tool.approval if tool is not None and tool.needs_approval else None


def due(state: RunState, running: set[str]) -> list[ToolCall]:
    """Waiting calls whose policy names an evaluator that has not been asked (nor is
    being asked: `running`)."""
    asked = {e.call_id for e in state.evaluations} | running
    return [
        c
        for c in decisions.pending_calls(state)
        if c.call_id not in asked and (p := policy_of(state, c)) is not None and p.evaluator
    ]


def not_asked(policy: ApprovalPolicy) -> str | None:
    """Why the evaluator is not asked at all (the policy wants a person's signed word)."""
    if policy.require_signature or policy.separate_duties:
        return (
            "the policy requires a signed decision (or separates duties): only a person "
            "decides, the evaluator is not asked"
        )
    return None


def prepare(state: RunState, call: ToolCall) -> EvaluationRequest | str:
    """The request for `call`'s evaluator, or why it is not asked (escalated at once)."""
    policy = policy_of(state, call)
    assert policy is not None and policy.evaluator is not None
    why = not_asked(policy)
    if why is not None:
        return why
    ref = policy.evaluator
    model_request = None
    if ref.kind == "agent":
        model_request = _model_request(state, ref, call, policy)
        over = _over_budget(state, ref, model_request)
        if over is not None:
            return over
    return EvaluationRequest(
        run_id=state.run_id,
        agent=state.agent.name,
        tool=call.tool,
        call_id=call.call_id,
        arguments=call.arguments,
        context=state.context,
        evaluator=ref,
        model_request=model_request,
    )


def _model_request(
    state: RunState, ref: EvaluatorRef, call: ToolCall, policy: ApprovalPolicy
) -> ModelRequest:
    within = [c.model_dump(mode="json") for c in policy.auto_approve_within or []]
    prompt = (
        f"Agent {state.agent.name!r} wants to call the tool {call.tool!r} with these "
        f"arguments:\n{call.arguments}\n\nYou may approve only calls whose arguments meet "
        f"all of these conditions: {json.dumps(within)} (none: never approve).\n"
        f"{VERDICT_FORMAT}"
    )
    return ModelRequest(
        model=ref.model or state.agent.model,
        instructions=ref.instructions or "",
        items=[UserMessage(content=prompt)],
        tools=[],
        turn=state.turn,
        settings=ModelSettings(max_output_tokens=MAX_OUTPUT_TOKENS),
        api=ref.model_api,
    )


def _over_budget(state: RunState, ref: EvaluatorRef, request: ModelRequest) -> str | None:
    """Why the agent's model call could pass the run's token or cost budget, or None."""
    sent = len((request.instructions + "".join(_texts(request))).encode()) + 64
    bound = sent + MAX_OUTPUT_TOKENS
    used = budget.tokens_used(state)
    if state.token_budget is not None and used + bound > state.token_budget:
        return (
            f"the evaluator's model call could use up to {bound:,} tokens; the run has used "
            f"{used:,} of its budget of {state.token_budget:,}: a person decides"
        )
    price = ref.price or (state.agent.price if ref.model in (None, state.agent.model) else None)
    if state.cost_budget is not None and price is not None:
        cost = (sent * price.input + MAX_OUTPUT_TOKENS * price.output) / 1_000_000
        if state.usage.cost + cost > state.cost_budget:
            return (
                f"the evaluator's model call could cost up to {cost:.6f} {price.currency}; "
                f"the run has spent {state.usage.cost:.6f} of its budget of "
                f"{state.cost_budget:g}: a person decides"
            )
    return None


def _texts(request: ModelRequest) -> list[str]:
    return [i.content for i in request.items if isinstance(i, UserMessage)]


def record(
    state: RunState,
    call: ToolCall,
    result: EvaluationResult | None,
    *,
    failure: str | None = None,
    now: datetime,
) -> Evaluation:
    """Record what the evaluator of `call` said (`result`), or why it said nothing
    (`failure`); decide the call where it may."""
    policy = policy_of(state, call)
    ref = policy.evaluator if policy is not None else None
    name, kind = (ref.name, ref.kind) if ref is not None else ("?", "function")
    usage = result.usage if result is not None else None
    if usage is not None:
        usage = _count_usage(state, ref, usage)
    verdict = result.verdict if result is not None else None
    reason = _cut(result.reason if result is not None else failure)
    outcome, why = _outcome(state, call, policy, verdict)
    entry = Evaluation(
        call_id=call.call_id,
        evaluator=name,
        kind=kind,
        verdict=verdict,
        reason=reason if why is None else _cut(f"{reason or verdict}; {why}"),
        outcome=outcome,
        usage=usage,
        at=now,
    )
    state.evaluations.append(entry)
    if outcome == "decided" and verdict in ("approve", "reject"):
        decisions.record(
            state,
            Decision(
                call_id=call.call_id,
                decision=verdict,
                approver=f"evaluator:{name}"[:200],
                reason=reason,
                via="evaluator",
                arguments_sha256=signed_decisions.call_sha256(call),
                at=now,
            ),
        )
    state.updated_at = now
    return entry


def escalate(state: RunState, call: ToolCall, why: str, *, now: datetime) -> Evaluation:
    """Record that the evaluator of `call` is not asked, and why: a person decides."""
    return record(state, call, None, failure=why, now=now)


def waiting(state: RunState, call: ToolCall) -> bool:
    """`call` still waits for a decision."""
    return call.call_id in {c.call_id for c in decisions.pending_calls(state)}


def settled_by(state: RunState, call: ToolCall) -> str:
    """Who decided `call` before its evaluator answered, in words."""
    earlier = decisions.decided(state).get(call.call_id)
    return f"{earlier.approver} decided first" if earlier else "the call was answered first"


def _outcome(
    state: RunState, call: ToolCall, policy: ApprovalPolicy | None, verdict: str | None
) -> tuple[str, str | None]:
    """(`decided` | `escalated` | `ignored`, why the verdict did not decide)."""
    if not waiting(state, call):
        return "ignored", settled_by(state, call)
    if verdict == "reject":
        return "decided", None
    if verdict != "approve" or policy is None:
        return "escalated", None
    within = policy.auto_approve_within
    if within is None:
        return "escalated", "the policy lets the evaluator approve nothing (auto_approve_within)"
    arguments = signed_decisions.call_arguments(call)
    limited = policy.model_copy(update={"limits": within})
    sensitive = decisions.sensitive_names(state, call)
    problem = (
        "the arguments are not a JSON object"
        if arguments is None
        else limits_problem(limited, arguments, sensitive=sensitive)
    )
    if problem is not None:
        return "escalated", f"outside auto_approve_within: {problem}"
    return "decided", None


def _count_usage(state: RunState, ref: EvaluatorRef | None, usage: Usage) -> Usage:
    """The evaluator's model call, priced and counted as the run's own; its usage."""
    price = ref.price if ref is not None else None
    if price is None and ref is not None and ref.model in (None, state.agent.model):
        price = state.agent.price
    if price is not None:
        usage = usage.model_copy(update={"cost": price.cost(usage)})
    state.usage = state.usage.plus(usage)
    return usage


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= REASON_CHARS:
        return text
    return text[: REASON_CHARS - 1] + "…"
