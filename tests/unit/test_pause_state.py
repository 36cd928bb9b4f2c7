"""Pause as pure state (workflows.loop): what a paused run does next, what it says of
itself, what a fork keeps, and a bounded audit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from durable_agents.workflows import context_updates, loop, snapshot
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.audit import PAUSES_KEPT
from durable_agents.workflows.payloads import AgentInput, ModelReply, ModelToolCall
from durable_agents.workflows.state import Pause, RunStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def new_run():
    spec = AgentSpec(
        name="a",
        instructions="",
        model="m",
        tools=[
            ToolSpec(
                name="mail", description="", parameters={"type": "object"}, needs_approval=True
            )
        ],
    )
    return loop.new_state(spec, AgentInput(agent="a", input="hi"), run_id="r", now=T0)


def test_a_paused_run_starts_nothing_but_still_counts_as_awaiting_its_model():
    state = new_run()
    assert loop.pause(state, by="ops", reason="look", now=T0) is None
    assert isinstance(loop.next_step(state), loop.AwaitResume)
    assert loop.status_for(loop.next_step(state)) is RunStatus.PAUSED
    # A decision for a call the model is about to propose is held, paused or not.
    assert loop.awaiting_model(state)
    assert loop.unpause(state, by="ops", now=T0) is None
    assert isinstance(loop.next_step(state), loop.CallModel)


def test_a_waiting_run_says_paused_at_once_and_an_ended_one_does_not():
    state = new_run()
    reply = ModelReply(tool_calls=[ModelToolCall(call_id="c1", tool="mail", arguments="{}")])
    loop.record_model_reply(state, reply, now=T0)
    state.status = RunStatus.AWAITING_APPROVAL
    loop.pause(state, by=None, reason=None, now=T0)
    view = loop.status_view(state)
    assert (view.status, view.paused, view.current_agent) == (RunStatus.PAUSED, True, "a")
    state.status = RunStatus.CANCELLED
    assert loop.status_view(state).paused is False
    assert loop.pause_problem(state, pausing=False) == "run r has ended (cancelled)"


def test_pausing_twice_or_resuming_a_running_run_is_refused():
    state = new_run()
    assert loop.unpause(state, now=T0) == "run r is not paused"
    loop.pause(state, by="ann", reason=None, now=T0)
    assert loop.pause(state, by="bob", reason=None, now=T0) == "run r is paused already by ann"
    assert state.paused is not None and state.paused.by == "ann"


def test_the_pause_log_keeps_the_newest_entries():
    state = new_run()
    for n in range(PAUSES_KEPT):
        loop.pause(state, by=f"p{n}", reason=None, now=T0 + timedelta(seconds=n))
        loop.unpause(state, by=f"r{n}", now=T0 + timedelta(seconds=n))
    assert len(state.pause_log) == PAUSES_KEPT
    assert (
        state.pause_log[-1].action == "resume" and state.pause_log[-1].by == f"r{PAUSES_KEPT - 1}"
    )


def test_a_fork_does_not_inherit_the_sources_pause():
    state = new_run()
    loop.record_model_reply(state, ModelReply(content="hello"), now=T0)
    state.status, state.final_output = RunStatus.AWAITING_INPUT, "hello"
    state.paused = Pause(by="ops", at=T0)
    forked = snapshot.fork(state, at_turn=1, new_input="again")
    assert forked.paused is None and state.paused is not None


def test_a_context_overlay_merges_objects_key_by_key_and_replaces_the_rest():
    base = {"tenant": "acme", "limits": {"max": 5, "currency": "EUR"}, "tags": ["a"]}
    overlay = {"limits": {"max": 10}, "tags": ["b"], "user": "u2"}
    assert context_updates.overlay_context(base, overlay) == {
        "tenant": "acme",
        "limits": {"max": 10, "currency": "EUR"},
        "tags": ["b"],
        "user": "u2",
    }
    assert context_updates.overlay_context({"a": 1}, [1, 2]) == [1, 2]
    assert context_updates.overlay_context(None, {"a": 1}) == {"a": 1}
    assert context_updates.overlay_context({"a": {"b": 1}}, {"a": None}) == {"a": None}
