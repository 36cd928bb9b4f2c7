"""Forking a snapshot: the state as it was at the end of turn N, ready to run again."""

from __future__ import annotations

import pytest
from durable_agents.workflows import decisions, loop
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.audit import DecisionAttempt
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    ToolOutcome,
)
from durable_agents.workflows.run_items import Decision, Usage, UserMessage
from durable_agents.workflows.snapshot import SnapshotError, dumps, fork, loads
from durable_agents.workflows.state import RunOrigin, RunState, RunStatus

from tests.support.snapshot_golden import OBJECT, T0, at

# --- fork -----------------------------------------------------------------------------

SPEC = AgentSpec(
    name="bot",
    instructions="be brief",
    model="m",
    tools=[
        ToolSpec(name="lookup", description="", parameters=OBJECT),
        ToolSpec(name="refund", description="", parameters=OBJECT, needs_approval=True),
    ],
)
USAGE = Usage(model_calls=1, input_tokens=10, output_tokens=5, total_tokens=15)


def _reply(call_id: str, tool: str) -> ModelReply:
    call = ModelToolCall(call_id=call_id, tool=tool, arguments="{}")
    return ModelReply(tool_calls=[call], usage=USAGE)


def source_run() -> RunState:
    """Turn 1 looks up, turn 2 refunds (approved), turn 3 refunds again and is left waiting."""
    state = loop.new_state(SPEC, AgentInput(agent="bot", input="refund"), run_id="src", now=T0)
    loop.record_model_reply(state, _reply("c1", "lookup"), now=at(1))
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c1", content="found")], now=at(2))
    loop.record_model_reply(state, _reply("c2", "refund"), now=at(3))
    decisions.apply(
        state,
        DecideInput(call_id="c2", decision="approve", approver="ann"),
        via="update",
        now=at(4),
    )
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c2", content="done")], now=at(5))
    loop.record_model_reply(state, _reply("c3", "refund"), now=at(6))
    loop.finish(state, loop.status_for(loop.next_step(state)), now=at(6))
    return state


def test_fork_at_an_earlier_turn_cuts_later_turns_and_appends_the_new_input():
    source = source_run()
    forked = fork(source, at_turn=1, new_input="only look it up")
    assert [type(i).__name__ for i in forked.items] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResult",
        "UserMessage",
    ]
    assert forked.items[-1] == UserMessage(content="only look it up")
    assert forked.turn == 1 and forked.status == RunStatus.RUNNING
    assert forked.final_output is None and forked.error is None
    assert forked.usage == Usage()  # the fork's own spend; the source's stays on the source
    assert forked.origin == RunOrigin(run_id="src", turn=1, mode="fork")
    step = loop.next_step(forked)
    assert isinstance(step, loop.CallModel) and step.request.turn == 2
    assert source == source_run()  # the source is untouched


def test_fork_keeps_the_decisions_and_results_of_its_turn():
    forked = fork(source_run(), at_turn=2)
    assert [i.call_id for i in forked.items if isinstance(i, Decision)] == ["c2"]
    assert decisions.pending_approvals(forked) == []


def test_fork_of_a_cancelled_run_makes_its_last_turns_approvals_pending_again():
    source = source_run()
    loop.finish(source, RunStatus.CANCELLED, now=at(7))
    assert decisions.pending_approvals(source) == []
    forked = fork(source, at_turn=3)
    assert [p.call_id for p in decisions.pending_approvals(forked)] == ["c3"]
    assert loop.next_step(forked) == loop.AwaitDecisions(("c3",))


def test_fork_at_turn_zero_keeps_only_the_initial_user_message():
    forked = fork(source_run(), at_turn=0, new_input="again")
    assert forked.items == [UserMessage(content="refund"), UserMessage(content="again")]
    assert loop.next_step(forked).request.turn == 1  # type: ignore[union-attr]


def test_fork_at_a_final_turn_keeps_the_final_output():
    state = loop.new_state(SPEC, AgentInput(agent="bot", input="hi"), run_id="done", now=T0)
    loop.record_model_reply(state, ModelReply(content="hello", usage=USAGE), now=at(1))
    loop.finish(state, RunStatus.COMPLETED, now=at(1))
    forked = fork(state, at_turn=1)
    assert forked.final_output == "hello"
    assert loop.next_step(forked) == loop.Finish(RunStatus.COMPLETED)


def test_fork_at_a_final_turn_with_new_input_asks_the_model_again():
    state = loop.new_state(SPEC, AgentInput(agent="bot", input="hi"), run_id="done", now=T0)
    loop.record_model_reply(state, ModelReply(content="hello", usage=USAGE), now=at(1))
    loop.finish(state, RunStatus.COMPLETED, now=at(1))
    forked = fork(state, at_turn=1, new_input="and in French?")
    assert forked.final_output is None and forked.status == RunStatus.RUNNING
    assert forked.items[-2:] == [state.items[-1], UserMessage(content="and in French?")]
    step = loop.next_step(forked)
    assert isinstance(step, loop.CallModel) and step.request.turn == 2


def test_fork_drops_signals_and_messages_that_came_after_the_cut():
    source = source_run()
    early, late = (
        DecisionAttempt(call_id="x", decision="approve", approver="ann", at=at(t)) for t in (2.5, 6)
    )
    source.held_decisions = [early, late]
    source.refused_decisions = [early.model_copy(update={"refused_because": "no"}), late]
    source.queued_messages = ["later"]
    forked = fork(source, at_turn=2)
    assert forked.held_decisions == [early] and len(forked.refused_decisions) == 1
    assert forked.queued_messages == []
    assert fork(source, at_turn=3).held_decisions == [early, late]  # nothing cut


@pytest.mark.parametrize("turn", [-1, 4])
def test_fork_outside_the_runs_turns_is_refused(turn: int):
    with pytest.raises(
        SnapshotError, match=f"^cannot fork run src at turn {turn}: it has turns 0 to 3$"
    ):
        fork(source_run(), at_turn=turn)


def test_fork_refuses_new_input_while_its_turns_calls_have_no_result():
    with pytest.raises(
        SnapshotError, match=r"^cannot add input at turn 3: tool calls c3 of that turn"
    ):
        fork(source_run(), at_turn=3, new_input="hurry")


def test_resuming_a_forked_snapshot_keeps_the_fork_origin():
    text = dumps(fork(source_run(), at_turn=1, new_input="only look it up"))
    resumed = loop.resume(loads(text), run_id="fork-1", workflow_run="wr-1", now=at(100))
    assert resumed.run_id == "fork-1"
    assert resumed.origin == RunOrigin(run_id="src", turn=1, mode="fork")
    assert resumed.items[-1] == UserMessage(content="only look it up")
