"""At-most-once tools without a server: what `@tool(at_most_once=True)` refuses and
freezes, how a started call is stamped, and how a resumed or forked snapshot answers a
started call without a result (interrupted, never run again). Hostile snapshots too."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from durable_agents.activities.tool import AT_MOST_ONCE_RETRY, Tool, tool
from durable_agents.client import render, render_events
from durable_agents.workflows import at_most_once, decisions, details, loop, step_events
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.event_models import ToolFinished
from durable_agents.workflows.payloads import AgentInput, DecideInput, ModelReply, ModelToolCall
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.snapshot import dumps, fork, loads
from durable_agents.workflows.state import RunState
from pydantic import BaseModel, ValidationError
from temporalio.common import RetryPolicy

from tests.support.snapshot_golden import OBJECT, T0, at
from tests.unit.test_snapshot_fork import USAGE


def pay(amount: int) -> str:
    """Pay `amount`."""
    return "paid"


SPEC = AgentSpec(
    name="bot",
    instructions="be brief",
    model="m",
    tools=[
        ToolSpec(name="pay", description="", parameters=OBJECT, at_most_once=True),
        ToolSpec(
            name="approved_pay",
            description="",
            parameters=OBJECT,
            at_most_once=True,
            needs_approval=True,
        ),
        ToolSpec(name="lookup", description="", parameters=OBJECT),
    ],
)


def _running(*calls: tuple[str, str]) -> RunState:
    """Turn 1 proposed `calls` (id, tool); none has a result."""
    state = loop.new_state(SPEC, AgentInput(agent="bot", input="pay"), run_id="src", now=T0)
    proposed = [ModelToolCall(call_id=c, tool=t, arguments="{}") for c, t in calls]
    loop.record_model_reply(state, ModelReply(tool_calls=proposed, usage=USAGE), now=at(1))
    return state


def _resumed(state: RunState, run_id: str = "new") -> RunState:
    return loop.resume(loads(dumps(state)), run_id=run_id, workflow_run="wr", now=at(9))


# --- definition ---------------------------------------------------------------------


def test_an_at_most_once_tool_is_tried_once_and_frozen_so():
    made = tool(pay, at_most_once=True)
    assert made.retry_policy is AT_MOST_ONCE_RETRY
    spec, settings = made.spec(), made.execution_settings()
    assert spec.at_most_once and settings.retry.maximum_attempts == 1
    assert settings.heartbeat_timeout_seconds == 5  # a dead worker is noticed in seconds
    assert "at_most_once" not in tool(pay).spec().model_dump(mode="json")  # left out if not
    direct = Tool(name="pay", description="", fn=pay, arguments=BaseModel, at_most_once=True)
    assert direct.retry_policy.maximum_attempts == 1  # the dataclass's default, made one


def test_an_at_most_once_tool_cannot_be_local_nor_retried():
    with pytest.raises(ValueError, match="an at-most-once tool cannot be local: a local") as err:
        tool(pay, at_most_once=True, local=True)
    assert "a worker that dies mid-call runs it again" in str(err.value)
    with pytest.raises(ValueError, match="cannot be local"):
        dataclasses.replace(tool(pay, at_most_once=True), local=True)  # however it is made
    with pytest.raises(ValueError, match="is tried once, not 3 times: leave retry_policy out"):
        tool(pay, at_most_once=True, retry_policy=RetryPolicy(maximum_attempts=3))
    with pytest.raises(ValueError, match="a handoff or an agent call is not at_most_once"):
        dataclasses.replace(tool(pay), runs_agent="other", at_most_once=True)
    once = tool(pay, at_most_once=True, retry_policy=RetryPolicy(maximum_attempts=1))
    assert once.execution_settings().retry.maximum_attempts == 1
    slow = tool(pay, at_most_once=True, timeout=timedelta(minutes=5), heartbeat_timeout=None)
    assert (
        slow.execution_settings().heartbeat_timeout_seconds is None
    )  # allowed: noticed at its timeout


def test_agentctl_tools_says_which_tools_run_at_most_once():
    shown = render.tools(SPEC).splitlines()
    assert "  pay · @tool · at most once · no approval" in shown
    assert "  lookup · @tool · no approval" in shown


# --- stamping and resuming ----------------------------------------------------------


def test_a_started_call_is_stamped_once_and_refused_a_second_start():
    state = _running(("p1", "pay"))
    assert at_most_once.mark_started(state, "p1", now=at(2))
    assert not at_most_once.mark_started(state, "p1", now=at(3))  # never started again
    [call] = loop.unanswered_calls(state)
    assert call.started_at == at(2)
    assert at_most_once.started_open(state) == [call]


def test_a_snapshot_read_mid_call_resumes_with_the_call_interrupted_not_run():
    state = _running(("p1", "pay"), ("l1", "lookup"))
    at_most_once.mark_started(state, "p1", now=at(2))
    resumed = _resumed(state)
    results = {i.call_id: i for i in resumed.items if isinstance(i, ToolResult)}
    assert list(results) == ["p1"]
    assert results["p1"].interrupted and results["p1"].is_error
    assert results["p1"].content == at_most_once.message("pay", at_most_once.RESUMED)
    assert loop.next_step(resumed) == loop.RunTools(tuple(loop.unanswered_calls(resumed)))
    assert [c.call_id for c in loop.unanswered_calls(resumed)] == ["l1"]  # it runs: not started


def test_an_approved_started_call_resumed_keeps_its_approval_and_is_not_asked_again():
    state = _running(("a1", "approved_pay"))
    decide = DecideInput(call_id="a1", decision="approve", approver="ann")
    decisions.apply(state, decide, via="update", now=at(2))
    at_most_once.mark_started(state, "a1", now=at(3))
    resumed = _resumed(state)
    assert [i.call_id for i in resumed.items if isinstance(i, ToolResult) and i.interrupted] == [
        "a1"
    ]
    assert loop.next_step(resumed).__class__ is loop.CallModel  # nothing waits, nothing runs
    assert resumed.refused_decisions == []  # the decision is the call's audit, kept


def test_a_fork_at_the_turn_of_a_started_call_answers_it_interrupted():
    state = _running(("p1", "pay"))
    at_most_once.mark_started(state, "p1", now=at(2))
    forked = loop.resume(fork(state, at_turn=1), run_id="fork", workflow_run="wr", now=at(9))
    [result] = [i for i in forked.items if isinstance(i, ToolResult)]
    assert result.interrupted


def test_continue_as_new_carries_the_stamp_and_answers_nothing():
    state = _running(("p1", "pay"))
    at_most_once.mark_started(state, "p1", now=at(2))
    state.workflow_runs = ["wr-1"]
    carried = loop.resume(state, run_id="src", workflow_run="wr-2", now=at(3), continue_as_new=True)
    assert not any(isinstance(i, ToolResult) for i in carried.items)


def test_a_hostile_state_cannot_carry_a_fake_interruption_or_stamp():
    state = _running(("p1", "pay"))
    document = state.model_dump(mode="json")
    document["items"].append(
        {"type": "tool_result", "call_id": "p1", "content": "x", "interrupted": "yes"}
    )
    with pytest.raises(ValidationError, match="interrupted"):
        RunState.model_validate(document)
    document = state.model_dump(mode="json")
    document["items"][1]["tool_calls"][0]["started_at"] = "2026-12-07T10:00:00"  # no zone
    with pytest.raises(ValidationError, match="started_at"):
        RunState.model_validate(document)


def test_a_stamp_without_a_result_in_an_edited_snapshot_never_runs_the_call():
    """A snapshot may mark calls started that never were: they are answered interrupted
    ("may or may not"), never run; removing a stamp is no more than proposing a call."""
    state = _running(("l1", "lookup"))
    state.items[1].tool_calls[0].started_at = at(2)  # type: ignore[union-attr]
    resumed = _resumed(loads(dumps(state)))
    assert loop.unanswered_calls(resumed) == []


# --- what people see -----------------------------------------------------------------


def test_an_interrupted_result_shows_as_interrupted_in_state_details_and_events():
    state = _running(("p1", "pay"))
    at_most_once.mark_started(state, "p1", now=at(2))
    resumed = _resumed(state)
    assert "tool interrupted [p1]: Interrupted: the call to tool 'pay'" in render.state(resumed)
    assert "**Last tool result** `pay` (interrupted)" in details.render(resumed)
    [event] = step_events.interrupted_at_start(at_most_once.started_open(state))
    stamped = step_events.stamped(resumed, event, seq=3, now=at(9))
    assert ToolFinished.model_validate(stamped).interrupted is True
    assert "interrupted (may or may not have taken effect)" in render_events.line(stamped)
    [call] = at_most_once.started_open(state)
    plain = at_most_once.interrupted(call, "x").model_copy(update={"interrupted": False})
    ordinary = step_events.stamped(
        resumed, step_events.tool_finished(call, plain), seq=4, now=at(9)
    )
    assert "interrupted" not in ordinary  # left out unless true
