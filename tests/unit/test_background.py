"""The pure part of agents in the background (workflows/background.py): the tools an
agent gets, what the caller's model is told, budgets held for running children, and
what the loop does while they run."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import agent_calls, background, budget, loop
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.run_items import AssistantMessage, ToolCall, Usage
from durable_agents.workflows.state import RunState, RunStatus
from durable_agents.workflows.tree_payloads import SubRunFinished

from durable_agents import Agent
from tests.support.multi_agents import coordinator, lead, scout

NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def state_of(**fields) -> RunState:
    start = AgentInput(agent="coordinator", input="go")
    state = loop.new_state(coordinator.spec(), start, run_id="coord-1", now=NOW)
    return state.model_copy(update=fields)


def started(state: RunState, call_id: str = "c1", share: int | None = None) -> str:
    child = agent_calls.child_id(state.run_id, call_id)
    call = ToolCall(call_id=call_id, tool="scout", arguments='{"input": "dig"}')
    background.record(state, call, "scout", child, share, NOW)
    return child


def test_an_agent_calling_one_in_the_background_gets_the_three_tools_others_do_not():
    names = [t.name for t in coordinator.spec().tools]
    assert names[-3:] == [
        "check_background_agent",
        "message_background_agent",
        "stop_background_agent",
    ]
    assert [t.controls_background for t in coordinator.spec().tools[-3:]] == [
        "check",
        "message",
        "stop",
    ]
    assert coordinator.spec().tools[0].background
    message = coordinator.spec().tools[-2].parameters
    assert message["required"] == ["run_id", "message"]
    assert not any(t.controls_background for t in lead.spec().tools)


def test_wait_false_refuses_fail_run_and_a_non_bool():
    with pytest.raises(ValueError, match="needs wait=True"):
        scout.as_tool(wait=False, on_failure="fail_run")
    with pytest.raises(TypeError, match="True or False"):
        scout.as_tool(wait="no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="two tools are called 'check_background_agent'"):
        Agent(
            name="clash",
            instructions="x",
            model="m",
            tools=[scout.as_tool(wait=False), scout.as_tool(name="check_background_agent")],
        )


@pytest.mark.parametrize(
    ("kind", "arguments", "why"),
    [
        ("check", "not json", 'takes {"run_id": "..."}'),
        ("check", '{"run_id": "x", "more": 1}', 'takes {"run_id": "..."}'),
        ("message", '{"run_id": "x"}', 'takes {"run_id": "...", "message": "..."}'),
        ("message", '{"run_id": "x", "message": "  "}', "the message is empty"),
        ("message", '{"run_id": 5, "message": "hi"}', "are strings"),
        ("message", json.dumps({"run_id": "x", "message": "m" * 40_000}), "at most"),
    ],
)
def test_control_calls_with_other_arguments_are_answered_not_run(kind, arguments, why):
    call = ToolCall(call_id="k1", tool=f"{kind}_background_agent", arguments=arguments)
    found = background.arguments(call, kind)
    assert isinstance(found, str) and why in found


def test_a_control_call_aimed_at_a_run_it_did_not_start_names_those_it_did():
    state = state_of()
    child = started(state)
    call = ToolCall(call_id="k1", tool="stop_background_agent", arguments="{}")
    refused = background.target(state, call, "someone-else/c9")
    assert isinstance(refused, str) and "not a run this run started" in refused
    assert child in refused
    assert background.target(state, call, child) is state.background_runs[0]


def test_a_running_childs_share_counts_as_used_until_it_tells_what_it_used():
    state = state_of(token_budget=1_000)
    child = started(state, share=400)
    assert budget.tokens_used(state) == 400  # held while it runs
    assert agent_calls.budget_share(state, ["c2"]) == 600  # later children: what is left
    assert background.budget_share(state, ["c2"]) == 300  # in the background: the run's too
    end = SubRunFinished(
        run_id=child, status=RunStatus.COMPLETED, final_output="gold", usage=Usage(total_tokens=90)
    )
    text = background.take_end(state, end, now=NOW + timedelta(seconds=5))
    assert text is not None and text.endswith("Its final output:]\ngold")
    assert budget.tokens_used(state) == 90 and state.background_runs[0].share is None
    assert background.take_end(state, end, now=NOW) is None  # once


def test_an_end_of_a_run_it_does_not_know_changes_nothing():
    state = state_of()
    started(state)
    end = SubRunFinished(run_id="coord-1/c9", status=RunStatus.COMPLETED, final_output="x")
    assert background.take_end(state, end, now=NOW) is None
    assert state.background_runs[0].running and state.queued_messages == []


def test_a_failed_child_is_told_with_why_and_the_runs_end_stops_the_others():
    state = state_of(token_budget=1_000)
    first, second = started(state, "c1", 300), started(state, "c2", 300)
    end = SubRunFinished(run_id=first, status=RunStatus.FAILED, error="model down")
    assert background.take_end(state, end, now=NOW) == (
        f"[The scout agent you started in the background (run {first}, call c1) "
        "ended failed without an answer: model down]"
    )
    assert background.stopped_all(state, now=NOW) == [second]
    assert state.background_runs[1].status is RunStatus.CANCELLED
    # the failed one could not say what it used, nor the stopped one: their whole shares
    assert state.sub_run_usage is not None and state.sub_run_usage.total_tokens == 600


def test_a_single_run_that_answered_waits_for_its_children_a_session_waits_for_input():
    state = state_of()
    started(state)
    state.items.append(AssistantMessage(turn=1, content="on it", at=NOW))
    state.turn = 1
    assert isinstance(loop.next_step(state), loop.AwaitChildren)
    assert loop.status_for(loop.AwaitChildren()) is RunStatus.RUNNING
    assert isinstance(loop.next_step(state.model_copy(update={"session": True})), loop.AwaitInput)
    state.background_runs[0].finished_at = NOW
    assert isinstance(loop.next_step(state), loop.Finish)


def test_resumed_records_without_a_carried_child_are_lost_and_the_model_is_told():
    state = state_of()
    started(state, "c1")
    started(state, "c2")
    told = background.lost_on_resume(state, {"c2"}, now=NOW)
    assert len(told) == 1 and "(call c1) did not come with this run's snapshot" in told[0]
    assert [b.running for b in state.background_runs] == [False, True]


def test_records_are_bounded_by_dropping_ended_ones_first():
    state = state_of()
    for n in range(40):
        child = started(state, f"c{n}")
        if n < 35:
            end = SubRunFinished(run_id=child, status=RunStatus.COMPLETED, final_output="x")
            background.take_end(state, end, now=NOW)
    assert len(state.background_runs) == 32
    assert [b.call_id for b in background.running(state)] == [f"c{n}" for n in range(35, 40)]
    assert state.background_runs[0].call_id == "c8"


def test_a_fork_keeps_the_runs_started_before_its_turn_running_if_they_ended_after_it():
    from durable_agents.workflows.run_items import ToolResult, UserMessage
    from durable_agents.workflows.snapshot import fork

    state = state_of()

    def reply(turn: int, call_id: str | None, seconds: int) -> None:
        calls = [ToolCall(call_id=call_id, tool="scout", arguments='{"input": "dig"}')]
        at = NOW + timedelta(seconds=seconds)
        state.items.append(AssistantMessage(turn=turn, tool_calls=calls, at=at))
        state.items.append(ToolResult(call_id=call_id, content="started"))
        state.turn = turn

    reply(1, "c1", 1)
    started(state, "c1")
    reply(2, "c2", 2)
    started(state, "c2")
    state.items.append(AssistantMessage(turn=3, content="both run", at=NOW + timedelta(seconds=3)))
    state.turn = 3
    end = SubRunFinished(run_id="coord-1/c1", status=RunStatus.COMPLETED, final_output="x")
    background.take_end(state, end, now=NOW + timedelta(seconds=4))
    state.items.append(UserMessage(content="[end of c1]"))
    forked = fork(state, at_turn=1)
    assert [(b.call_id, b.running) for b in forked.background_runs] == [("c1", True)]
    assert [(b.call_id, b.running) for b in state.background_runs] == [("c1", False), ("c2", True)]


def test_agentctl_tree_marks_a_background_child_and_the_ui_lists_them():
    from durable_agents.client import render
    from durable_agents.client.tree import RunNode
    from durable_agents.workflows import details
    from durable_agents.workflows.payloads import StatusView

    def view(agent: str, status: RunStatus) -> StatusView:
        return StatusView(status=status, agent=agent, turn=1, pending_approvals=0, usage=Usage())

    child = RunNode("coord-1/c1", view("scout", RunStatus.RUNNING), [], "c1", background=True)
    root = RunNode("coord-1", view("coordinator", RunStatus.AWAITING_INPUT), [], children=[child])
    assert render.tree(root).splitlines() == [
        "coord-1 · coordinator · awaiting_input · turn 1",
        "  └ [c1] coord-1/c1 · scout · running · turn 1 · in the background",
    ]
    assert root.as_json()["children"][0]["background"] is True
    state = state_of()
    started(state)
    shown = details.render(state)
    assert "**Agents in the background (1)**" in shown
    assert "- scout — run `coord-1/c1` — running, turn 0 (call `c1`)" in shown


def test_agentctl_watch_prints_a_childs_start_and_end():
    from durable_agents.client.render_events import line

    at = "2026-12-07T09:00:05Z"
    started_event = {
        "seq": 4,
        "at": at,
        "type": "child_started",
        "call_id": "c1",
        "child_agent": "scout",
        "child_run_id": "coord-1/c1",
        "background": True,
    }
    assert (
        line(started_event) == "09:00:05 #4 scout started in the background as run coord-1/c1 [c1]"
    )
    ended = {
        "seq": 9,
        "at": at,
        "type": "child_finished",
        "child_agent": "scout\x1b[2J",
        "child_run_id": "coord-1/c1",
        "status": "failed",
        "reason": "model down",
    }
    assert line(ended) == (
        '09:00:05 #9 scout\\u{1b}[2J in the background ended failed (run coord-1/c1): "model down"'
    )
