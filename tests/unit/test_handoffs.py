"""workflows/handoffs.py and what a handoff changes elsewhere (standing rules, input
guardrails, AgentName, budgets): pure, no Temporal."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from durable_agents.workflows import decisions, guardrails, handoffs, loop, snapshot
from durable_agents.workflows.agent_spec import AgentSpec, GuardrailSpec, ModelPrice, ToolSpec
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    Handoff,
    ToolCall,
    ToolResult,
)
from durable_agents.workflows.state import RunState

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
PARAMS = {"type": "object", "properties": {}}


def spec(name: str, *tools: str, **fields) -> AgentSpec:
    made = [ToolSpec(name=t, description=t, parameters=PARAMS, needs_approval=True) for t in tools]
    made.append(ToolSpec(name="transfer_to_b", description="", parameters=PARAMS, handoff="b"))
    return AgentSpec(name=name, instructions="", model="m", tools=made, **fields)


def started(agent: AgentSpec) -> RunState:
    return loop.new_state(agent, AgentInput(agent=agent.name, input="hi"), run_id="r", now=NOW)


def handed_over(state: RunState, to: AgentSpec, *calls: ToolCall) -> ToolCall:
    move = ToolCall(call_id="h1", tool="transfer_to_b", arguments='{"reason": "refunds"}')
    state.items.append(AssistantMessage(turn=state.turn + 1, tool_calls=[*calls, move], at=NOW))
    state.turn += 1
    state.items.append(ToolResult(call_id="h1", content=handoffs.result(to.name)))
    handoffs.take(state, move, to, now=NOW)
    return move


def test_taking_a_handoff_answers_the_calls_still_waiting_and_records_it():
    state = started(spec("a", "lookup"))
    waiting = ToolCall(call_id="l1", tool="lookup", arguments="{}", needs_approval=True)
    handed_over(state, spec("b", "refund"), waiting)
    results = {i.call_id: i for i in state.items if isinstance(i, ToolResult)}
    assert results["l1"].is_error and "handed the conversation over to b" in results["l1"].content
    [moved] = [i for i in state.items if isinstance(i, Handoff)]
    assert (moved.from_agent, moved.to_agent, moved.turn, moved.reason) == ("a", "b", 1, "refunds")
    assert state.agent.name == "b" and handoffs.first_agent(state) == "a"
    assert decisions.pending_calls(state) == []
    RunState.model_validate_json(state.model_dump_json())  # consistent


def test_an_always_rule_given_to_the_old_agent_decides_nothing_after():
    state = started(spec("a", "lookup"))
    asked = ToolCall(call_id="l0", tool="lookup", arguments="{}", needs_approval=True)
    rule = Decision(
        call_id="l0", decision="approve", approver="ann", always=True, via="signal", at=NOW
    )
    state.items += [
        AssistantMessage(turn=1, tool_calls=[asked], at=NOW),
        rule,
        ToolResult(call_id="l0", content="ok"),
    ]
    state.turn = 1
    handed_over(state, spec("b", "lookup"))
    later = ToolCall(call_id="l2", tool="lookup", arguments="{}", needs_approval=True)
    state.items.append(AssistantMessage(turn=3, tool_calls=[later], at=NOW))
    state.turn = 3
    assert decisions.standing_rule(state, later, now=NOW) is None


def test_a_forged_handoff_item_does_not_name_the_run():
    state = started(spec("a"))
    state.items.append(Handoff(call_id="x", from_agent="payroll", to_agent="a", turn=1, at=NOW))
    assert handoffs.first_agent(state) == "a"  # the items are not asked
    handed_over(started_state := started(spec("a")), spec("b"))
    assert handoffs.first_agent(started_state) == "a"
    resumed = loop.resume(started_state, run_id="r2", workflow_run="w", now=NOW)
    assert handoffs.first_agent(resumed) == "b"  # a snapshot cannot say


def test_the_new_agents_input_guardrails_check_the_request_it_takes_over():
    guarded = spec("b", input_guardrails=[GuardrailSpec(name="no_passwords", kind="input")])
    state = started(spec("a"))
    handed_over(state, guarded)
    assert guardrails.due(state) == ("input", "hi", 0)


def test_a_handoff_that_would_break_a_budget_is_refused():
    priced = spec("a", price=ModelPrice(input=1, output=1))
    state = started(priced)
    assert handoffs.refusal(state, spec("b")) is None  # no budget: cost stops counting
    state.cost_budget = 5.0
    assert "b's model has no price" in (handoffs.refusal(state, spec("b")) or "")
    euros = spec("b", price=ModelPrice(input=1, output=1, currency="EUR"))
    assert "cost is in USD, b's in EUR" in (handoffs.refusal(state, euros) or "")
    state.token_budget = 1_000
    assert "does not bound its replies" in (handoffs.refusal(state, spec("b")) or "")


def test_a_handoffs_reason_is_its_reason_argument_or_its_arguments():
    def call(arguments: str) -> ToolCall:
        return ToolCall(call_id="h", tool="t", arguments=arguments)

    assert handoffs.reason(call('{"reason": "refunds"}')) == "refunds"
    assert handoffs.reason(call("{}")) is None
    assert handoffs.reason(call('{"topic": "x"}')) == '{"topic": "x"}'
    assert handoffs.reason(call("not json")) == "not json"
    assert len(handoffs.reason(call('{"reason": "' + "x" * 5000 + '"}')) or "") == 2_000


def test_a_handoffs_input_filter_trims_what_the_new_agent_is_sent_not_the_run():
    from durable_agents.workflows import context
    from durable_agents.workflows.run_items import UserMessage

    agent = spec("a", "lookup")
    agent.tools[-1].input_filter = "remove_tools"
    state = started(agent)
    looked = ToolCall(call_id="l1", tool="lookup", arguments="{}")
    state.items += [
        AssistantMessage(turn=1, content="Looking.", tool_calls=[looked], at=NOW),
        ToolResult(call_id="l1", content="found"),
        AssistantMessage(
            turn=2, content="", tool_calls=[looked.model_copy(update={"call_id": "l2"})], at=NOW
        ),
        ToolResult(call_id="l2", content="again"),
    ]
    state.turn = 2
    handed_over(state, spec("b", "refund"))
    [moved] = [i for i in state.items if isinstance(i, Handoff)]
    assert moved.input_filter == "remove_tools"
    state.items.append(UserMessage(content="and now?"))
    sent = context.view_of(context.view(state))
    assert [type(i).__name__ for i in sent] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert sent[1].content == "Looking." and sent[1].tool_calls == []  # type: ignore[union-attr]
    assert len([i for i in state.items if isinstance(i, ToolResult)]) == 3  # the run keeps them
    agent_b = spec("b")  # without a filter: the whole conversation
    plain = started(agent)
    plain.items += state.items[1:3]
    plain.turn = 1
    handed_over(plain, agent_b)
    plain.items[-1] = plain.items[-1].model_copy(update={"input_filter": None})
    assert any(isinstance(i, ToolResult) for i in context.view(plain))


def test_a_fork_before_a_handoff_is_refused_and_one_after_it_keeps_the_agent_it_had():
    # The state holds the definition of the agent the run has now: a fork from before
    # the handoff would run the earlier turns' conversation as the later agent.
    state = started(spec("a", "lookup"))
    state.items.append(AssistantMessage(turn=1, content="let me see", tool_calls=[], at=NOW))
    state.turn = 1
    handed_over(state, spec("b", "refund"))
    state.items.append(AssistantMessage(turn=3, content="refunded", at=NOW))
    state.turn = 3
    for turn in (0, 1):
        with pytest.raises(
            snapshot.SnapshotError,
            match=rf"^cannot fork run r at turn {turn}: it handed over from a to b at turn 2, "
            r"and a snapshot holds only the agent it has now \(b\); fork at turn 2 or later$",
        ):
            snapshot.fork(state, at_turn=turn)
    forked = snapshot.fork(state, at_turn=2, new_input="and the other one")
    assert forked.agent.name == "b"
    assert [i.type for i in forked.items][-2:] == ["handoff", "user_message"]


def test_a_fork_back_at_a_turn_of_the_agent_the_run_has_now_is_taken():
    # a -> b -> a: at turn 1 the run had a, which the state holds
    state = started(spec("a", "lookup"))
    state.items.append(AssistantMessage(turn=1, content="let me see", tool_calls=[], at=NOW))
    state.turn = 1
    handed_over(state, spec("b", "refund"))
    back = ToolCall(call_id="h2", tool="transfer_to_a", arguments="{}")
    state.items.append(AssistantMessage(turn=3, tool_calls=[back], at=NOW))
    state.turn = 3
    state.items.append(ToolResult(call_id="h2", content=handoffs.result("a")))
    handoffs.take(state, back, spec("a", "lookup"), now=NOW)
    forked = snapshot.fork(state, at_turn=1)
    assert forked.agent.name == "a" and not any(i.type == "handoff" for i in forked.items)
