"""Input filters in code (`handoff(agent, input_filter=FUNCTION)`, issue 46): what the new
agent's model is sent after one left items out, and what a filter may give back."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from durable_agents.activities.handoff import left_out_by
from durable_agents.workflows import context, handoffs, loop
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Handoff,
    ToolCall,
    ToolResult,
    UserMessage,
)
from temporalio.exceptions import ApplicationError

from durable_agents import Agent, handoff
from tests.support.native_agents import quiet

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _state():
    state = loop.new_state(quiet.spec(), AgentInput(agent="quiet", input="hi"), run_id="r", now=NOW)
    calls = [ToolCall(call_id=c, tool="t", arguments="{}") for c in ("a", "b")]
    state.items += [
        AssistantMessage(turn=1, content="looking", tool_calls=calls, at=NOW),
        ToolResult(call_id="a", content="A"),
        ToolResult(call_id="b", content="B"),
        AssistantMessage(turn=2, content="ok", at=NOW),
    ]
    state.turn = 2
    return state


def _sent(state) -> list:
    """The items the model is sent, without the handoff's own (rendered apart)."""
    return [i for i in context.view(state) if not isinstance(i, Handoff)]


def test_a_reply_kept_loses_the_calls_whose_results_went_and_results_follow_their_call():
    state = _state()  # 0 user, 1 reply with a and b, 2 result a, 3 result b, 4 reply
    handoffs.take(state, ToolCall(call_id="h", tool="x", arguments="{}"), quiet.spec(), now=NOW)
    [moved] = [i for i in state.items if isinstance(i, Handoff)]
    moved.left_out = [2, 4]  # result a and the last reply
    shown = _sent(state)
    assert [type(i).__name__ for i in shown] == ["UserMessage", "AssistantMessage", "ToolResult"]
    assert [c.call_id for c in shown[1].tool_calls] == ["b"] and shown[2].call_id == "b"
    moved.left_out = [1]  # the reply: both its results go with it
    assert [type(i).__name__ for i in _sent(state)] == [
        "UserMessage",
        "AssistantMessage",
    ]
    moved.left_out = [-1, 99, 0]  # a forged snapshot's positions: only real ones count
    assert next(type(i).__name__ for i in _sent(state)) == "AssistantMessage"


def test_take_maps_the_filter_s_positions_onto_the_run_s_items():
    state = _state()
    state.items.insert(1, ToolResult(call_id="zz", content="late"))  # a result in between
    handoffs.take(
        state,
        ToolCall(call_id="h", tool="x", arguments="{}"),
        quiet.spec(),
        now=NOW,
        left_out=[1, 7],
    )
    [moved] = [i for i in state.items if isinstance(i, Handoff)]
    assert moved.left_out == [1]  # the conversation's second item; 7 was never given


def _filtered(fn) -> object:
    return handoff("quiet", input_filter=fn)


async def test_a_filter_may_give_back_a_list_or_tuple_of_the_items_it_was_given():
    items = [UserMessage(content="a"), UserMessage(content="b"), UserMessage(content="c")]
    assert await left_out_by(_filtered(lambda got: got[::2]), items) == [1]
    assert await left_out_by(_filtered(lambda got: tuple(got)), items) == []

    async def nothing(got):
        return []

    assert await left_out_by(_filtered(nothing), items) == [0, 1, 2]
    assert await left_out_by(handoff("quiet"), items) is None


@pytest.mark.parametrize(
    "fn",
    [
        lambda got: [UserMessage(content="a")],  # equal, but not one it was given
        lambda got: [i.model_copy() for i in got],
        lambda got: None,
        lambda got: "a",
    ],
)
async def test_a_filter_that_writes_items_is_refused_for_good(fn):
    items = [UserMessage(content="a")]
    with pytest.raises(ApplicationError) as refused:
        await left_out_by(_filtered(fn), items)
    assert refused.value.type == "InputFilterInvalid" and refused.value.non_retryable
    assert "it does not write new ones" in refused.value.message


def test_a_filter_is_checked_where_it_is_declared():
    with pytest.raises(TypeError, match="handoff to quiet: input_filter must take items"):
        handoff(quiet, input_filter=lambda: [])
    with pytest.raises(ValueError, match="'remove_tools', a function"):
        handoff(quiet, input_filter="remove_everything")
    spec = Agent(name="a", instructions="", handoffs=[_filtered(lambda got: got)]).all_tools()[0]
    assert spec.spec().input_filter_function.endswith("<lambda>")
    assert spec.spec().input_filter is None
