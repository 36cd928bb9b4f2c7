"""Steering's pure part (`workflows.interrupts`), without Temporal: an interrupt asked,
applied (every open call answered as interrupted, with what is known), and what a run
stopped by the `interrupt` update does next."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import decisions, interrupts, loop
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    ToolOutcome,
)
from durable_agents.workflows.run_items import ToolResult, Usage
from durable_agents.workflows.state import RunState, RunStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = {"type": "object", "properties": {}}
TOOLS = [
    ToolSpec(name="slow", description="", parameters=SCHEMA),  # runs with a heartbeat timeout
    ToolSpec(name="blind", description="", parameters=SCHEMA),
    ToolSpec(name="mail", description="", parameters=SCHEMA, needs_approval=True),
    ToolSpec(name="lookup", description="", parameters=SCHEMA, local=True),
    ToolSpec(name="ticket", description="", parameters=SCHEMA, mcp_server="desk"),
]
SPEC = AgentSpec(name="bot", instructions="", model="m", max_turns=5, tools=TOOLS)


def running(*calls: tuple[str, str], session: bool = False) -> RunState:
    state = loop.new_state(
        SPEC, AgentInput(agent="bot", input="go", session=session), run_id="r", now=T0
    )
    reply = ModelReply(
        tool_calls=[ModelToolCall(call_id=c, tool=t, arguments="{}") for c, t in calls],
        usage=Usage(model_calls=1),
    )
    loop.record_model_reply(state, reply, now=T0)
    return state


def test_a_message_interrupt_answers_every_open_call_with_what_is_known():
    state = running(("s1", "slow"), ("m1", "mail"), ("m2", "mail"), ("b1", "blind"))
    decisions.apply(
        state, DecideInput(call_id="m2", decision="approve", approver="ann"), via="update", now=T0
    )
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="b1", content="done")], now=T0)
    interrupts.ask(state, via="message", now=T0)
    state.interrupt.notes["s1"] = interrupts.stopped_note(
        state.interrupt, TOOLS[0], None, heartbeats=True
    )
    record = interrupts.settle(state, now=T0 + timedelta(seconds=1))
    assert record is not None and state.interrupt is None
    assert [(c.call_id, c.was) for c in record.calls] == [
        ("s1", "running"),
        ("m1", "awaiting_approval"),
        ("m2", "approved"),
    ]
    answered = {i.call_id: i for i in state.items if isinstance(i, ToolResult)}
    assert answered["b1"].interrupted is False  # it had its result before
    assert all(answered[c].interrupted and answered[c].is_error for c in ("s1", "m1", "m2"))
    assert answered["s1"].content.endswith("the tool was stopped; it did not finish.")
    assert "withdrawn" in answered["m1"].content
    assert "approved but had not started" in answered["m2"].content
    assert record.item == len(state.items) and loop.unanswered_calls(state) == []
    assert state.interruptions == [record]


def test_what_is_known_of_a_stopped_call_depends_on_how_it_runs():
    interrupts.ask(state := running(), via="update", by="ops", reason="stop", now=T0)
    pending = state.interrupt
    assert pending is not None
    said = {
        t.name: interrupts.stopped_note(pending, t, None, heartbeats=t.name == "slow")
        for t in TOOLS
    }
    assert said["slow"].startswith("Interrupted by ops: stop while it ran: the tool was stopped")
    assert "cannot hear it" in said["blind"]
    assert "MCP server was not told" in said["ticket"]
    assert "local tool was asked to stop" in said["lookup"]
    late = ToolOutcome(call_id="s1", content="42")
    said_late = interrupts.stopped_note(pending, TOOLS[0], late)
    assert said_late.endswith("had finished; it keeps its own result: 42")
    assert "its run r/c1 was cancelled" in interrupts.stopped_note(pending, None, None, "r/c1")
    huge = interrupts.stopped_note(pending, TOOLS[0], ToolOutcome(call_id="s1", content="x" * 9000))
    assert len(huge) == 4_000


def test_a_message_joins_an_update_interrupt_and_the_run_answers_it():
    state = running(("s1", "slow"), session=True)
    interrupts.ask(state, via="update", by="ops", now=T0)
    interrupts.ask(state, via="message", now=T0)
    assert state.interrupt is not None and state.interrupt.via == "message"
    assert state.interrupt.by == "ops"
    loop.receive_message(state, "new", now=T0)
    interrupts.settle(state, now=T0)
    loop.deliver_messages(state, now=T0)
    assert not interrupts.halted(state)
    assert isinstance(loop.next_step(state), loop.CallModel)


def test_the_update_stops_a_session_until_its_next_message_and_ends_a_single_run():
    session = running(("s1", "slow"), session=True)
    interrupts.ask(session, via="update", now=T0)
    interrupts.settle(session, now=T0)
    assert interrupts.halted(session) and isinstance(loop.next_step(session), loop.AwaitInput)
    loop.receive_message(session, "again", now=T0)
    loop.deliver_messages(session, now=T0)
    assert not interrupts.halted(session)
    assert isinstance(loop.next_step(session), loop.CallModel)
    single = running(("s1", "slow"))
    interrupts.ask(single, via="update", now=T0)
    interrupts.settle(single, now=T0)
    assert loop.next_step(single) == loop.Finish(RunStatus.INTERRUPTED)
    assert RunStatus.INTERRUPTED.is_final
    ended = running(("s1", "slow"), session=True)
    interrupts.ask(ended, via="update", now=T0)
    interrupts.settle(ended, now=T0)
    loop.end_session(ended, reason="bye", now=T0)
    assert loop.next_step(ended) == loop.Finish(RunStatus.COMPLETED)


def test_refusals_say_why():
    state = running(("s1", "slow"))
    assert interrupts.problem(state, working=True) is None
    assert "waits for the user's next message" in interrupts.problem(state, working=False)
    interrupts.ask(state, via="update", now=T0)
    assert "being interrupted already" in interrupts.problem(state, working=True)
    state.status = RunStatus.COMPLETED
    assert "has ended (completed)" in interrupts.problem(state, working=True)


def test_nothing_asked_settles_nothing_and_the_log_is_bounded():
    state = running(("s1", "slow"), session=True)
    assert interrupts.settle(state, now=T0) is None and state.interruptions == []
    for n in range(25):
        interrupts.ask(state, via="message", reason=str(n), now=T0)
        interrupts.settle(state, now=T0)
    assert len(state.interruptions) == 20 and state.interruptions[-1].reason == "24"
    RunState.model_validate_json(state.model_dump_json())  # round-trips


def test_an_agent_refuses_an_unknown_while_busy():
    from durable_agents import Agent

    with pytest.raises(ValueError, match="while_busy must be 'queue', 'interrupt' or 'reject'"):
        Agent(name="a", instructions="", model="m", while_busy="sometimes")  # type: ignore[arg-type]
    spec = Agent(name="a", instructions="", model="m", while_busy="reject").spec()
    assert spec.while_busy == "reject"
    plain = Agent(name="b", instructions="", model="m").spec()
    assert plain.while_busy == "queue" and "while_busy" not in plain.model_dump(mode="json")


def test_an_interrupted_event_prints_as_one_escaped_line():
    from durable_agents.client.render_events import line

    event = {
        "type": "interrupted",
        "seq": 4,
        "at": "2026-01-01T12:00:05Z",
        "via": "update",
        "by": "ops\x1b[2J",
        "reason": "wrong\norder",
        "model_call": True,
        "calls": [
            {"call_id": "h1", "was": "running"},
            {"call_id": "e1", "was": "awaiting_approval"},
        ],
    }
    shown = line(event)
    assert "\x1b" not in shown and "\n" not in shown
    assert shown.startswith("12:00:05 #4 interrupted by ops")
    assert shown.endswith("model call cut · h1 stopped, e1 withdrawn")
    assert line({"type": "interrupted", "via": "message", "calls": "junk"}).endswith(
        "interrupted by a new message"
    )


def test_the_update_ends_a_single_run_though_a_message_was_queued_before_it():
    """A message queued before the `interrupt` update (a background agent's end, or a
    `queue` message) reaches the conversation after the interrupted calls: it was not
    sent after the update, so the run still stops."""
    single = running(("s1", "slow"))
    loop.receive_message(single, "queued before", now=T0)
    interrupts.ask(single, via="update", by="ops", now=T0)
    record = interrupts.settle(single, now=T0)
    loop.deliver_messages(single, now=T0)
    assert record is not None and record.item == len(single.items)
    assert single.items[-1].content == "queued before"
    assert interrupts.halted(single) and loop.next_step(single) == loop.Finish(
        RunStatus.INTERRUPTED
    )
    session = running(("s1", "slow"), session=True)
    loop.receive_message(session, "queued before", now=T0)
    interrupts.ask(session, via="update", now=T0)
    interrupts.settle(session, now=T0)
    loop.deliver_messages(session, now=T0)
    assert isinstance(loop.next_step(session), loop.AwaitInput)
    loop.receive_message(session, "after it", now=T0)  # the next message is answered
    loop.deliver_messages(session, now=T0)
    assert isinstance(loop.next_step(session), loop.CallModel)


def test_a_withdrawn_external_call_is_said_to_have_waited_for_an_answer():
    asked = ToolSpec(
        name="ask_ann", description="", parameters=SCHEMA, external=True, needs_approval=True
    )
    spec = SPEC.model_copy(update={"tools": [*TOOLS, asked]})
    state = loop.new_state(spec, AgentInput(agent="bot", input="go"), run_id="r", now=T0)
    reply = ModelReply(
        tool_calls=[ModelToolCall(call_id="q1", tool="ask_ann", arguments="{}")],
        usage=Usage(model_calls=1),
    )
    loop.record_model_reply(state, reply, now=T0)
    interrupts.ask(state, via="update", by="ops", now=T0)
    record = interrupts.settle(state, now=T0)
    assert record is not None
    [call] = record.calls
    assert call.was == "awaiting_answer"
    assert call.note == (
        "Interrupted by ops: the call was waiting for an answer and is withdrawn; it got none."
    )
    RunState.model_validate_json(state.model_dump_json())  # round-trips


def test_an_agent_that_takes_no_interrupts_refuses_them_with_why():
    from durable_agents import Agent

    with pytest.raises(ValueError, match="while_busy='interrupt' needs allow_interrupt=True"):
        Agent(name="a", instructions="", model="m", while_busy="interrupt", allow_interrupt=False)
    with pytest.raises(TypeError, match="allow_interrupt: True or False"):
        Agent(name="a", instructions="", model="m", allow_interrupt="no")  # type: ignore[arg-type]
    spec = Agent(name="a", instructions="", model="m", allow_interrupt=False).spec()
    assert spec.allow_interrupt is False
    assert "allow_interrupt" not in Agent(name="b", instructions="", model="m").spec().model_dump()
    state = running(("m1", "mail"))
    state.agent = state.agent.model_copy(update={"allow_interrupt": False})
    why = interrupts.problem(state, working=True)
    assert why is not None and "takes no interrupts (allow_interrupt=False)" in why
