"""Approval decisions and policies, without Temporal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import decisions, loop
from durable_agents.workflows.agent_spec import (
    AgentSpec,
    ApprovalCondition,
    ApprovalPolicy,
    ToolSpec,
)
from durable_agents.workflows.approval_policy import arguments_problem, requires_decision
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    ToolOutcome,
)
from durable_agents.workflows.run_items import Decision, ToolResult
from durable_agents.workflows.state import RunState, RunStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ALWAYS = ApprovalPolicy()
REFUND_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["order", "amount"],
    "properties": {
        "order": {"type": "string", "minLength": 1},
        "amount": {"type": "number", "exclusiveMinimum": 0},
        "mode": {"anyOf": [{"enum": ["card", "cash"]}, {"type": "null"}]},
    },
}


def spec(policy: ApprovalPolicy = ALWAYS) -> AgentSpec:
    return AgentSpec(
        name="bot",
        instructions="",
        model="m",
        tools=[
            ToolSpec(
                name="refund",
                description="",
                parameters=REFUND_SCHEMA,
                needs_approval=True,
                approval=policy,
            ),
            ToolSpec(name="lookup", description="", parameters={"type": "object"}),
        ],
    )


def run_with(*calls: tuple[str, str, str], policy: ApprovalPolicy = ALWAYS) -> RunState:
    state = loop.new_state(spec(policy), AgentInput(agent="bot", input="hi"), run_id="r", now=T0)
    propose(state, *calls)
    return state


def propose(state: RunState, *calls: tuple[str, str, str], now: datetime = T0) -> None:
    reply = ModelReply(
        tool_calls=[ModelToolCall(call_id=c, tool=t, arguments=a) for c, t, a in calls]
    )
    loop.record_model_reply(state, reply, now=now)


def ask(call_id: str, decision: str = "approve", approver: str = "ann", **kw) -> DecideInput:
    return DecideInput(call_id=call_id, decision=decision, approver=approver, **kw)


def signal(state: RunState, request: DecideInput, *, pending_model: bool = False):
    return decisions.receive_signal(state, request, model_call_pending=pending_model, now=T0)


REFUND = '{"order": "A1", "amount": 150}'
SMALL_REFUND = '{"order": "A1", "amount": 20}'
ABOVE_100 = ApprovalPolicy(when=[ApprovalCondition(field="amount", op=">", value=100)])


def test_conditional_policy_asks_only_when_the_rule_holds():
    state = run_with(("big", "refund", REFUND), ("small", "refund", SMALL_REFUND), policy=ABOVE_100)
    assert [c.call_id for c in decisions.pending_calls(state)] == ["big"]
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools) and [c.call_id for c in step.calls] == ["small"]


@pytest.mark.parametrize("arguments", [{}, {"amount": "lots"}])
def test_policy_fails_closed_when_a_condition_cannot_be_evaluated(arguments):
    assert requires_decision(ABOVE_100, arguments)


def test_approver_outside_the_allowed_list_is_refused_and_audited():
    state = run_with(("c1", "refund", REFUND), policy=ApprovalPolicy(approvers=["boss"]))
    with pytest.raises(DecisionRefused, match="ann may not decide refund calls"):
        decisions.check(state, ask("c1"), now=T0)
    assert signal(state, ask("c1")) is None
    [refused] = state.refused_decisions
    assert (refused.approver, refused.refused_because) == (
        "ann",
        "ann may not decide refund calls (allowed: boss)",
    )
    assert signal(state, ask("c1", approver="boss")).approver == "boss"


def test_approval_with_edited_arguments_runs_with_them_and_keeps_the_original():
    state = run_with(("c1", "refund", REFUND))
    decisions.apply(state, ask("c1", arguments={"order": "A1", "amount": 60}), via="update", now=T0)
    [call] = loop.next_step(state).calls
    assert call.arguments == '{"order": "A1", "amount": 60}'
    assert loop.last_reply(state).tool_calls[0].arguments == REFUND  # the model's, kept


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"order": "A1"}, "missing required argument(s): amount"),
        ({"order": "A1", "amount": 5, "tip": 1}, "unknown argument(s): tip"),
        ({"order": "A1", "amount": "5"}, "amount: expected number, got str"),
        ({"order": "A1", "amount": 0}, "amount: must be greater than 0"),
        ({"order": "", "amount": 1}, "order: must have at least 1 characters"),
        ({"order": "A1", "amount": 1, "mode": "gold"}, "mode: must be one of ['card', 'cash']"),
    ],
)
def test_edited_arguments_that_do_not_fit_the_tool_are_refused(arguments, problem):
    state = run_with(("c1", "refund", REFUND))
    with pytest.raises(DecisionRefused, match="edited arguments are not valid"):
        decisions.check(state, ask("c1", arguments=arguments), now=T0)
    assert arguments_problem(spec().tool("refund"), arguments) == problem


def test_rejection_cannot_carry_edited_arguments():
    state = run_with(("c1", "refund", REFUND))
    with pytest.raises(DecisionRefused, match="only an approval"):
        decisions.check(state, ask("c1", "reject", arguments={"order": "A1", "amount": 1}), now=T0)


def test_rejection_for_a_call_not_yet_proposed_is_held_then_applied():
    state = loop.new_state(spec(), AgentInput(agent="bot", input="hi"), run_id="r", now=T0)
    assert signal(state, ask("c1", "reject", reason="not today"), pending_model=True) is None
    assert [h.call_id for h in state.held_decisions] == ["c1"]
    propose(state, ("c1", "refund", REFUND))
    assert state.held_decisions == []
    assert decisions.decided(state)["c1"].reason == "not today"


def test_held_signal_whose_call_never_comes_is_refused_after_the_reply():
    state = loop.new_state(spec(), AgentInput(agent="bot", input="hi"), run_id="r", now=T0)
    signal(state, ask("c9", "reject"), pending_model=True)
    propose(state, ("c1", "refund", REFUND))
    assert state.held_decisions == []
    assert state.refused_decisions[0].refused_because == "no tool call c9 in run r"


def test_repeated_identical_signal_is_recorded_once_and_not_refused():
    state = run_with(("c1", "refund", REFUND))
    signal(state, ask("c1"))
    signal(state, ask("c1"))
    assert len([i for i in state.items if isinstance(i, Decision)]) == 1
    assert state.refused_decisions == []


def test_second_approver_racing_is_refused_with_who_won():
    state = run_with(("c1", "refund", REFUND))
    signal(state, ask("c1", approver="ann"))
    signal(state, ask("c1", "reject", approver="bob"))
    assert decisions.decided(state)["c1"].approver == "ann"
    assert state.refused_decisions[0].refused_because == (
        "tool call c1 is already decided (approve by ann)"
    )


def test_decision_for_a_call_of_an_earlier_turn_is_refused():
    state = run_with(("c1", "lookup", "{}"))
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c1", content="ok")], now=T0)
    propose(state, ("c2", "refund", REFUND))
    signal(state, ask("c1"))
    assert "c1 (turn 1) is already resolved" in state.refused_decisions[0].refused_because


def test_approval_timeout_rejects_the_call_with_a_reason_for_the_model():
    policy = ApprovalPolicy(timeout=timedelta(hours=1))
    state = run_with(("c1", "refund", REFUND), policy=policy)
    [(call, deadline)] = decisions.deadlines(state)
    assert deadline == T0 + timedelta(hours=1)
    assert decisions.expire(state, now=T0 + timedelta(minutes=59)) is None
    assert decisions.pending_calls(state) == [call]
    assert decisions.expire(state, now=deadline) is None
    decision = decisions.decided(state)["c1"]
    assert (decision.decision, decision.via, decision.reason) == (
        "reject",
        "timeout",
        "no decision within 1 h",
    )
    result = next(i for i in state.items if isinstance(i, ToolResult))
    assert "rejected by the approval deadline: no decision within 1 h" in result.content


def test_approval_timeout_can_fail_the_run_instead():
    policy = ApprovalPolicy(timeout=timedelta(minutes=5), on_timeout="fail")
    state = run_with(("c1", "refund", REFUND), policy=policy)
    error = decisions.expire(state, now=T0 + timedelta(minutes=5))
    assert (error.type, error.message) == (
        "ApprovalTimeout",
        "no decision on refund call c1 within 5 min",
    )


def test_decision_after_the_timeout_fired_is_refused():
    state = run_with(("c1", "refund", REFUND), policy=ApprovalPolicy(timeout=timedelta(seconds=30)))
    decisions.expire(state, now=T0 + timedelta(seconds=30))
    signal(state, ask("c1"))
    assert "already decided (reject by system)" in state.refused_decisions[0].refused_because


def test_signal_after_the_run_ended_is_refused_not_raised():
    state = run_with(("c1", "refund", REFUND))
    loop.finish(state, RunStatus.CANCELLED, now=T0)
    assert signal(state, ask("c1")) is None
    assert "has ended (cancelled)" in state.refused_decisions[0].refused_because


def test_repeat_that_changes_always_or_reason_is_refused_not_dropped():
    state = run_with(("c1", "refund", REFUND))
    signal(state, ask("c1"))
    signal(state, ask("c1", always=True))
    signal(state, ask("c1", reason="changed my mind"))
    assert decisions.decided(state)["c1"].always is False
    assert [r.refused_because for r in state.refused_decisions] == [
        "tool call c1 is already decided (approve by ann)"
    ] * 2


def test_decision_applied_in_the_task_of_its_deadline_wins_over_the_timeout():
    """Signals are applied before timers in one workflow task: `expire` then finds
    the call decided and does nothing (for `fail` policies too)."""
    policy = ApprovalPolicy(timeout=timedelta(seconds=30), on_timeout="fail")
    state = run_with(("c1", "refund", REFUND), policy=policy)
    signal(state, ask("c1"))
    assert decisions.expire(state, now=T0 + timedelta(seconds=30)) is None
    assert decisions.decided(state)["c1"].approver == "ann"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"call_id": "c1", "approver": "go", "always": "true"}, ("c1", "go")),
        ({"call_id": 7, "approver": ["x"]}, ("", "")),
        ("yes", ("", "")),
    ],
)
def test_malformed_signal_is_audited_with_what_can_be_read_of_it(data, expected):
    attempt = decisions.malformed_attempt("approve", data, "always: bad", now=T0)
    assert (attempt.call_id, attempt.approver) == expected
    assert attempt.refused_because == "invalid approve payload: always: bad"


@pytest.mark.parametrize(
    "reason, told",
    [
        ("too expensive", "Tool call rejected by ann: too expensive. Do not retry it unchanged."),
        ("no!", "Tool call rejected by ann: no! Do not retry it unchanged."),
        (
            "ask Bob first.  ",
            "Tool call rejected by ann: ask Bob first. Do not retry it unchanged.",
        ),
        (None, "Tool call rejected by ann. Do not retry it unchanged."),
        ("   ", "Tool call rejected by ann. Do not retry it unchanged."),
    ],
)
def test_a_rejection_reads_as_sentences_for_the_model(reason, told):
    state = run_with(("c1", "refund", REFUND))
    request = DecideInput(call_id="c1", decision="reject", approver="ann", reason=reason)
    decisions.apply(state, request, via="update", now=T0)
    [result] = [i for i in state.items if isinstance(i, ToolResult)]
    assert result.content == told


class _Counted(dict):
    """A schema that counts how often its `anyOf` is read (each read: one check of it)."""

    reads = 0

    def get(self, key, default=None):
        if key == "anyOf":
            _Counted.reads += 1
        return super().get(key, default)


def test_an_any_of_that_refers_to_itself_is_checked_once_per_depth_not_once_per_path():
    # An MCP server's schema: N is "one of N, N, or an integer". Each option was checked
    # along every path, 3^16 checks 16 deep (a workflow task past its deadline for good,
    # from one edited approval); now once per depth, with the same answer.
    looping = _Counted(anyOf=[{"$ref": "#/$defs/N"}] * 3 + [{"type": "integer"}])
    schema = {"type": "object", "properties": {"note": {"$ref": "#/$defs/N"}}, "$defs": {}}
    schema["$defs"]["N"] = looping
    tool = ToolSpec(name="update", description="", parameters={"type": "object"})
    tool.parameters = schema  # as listed (ToolSpec copies a dict it validates)
    _Counted.reads = 0
    assert arguments_problem(tool, {"note": "fixed"}) is None  # 16 deep, N checks nothing
    assert arguments_problem(tool, {"note": 3}) is None
    assert _Counted.reads <= 2 * 17
    ints = _Counted(anyOf=[{"type": "integer"}, {"type": "integer"}])
    tool.parameters = {"type": "object", "properties": {"n": ints}}
    assert arguments_problem(tool, {"n": "x"}) == "n: expected integer, got str"
