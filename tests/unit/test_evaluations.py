"""What an evaluator's answer does to a run (`workflows.evaluations`), without Temporal:
approve within the limits decides, above them escalates, reject decides, a late answer
after a person's decision is ignored; a signed policy is never given to it; the UI's
details show the latest evaluation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from durable_agents.workflows import decisions, details, evaluations, loop
from durable_agents.workflows.agent_spec import (
    AgentSpec,
    ApprovalCondition,
    ApprovalPolicy,
    EvaluatorRef,
    ModelPrice,
    ToolSpec,
)
from durable_agents.workflows.check_payloads import EvaluationResult
from durable_agents.workflows.payloads import AgentInput, DecideInput, ModelReply, ModelToolCall
from durable_agents.workflows.run_items import Usage
from durable_agents.workflows.state import RunState

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = {"type": "object", "properties": {}}


def run(amount: float, **policy) -> RunState:
    approval = ApprovalPolicy(
        evaluator=EvaluatorRef(kind="function", name="screen"),
        auto_approve_within=[ApprovalCondition(field="amount", op="<=", value=100)],
        **policy,
    )
    spec = AgentSpec(
        name="bot",
        instructions="-",
        model="m",
        price=ModelPrice(input=1.0, output=2.0),
        tools=[
            ToolSpec(
                name="refund", description="", parameters=SCHEMA, needs_approval=True,
                approval=approval,
            )
        ],
    )  # fmt: skip
    state = loop.new_state(spec, AgentInput(agent="bot", input="hi"), run_id="r", now=T0)
    call = ModelToolCall(call_id="c1", tool="refund", arguments=f'{{"amount": {amount}}}')
    loop.record_model_reply(state, ModelReply(tool_calls=[call]), now=T0)
    return state


def answer(state: RunState, verdict: str, **kw) -> str:
    [call] = evaluations.due(state, set())
    entry = evaluations.record(
        state, call, EvaluationResult(verdict=verdict, reason="because", **kw), now=T0
    )
    return entry.outcome


def test_an_approval_within_the_limits_decides_the_call():
    state = run(50)
    assert answer(state, "approve") == "decided"
    decision = decisions.decided(state)["c1"]
    assert (decision.via, decision.approver, decision.reason) == (
        "evaluator",
        "evaluator:screen",
        "because",
    )
    assert decision.arguments_sha256 is not None  # bound to the arguments it saw
    assert isinstance(loop.next_step(state), loop.RunTools)
    assert evaluations.due(state, set()) == []  # asked once


def test_an_approval_above_the_limits_leaves_the_call_to_a_person():
    state = run(500)
    assert answer(state, "approve") == "escalated"
    assert "c1" not in decisions.decided(state)
    assert "amount must be <= 100 (is 500" in state.evaluations[0].reason
    assert isinstance(loop.next_step(state), loop.AwaitDecisions)


def test_a_rejection_decides_and_the_model_is_told_why():
    state = run(50)
    assert answer(state, "reject") == "decided"
    result = state.items[-1]
    assert (
        result.content
        == "Tool call rejected by the evaluator screen: because. Do not retry it unchanged."
    )


def test_a_late_answer_after_a_person_is_ignored():
    state = run(50)
    [call] = evaluations.due(state, set())
    decisions.apply(
        state, DecideInput(call_id="c1", decision="reject", approver="ann"), via="update", now=T0
    )
    entry = evaluations.record(state, call, EvaluationResult(verdict="approve"), now=T0)
    assert (entry.outcome, entry.reason) == ("ignored", "approve; ann decided first")
    assert decisions.decided(state)["c1"].approver == "ann"


def test_a_signed_policy_is_never_given_to_the_evaluator():
    state = run(50, require_signature=True)
    [call] = evaluations.due(state, set())
    why = evaluations.prepare(state, call)
    assert isinstance(why, str) and "requires a signed decision" in why
    evaluations.escalate(state, call, why, now=T0)
    assert state.evaluations[0].outcome == "escalated"


def test_an_agent_evaluators_tokens_are_the_runs_and_priced():
    state = run(50)
    before = state.usage
    usage = Usage(model_calls=1, input_tokens=1_000_000, output_tokens=0, total_tokens=1_000_000)
    answer(state, "escalate", usage=usage)
    assert state.usage.total_tokens == before.total_tokens + 1_000_000
    assert state.usage.cost == before.cost + 1.0  # at the run's model price (same model)


def test_the_details_show_the_latest_evaluation():
    state = run(500)
    answer(state, "approve")
    text = details.render(state)
    assert "**Last evaluation**: evaluator `screen` on call `c1`: escalated (said approve)" in text


def test_a_timed_out_evaluator_escalates():
    state = run(50, evaluator_timeout=timedelta(seconds=5))
    [call] = evaluations.due(state, set())
    entry = evaluations.record(state, call, None, failure="did not answer", now=T0)
    assert (entry.verdict, entry.outcome, entry.reason) == (None, "escalated", "did not answer")
