"""The run events the loop's steps make (`workflows.step_events`) and those webhooks
carry too (`workflows.run_events`): each one is a pinned event object its published
schema accepts (`workflows.event_models`, strict), small, with sensitive values
masked and text cut."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from durable_agents.workflows import run_events, step_events
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.event_models import RUN_EVENT
from durable_agents.workflows.payloads import ToolOutcome
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ToolCall,
    Usage,
    UserMessage,
)
from durable_agents.workflows.state import Pause, RunState, RunStatus
from pydantic import ValidationError

AT = datetime(2026, 11, 26, 9, 30, tzinfo=UTC)
CALL = ToolCall(
    call_id="c1", tool="pay", arguments='{"iban": "DE89 3704", "amount": 5}', needs_approval=True
)


def _run() -> RunState:
    pay = ToolSpec(
        name="pay",
        description="",
        parameters={"type": "object"},
        needs_approval=True,
        sensitive=["iban"],
    )
    reply = AssistantMessage(
        turn=1, content="paying " + "x" * 500, tool_calls=[CALL], at=AT, usage=Usage(input_tokens=3)
    )
    return RunState(
        run_id="r",
        agent=AgentSpec(name="desk", instructions="", model="m", tools=[pay]),
        max_turns=5,
        items=[UserMessage(content="pay DE89 3704"), reply],
        turn=1,
        status=RunStatus.AWAITING_APPROVAL,
        created_at=AT,
        updated_at=AT,
    )


def test_every_step_event_is_a_pinned_object_its_schema_accepts():
    state = _run()
    reply = state.items[1]
    assert isinstance(reply, AssistantMessage)
    built = [
        step_events.run_started(state),
        step_events.turn_started(state),
        step_events.model_finished(state, reply),
        step_events.tool_proposed(state, CALL),
        step_events.tool_started(state, CALL),
        step_events.tool_finished(CALL, ToolOutcome(call_id="c1", content="paid", is_error=False)),
        step_events.continued_as_new(state),
    ]
    events = [step_events.stamped(state, e, seq=n, now=AT) for n, e in enumerate(built, 1)]
    for event in events:
        RUN_EVENT.validate_python(event)
        assert list(event)[:5] == ["seq", "type", "at", "run_id", "agent"]
        assert event["at"] == "2026-11-26T09:30:00Z"
        assert None not in event.values()
    started, turn, answered, proposed, running, finished, switched = events
    assert (started["input"], started["session"], turn["turn"]) == ("pay DE89 3704", False, 2)
    assert len(answered["text"]) == step_events.PREVIEW and answered["text"].endswith("…")
    assert answered["usage"]["input_tokens"] == 3 and answered["tool_calls"] == 1
    assert proposed["call"] == 'pay(iban="<sensitive, 9 chars>", amount=5)'
    assert proposed["needs_approval"] is True and running["call"] == proposed["call"]
    assert (finished["result"], finished["is_error"]) == ("paid", False)
    assert switched == {**switched, "type": "continued_as_new", "turn": 1}


def test_approval_pause_and_end_events_are_numbered_from_the_stream_and_accepted():
    state = _run()
    asked = run_events.due(state, now=AT, first_seq=7)
    assert [(e["seq"], e["type"]) for e in asked] == [(7, "approval_requested")]
    assert asked[0]["args"]["iban"] == "<sensitive, 9 chars>"
    assert state.notices is not None and state.notices.seq == 7
    state.paused = Pause(by="ops", reason="look", at=AT)
    later = run_events.due(state, now=AT, first_seq=12)
    state.paused = None
    state.items.append(
        Decision(call_id="c1", decision="approve", approver="ann", via="signal", at=AT)
    )
    later += run_events.due(state, now=AT, first_seq=13)
    state.status = RunStatus.COMPLETED
    state.final_output = {"paid": True}
    later += run_events.due(state, now=AT, first_seq=15)
    assert [(e["seq"], e["type"]) for e in later] == [
        (12, "paused"),
        (13, "approval_decided"),
        (14, "resumed"),
        (15, "run_finished"),
    ]
    for event in [*asked, *later]:
        RUN_EVENT.validate_python(event)
    assert run_events.due(state, now=AT, first_seq=16) == []
    assert state.notices.seq == 15  # a webhook id names one of these numbers


def test_the_schema_refuses_what_is_not_a_run_event():
    good = step_events.stamped(_run(), step_events.turn_started(_run()), seq=1, now=AT)
    for bad in (
        {**good, "seq": 0},
        {**good, "type": "tool_teleported"},
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "at"},
    ):
        with pytest.raises(ValidationError):
            RUN_EVENT.validate_python(bad)
