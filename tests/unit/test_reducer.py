"""The loop as a reducer, without Temporal: fold each event into RunState, then the state
alone says the next step (and the status the run shows meanwhile)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import interrupts, loop, reducer
from durable_agents.workflows.agent_spec import AgentSpec, ApprovalPolicy, ToolSpec
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    ToolOutcome,
)
from durable_agents.workflows.run_items import Decision, ToolResult, Usage, UserMessage
from durable_agents.workflows.state import ErrorInfo, RunState, RunStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = {"type": "object", "properties": {}}
SPEC = AgentSpec(
    name="bot",
    instructions="be brief",
    model="m",
    max_turns=5,
    tools=[
        ToolSpec(name="lookup", description="", parameters=SCHEMA),
        ToolSpec(name="refund", description="", parameters=SCHEMA, needs_approval=True),
        ToolSpec(
            name="wire",
            description="",
            parameters=SCHEMA,
            needs_approval=True,
            approval=ApprovalPolicy(timeout=timedelta(minutes=10), on_timeout="fail"),
        ),
    ],
)


def fresh(**overrides) -> RunState:
    return loop.new_state(
        SPEC, AgentInput(agent="bot", input="hello", **overrides), run_id="run-1", now=T0
    )


def reply(*calls: tuple[str, str], content: str | None = None) -> reducer.Replied:
    return reducer.Replied(
        ModelReply(
            content=content,
            tool_calls=[ModelToolCall(call_id=c, tool=t, arguments="{}") for c, t in calls],
            usage=Usage(model_calls=1, input_tokens=10, output_tokens=5, total_tokens=15),
        )
    )


def step_after(state: RunState, *events: reducer.Event, at: datetime = T0) -> loop.Step:
    """Fold `events` in order, then the next step (as the driver does)."""
    for event in events:
        reducer.fold(state, event, now=at)
    interrupts.settle(state, now=at)
    return reducer.advance(state, now=at)


def ran(*call_ids: str) -> reducer.ToolsRan:
    return reducer.ToolsRan(tuple(ToolOutcome(call_id=c, content=f"{c} done") for c in call_ids))


def test_a_run_goes_from_the_model_through_an_approval_to_its_answer():
    state = fresh()
    first = step_after(state)
    assert isinstance(first, loop.CallModel) and first.request.turn == 1
    assert state.status is RunStatus.RUNNING

    step = step_after(state, reply(("c1", "lookup"), ("c2", "refund")))
    assert isinstance(step, loop.RunTools)  # the call needing no approval runs meanwhile
    assert [c.call_id for c in step.calls] == ["c1"]

    step = step_after(state, ran("c1"))
    assert step == loop.AwaitDecisions(("c2",))
    assert state.status is RunStatus.AWAITING_APPROVAL

    approve = DecideInput(call_id="c2", decision="approve", approver="ann")
    step = step_after(state, reducer.Decided(approve, via="update"))
    assert isinstance(step, loop.RunTools) and [c.call_id for c in step.calls] == ["c2"]
    assert state.status is RunStatus.RUNNING

    step = step_after(state, ran("c2"))
    assert isinstance(step, loop.CallModel) and step.request.turn == 2
    assert [i.call_id for i in state.items if isinstance(i, ToolResult)] == ["c1", "c2"]

    assert step_after(state, reply(content="refunded")) == loop.Finish(RunStatus.COMPLETED)
    assert state.final_output == "refunded"
    assert state.usage.total_tokens == 30


def test_a_rejection_goes_back_to_the_model_and_the_call_never_runs():
    state = fresh()
    step_after(state, reply(("c1", "refund")))
    reject = DecideInput(call_id="c1", decision="reject", approver="ann", reason="too much")
    step = step_after(state, reducer.Decided(reject, via="signal"))
    assert isinstance(step, loop.CallModel)  # answered by the rejection: nothing to run
    answered = [i for i in state.items if isinstance(i, ToolResult)]
    assert len(answered) == 1 and "too much" in answered[0].content
    assert [i.via for i in state.items if isinstance(i, Decision)] == ["signal"]


def test_a_decision_the_run_cannot_take_is_refused_and_changes_nothing():
    state = fresh()
    step_after(state, reply(("c1", "refund")))
    before = state.model_dump(mode="json")
    for hostile in (
        DecideInput(call_id="c-unknown", decision="approve", approver="eve"),
        DecideInput(call_id="c1", decision="answer", approver="eve", result={"x": 1}),
    ):
        with pytest.raises(DecisionRefused):
            reducer.fold(state, reducer.Decided(hostile, via="update"), now=T0)
    assert state.model_dump(mode="json") == before
    assert reducer.advance(state, now=T0) == loop.AwaitDecisions(("c1",))


def test_a_passed_deadline_whose_policy_says_fail_ends_the_run_failed():
    state = fresh()
    assert step_after(state, reply(("c1", "wire"))) == loop.AwaitDecisions(("c1",))
    early = T0 + timedelta(minutes=5)
    assert step_after(state, reducer.DeadlinePassed(), at=early) == loop.AwaitDecisions(("c1",))
    late = T0 + timedelta(minutes=11)
    assert step_after(state, reducer.DeadlinePassed(), at=late) == loop.Finish(RunStatus.FAILED)
    assert state.error is not None and state.error.type == "ApprovalTimeout"
    assert state.error.message == "no decision on wire call c1 within 10 min"


def test_a_session_takes_messages_and_ends_once_idle():
    state = fresh(session=True)
    assert step_after(state, reply(content="hi")) == loop.AwaitInput()
    assert state.status is RunStatus.AWAITING_INPUT

    step = step_after(state, reducer.MessageArrived("and refunds?"))
    assert isinstance(step, loop.CallModel) and step.request.turn == 2
    assert isinstance(state.items[-1], UserMessage) and state.items[-1].content == "and refunds?"

    assert step_after(state, reply(content="none")) == loop.AwaitInput()
    step = step_after(state, reducer.SessionIdle(timedelta(minutes=30)))
    assert step == loop.Finish(RunStatus.COMPLETED)
    assert state.end_reason == "idle for 0:30:00"


def test_a_message_waits_while_a_call_awaits_its_result():
    state = fresh(session=True)
    step_after(state, reply(("c1", "lookup")))
    step = step_after(state, reducer.MessageArrived("hurry"))
    assert isinstance(step, loop.RunTools)  # a message may not come between a call and its result
    assert state.queued_messages == ["hurry"]
    step = step_after(state, ran("c1"))
    assert isinstance(step, loop.CallModel)
    assert state.queued_messages == [] and state.items[-1] == UserMessage(content="hurry")


def test_a_pause_holds_every_step_until_resumed_and_a_second_pause_changes_nothing():
    state = fresh()
    step = step_after(state, reducer.PauseAsked(by="ops", reason="incident"))
    assert step == loop.AwaitResume() and state.status is RunStatus.PAUSED
    log = list(state.pause_log)
    assert step_after(state, reducer.PauseAsked(by="mallory")) == loop.AwaitResume()
    assert state.pause_log == log and state.paused is not None and state.paused.by == "ops"
    step = step_after(state, reducer.ResumeAsked(by="ops"))
    assert isinstance(step, loop.CallModel) and state.status is RunStatus.RUNNING
    assert [p.action for p in state.pause_log] == ["pause", "resume"]


def test_an_interrupt_that_cut_the_model_call_ends_a_single_run_interrupted():
    state = fresh()
    step_after(state)
    reducer.fold(state, reducer.InterruptAsked("update", by="ann"), now=T0)
    reducer.fold(state, reducer.ModelCut(), now=T0)
    applied = interrupts.settle(state, now=T0)
    assert applied is not None and applied.model_call and applied.by == "ann"
    assert reducer.advance(state, now=T0) == loop.Finish(RunStatus.INTERRUPTED)


def test_a_model_failure_fails_the_run_with_its_error():
    state = fresh()
    error = ErrorInfo(type="BadRequest", message="no such model")
    assert step_after(state, reducer.ModelFailed(error)) == loop.Finish(RunStatus.FAILED)
    assert state.error == error


def test_a_cancel_or_a_failure_ends_the_run_whatever_it_waited_for():
    cancelled, failed = fresh(), fresh()
    step_after(cancelled, reply(("c1", "refund")))
    assert step_after(cancelled, reducer.Cancelled()) == loop.Finish(RunStatus.CANCELLED)
    error = ErrorInfo(type="ToolFailed", message="boom")
    assert step_after(failed, reducer.Failed(error)) == loop.Finish(RunStatus.FAILED)
    assert failed.error == error


def test_mcp_tools_that_cannot_be_listed_leave_the_run_its_tools():
    state = fresh()
    why = "server 'tickets' did not answer"
    reducer.fold(state, reducer.ToolsListed(why, "requested", None), now=T0)
    assert [t.name for t in state.agent.tools] == ["lookup", "refund", "wire"]
    assert isinstance(reducer.advance(state, now=T0), loop.CallModel)
