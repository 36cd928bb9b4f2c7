"""The pure loop, without Temporal: state + outcome -> next step."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import decisions, loop, proposed_calls
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    ToolOutcome,
)
from durable_agents.workflows.run_items import Decision, ToolCall, ToolResult, Usage, UserMessage
from durable_agents.workflows.state import ErrorInfo, RunState, RunStatus
from pydantic import ValidationError

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = {"type": "object", "properties": {}}
SPEC = AgentSpec(
    name="bot",
    instructions="be brief",
    model="m",
    max_turns=3,
    tools=[
        ToolSpec(name="lookup", description="", parameters=SCHEMA),
        ToolSpec(name="refund", description="", parameters=SCHEMA, needs_approval=True),
    ],
)


def fresh(**overrides) -> RunState:
    agent_input = AgentInput(agent="bot", input="hello", **overrides)
    return loop.new_state(SPEC, agent_input, run_id="run-1", now=T0)


def reply(*calls: tuple[str, str, str], content: str | None = None) -> ModelReply:
    return ModelReply(
        content=content,
        tool_calls=[ModelToolCall(call_id=c, tool=t, arguments=a) for c, t, a in calls],
        usage=Usage(model_calls=1, input_tokens=10, output_tokens=5, total_tokens=15),
    )


def decide(call_id: str, decision: str, **kw) -> DecideInput:
    return DecideInput(call_id=call_id, decision=decision, approver="ann", **kw)


def results(state: RunState) -> dict[str, ToolResult]:
    return {i.call_id: i for i in state.items if isinstance(i, ToolResult)}


def test_fresh_run_asks_the_model_with_the_user_input():
    step = loop.next_step(fresh())
    assert isinstance(step, loop.CallModel)
    assert step.request.turn == 1
    assert step.request.items[0].content == "hello"
    assert [t.name for t in step.request.tools] == ["lookup", "refund"]


def test_plain_answer_completes_with_final_output_and_usage():
    state = fresh()
    loop.record_model_reply(state, reply(content="hi there"), now=T0)
    assert loop.next_step(state) == loop.Finish(RunStatus.COMPLETED)
    assert state.final_output == "hi there"
    assert state.usage.total_tokens == 15
    assert state.turn == 1


def test_user_message_after_a_final_answer_asks_the_model_again():
    state = fresh()
    loop.record_model_reply(state, reply(content="first answer"), now=T0)
    state.items.append(UserMessage(content="and another thing"))
    step = loop.next_step(state)
    assert isinstance(step, loop.CallModel) and step.request.turn == 2


def test_calls_without_approval_run_at_once_and_then_the_model_is_asked_again():
    state = fresh()
    loop.record_model_reply(
        state, reply(("c1", "lookup", "{}"), ("c2", "lookup", '{"x":1}')), now=T0
    )
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools)
    assert [c.call_id for c in step.calls] == ["c1", "c2"]
    loop.record_tool_outcomes(
        state,
        [ToolOutcome(call_id="c1", content="a"), ToolOutcome(call_id="c2", content="b")],
        now=T0,
    )
    step = loop.next_step(state)
    assert isinstance(step, loop.CallModel)
    assert step.request.turn == 2


def test_call_needing_approval_waits_while_others_run():
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", "{}"), ("c2", "lookup", "{}")), now=T0)
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools) and [c.call_id for c in step.calls] == ["c2"]
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c2", content="ok")], now=T0)
    assert loop.next_step(state) == loop.AwaitDecisions(("c1",))
    assert loop.status_for(loop.next_step(state)) is RunStatus.AWAITING_APPROVAL
    [pending] = decisions.pending_approvals(state)
    assert (pending.call_id, pending.tool, pending.requested_at) == ("c1", "refund", T0)


def test_approved_call_runs_and_decision_is_recorded_with_approver_and_time():
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", '{"amount": 5}')), now=T0)
    later = T0 + timedelta(hours=3)
    recorded = decisions.apply(
        state, decide("c1", "approve", reason="fine"), via="update", now=later
    )
    assert (recorded.approver, recorded.reason, recorded.at) == ("ann", "fine", later)
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools) and step.calls[0].call_id == "c1"
    assert decisions.pending_approvals(state) == []


def test_rejected_call_returns_reason_to_model_and_never_runs():
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", "{}")), now=T0)
    decisions.apply(state, decide("c1", "reject", reason="too much"), via="update", now=T0)
    result = results(state)["c1"]
    assert result.is_error
    assert "rejected by ann: too much" in result.content
    assert isinstance(loop.next_step(state), loop.CallModel)


def test_always_approve_decides_later_calls_of_the_same_tool_by_rule():
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", "{}")), now=T0)
    decisions.apply(state, decide("c1", "approve", always=True), via="update", now=T0)
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c1", content="done")], now=T0)
    loop.record_model_reply(state, reply(("c2", "refund", "{}")), now=T0)
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools) and step.calls[0].call_id == "c2"
    rule_decision = [i for i in state.items if isinstance(i, Decision) and i.call_id == "c2"]
    assert rule_decision[0].via == "rule" and rule_decision[0].approver == "ann"


def test_always_reject_also_settles_other_pending_calls_of_that_tool():
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", "{}"), ("c2", "refund", "{}")), now=T0)
    decisions.apply(state, decide("c1", "reject", always=True), via="update", now=T0)
    assert set(results(state)) == {"c1", "c2"}
    assert "standing rule of ann" in results(state)["c2"].content


def test_unknown_tool_and_malformed_arguments_go_back_to_the_model():
    state = fresh()
    loop.record_model_reply(
        state,
        reply(("c1", "nope", "{}"), ("c2", "lookup", "{not json"), ("c3", "lookup", "[1]")),
        now=T0,
    )
    found = results(state)
    assert "unknown tool 'nope'" in found["c1"].content and "lookup, refund" in found["c1"].content
    assert "not valid JSON" in found["c2"].content
    assert "must be a JSON object" in found["c3"].content
    assert all(r.is_error for r in found.values())
    assert isinstance(loop.next_step(state), loop.CallModel)


def test_a_reply_runs_at_most_its_share_of_calls_and_no_lone_surrogate():
    many = [(f"c{n}", "refund" if n % 2 else "lookup", "{}") for n in range(70)]
    odd = ("s1", "refund", '{"to": "\\ud800"}')  # JSON lets an escaped one through
    state = fresh()
    loop.record_model_reply(state, reply(odd, *many), now=T0)
    found = results(state)
    assert set(found) == {"s1", *(f"c{n}" for n in range(63, 70))}
    assert "hold an escaped lone surrogate" in found["s1"].content
    assert found["c69"].content == (
        "Error: a reply may make at most 64 tool calls; this one (call 71 of 71) was not "
        "run. Make fewer at once."
    )
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools) and len(step.calls) == 32  # the lookups of 64
    waiting = [p.call_id for p in decisions.pending_approvals(state)]
    assert len(waiting) == 31 and "c63" not in waiting and "s1" not in waiting


def test_run_ends_as_max_turns_exceeded_instead_of_calling_the_model_again():
    state = fresh(max_turns=1)
    loop.record_model_reply(state, reply(("c1", "lookup", "{}")), now=T0)
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c1", content="x")], now=T0)
    assert loop.next_step(state) == loop.Finish(RunStatus.MAX_TURNS_EXCEEDED)


@pytest.mark.parametrize(
    ("call_id", "message"),
    [
        ("zzz", "no tool call zzz in run run-1"),
        ("c2", "needs no approval"),
    ],
)
def test_decision_on_a_call_that_is_not_pending_is_refused(call_id, message):
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", "{}"), ("c2", "lookup", "{}")), now=T0)
    with pytest.raises(DecisionRefused, match=message):
        decisions.apply(state, decide(call_id, "approve"), via="update", now=T0)


def test_second_decision_on_the_same_call_is_refused():
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", "{}")), now=T0)
    decisions.apply(state, decide("c1", "reject"), via="update", now=T0)
    with pytest.raises(DecisionRefused, match="already decided"):
        decisions.apply(state, decide("c1", "approve"), via="update", now=T0)


def test_decision_after_the_run_ended_is_refused():
    state = fresh()
    loop.fail(state, ErrorInfo(type="X", message="boom"), now=T0)
    with pytest.raises(DecisionRefused, match="has ended"):
        decisions.check(state, decide("c1", "approve"), now=T0)
    assert loop.next_step(state) == loop.Finish(RunStatus.FAILED)


def test_status_view_counts_pending_approvals():
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", "{}"), ("c2", "refund", "{}")), now=T0)
    view = loop.status_view(state)
    assert (view.agent, view.turn, view.pending_approvals) == ("bot", 1, 2)


def test_state_round_trips_through_json_exactly():
    state = fresh(context={"user": {"id": 7, "tags": ["a"]}})
    loop.record_model_reply(state, reply(("c1", "refund", '{"a":1}'), content="x"), now=T0)
    decisions.apply(state, decide("c1", "reject", reason="no"), via="update", now=T0)
    text = state.model_dump_json()
    again = RunState.model_validate_json(text)
    assert again == state
    assert again.model_dump_json() == text
    assert RunState.model_validate(json.loads(text)) == state


@pytest.mark.parametrize(
    ("field", "value"),
    [("decision", "maybe"), ("always", "yes"), ("approver", 7), ("approver", ""), ("extra", 1)],
)
def test_tampered_decision_does_not_load(field, value):
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "refund", "{}")), now=T0)
    decisions.apply(state, decide("c1", "approve"), via="update", now=T0)
    data = state.model_dump(mode="json")
    data["items"][-1][field] = value
    with pytest.raises(ValidationError) as caught:
        RunState.model_validate(data)
    assert any(field in err["loc"] for err in caught.value.errors())


def test_empty_or_reused_call_ids_are_made_unique_in_the_run():
    state = fresh()
    loop.record_model_reply(state, reply(("c1", "lookup", "{}")), now=T0)
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c1", content="one")], now=T0)
    again = reply(("c1", "lookup", "{}"), ("", "lookup", "{}"), ("", "lookup", "{}"))
    loop.record_model_reply(state, again, now=T0)
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools)
    assert [c.call_id for c in step.calls] == ["c1_t2_1", "call_t2_2", "call_t2_3"]


def test_unique_call_ids_are_left_alone():
    state = fresh()
    calls = reply(("a", "lookup", "{}"), ("b", "lookup", "{}"))
    assert proposed_calls.unique_call_ids(state, calls) == list(calls.tool_calls)


@pytest.mark.parametrize(
    ("arguments", "repeated"),
    [
        ('{"order": "A", "amount": 1, "amount": 100000}', "amount"),
        ('{"order": {"id": 1, "id": 2}}', "id"),
        ('{"order": "A", "amount": 1}', None),
        ("not json", None),
    ],
)
def test_arguments_that_repeat_a_key_are_malformed_never_pending(arguments, repeated):
    assert proposed_calls.repeated_key(arguments) == repeated
    spec = AgentSpec(
        name="a",
        instructions="",
        model="m",
        tools=[ToolSpec(name="refund", description="", parameters={}, needs_approval=True)],
    )
    call = ToolCall(call_id="c1", tool="refund", arguments=arguments, needs_approval=True)
    problem = proposed_calls.malformed_problem(spec, call)
    if repeated is not None:
        assert problem == (
            f"Error: arguments for tool 'refund' name the key '{repeated}' more than once. "
            "Send each argument once."
        )
