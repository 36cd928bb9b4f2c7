"""What the model is sent of a long conversation (workflows.context), without Temporal:
estimates, when a compaction is due, the views each strategy makes, and a provider's
refusal."""

from __future__ import annotations

from datetime import UTC, datetime

from durable_agents.workflows import context, loop
from durable_agents.workflows.contract import ERROR_MODEL_REQUEST
from durable_agents.workflows.payloads import AgentInput, ModelReply, ModelToolCall, ToolOutcome
from durable_agents.workflows.state import (
    AgentSpec,
    ContextPolicy,
    ErrorInfo,
    ToolResult,
    ToolSpec,
    Usage,
    UserMessage,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)
BIG = "x" * 3_600  # about 900 tokens


def run(strategy: str = "stub_tool_outputs", *, turns: int = 4, keep: int = 2):
    spec = AgentSpec(
        name="a",
        instructions="be brief",
        model="m",
        tools=[ToolSpec(name="read", description="", parameters={"type": "object"})],
        context_policy=ContextPolicy(
            max_input_tokens=3_500, strategy=strategy, keep_recent_turns=keep
        ),
    )
    state = loop.new_state(spec, AgentInput(agent="a", input="start"), run_id="r", now=T0)
    for n in range(turns):
        call = ModelToolCall(call_id=f"c{n}", tool="read", arguments="{}")
        loop.record_model_reply(state, ModelReply(tool_calls=[call]), now=T0)
        loop.record_tool_outcomes(state, [ToolOutcome(call_id=f"c{n}", content=BIG)], now=T0)
    return state


def test_nothing_is_compacted_below_the_window():
    state = run(turns=1)
    assert context.due(state, loop.model_request(state)) is None
    assert loop.model_request(state).items == state.items


def test_stubs_replace_the_older_outputs_and_the_run_keeps_them():
    state = run(turns=4)
    step = loop.next_step(state)
    assert isinstance(step, loop.Compact)
    planned = step.compaction
    assert planned.stubbed == ["c0", "c1"] and planned.tokens_after < planned.tokens_before
    context.record(state, planned, now=T0)
    sent = loop.model_request(state).items
    results = [i for i in sent if isinstance(i, ToolResult)]
    assert [r.content.startswith("[output of this call removed") for r in results] == [
        True,
        True,
        False,
        False,
    ]
    assert all(i.content == BIG for i in state.items if isinstance(i, ToolResult))
    assert isinstance(loop.next_step(state), loop.CallModel)  # once per call


def test_when_stubs_are_not_enough_the_older_turns_are_left_out():
    state = run(turns=6)
    for item in state.items:
        if isinstance(item, UserMessage):
            item.content = "y" * 8_000  # a long first message: stubs cannot help
    planned = context.due(state, loop.model_request(state))
    assert planned is not None and planned.dropped
    context.record(state, planned, now=T0)
    sent = loop.model_request(state).items
    assert sent[0].content.startswith("[") and "left out to save context" in sent[0].content
    assert all(not (isinstance(i, UserMessage) and i.content.startswith("y")) for i in sent)


def test_a_summary_replaces_the_older_turns_once_the_model_wrote_it():
    state = run("summarize", turns=4)
    step = loop.next_step(state)
    assert isinstance(step, loop.Summarize)
    assert step.request.tools == [] and step.request.instructions == context.SUMMARY_INSTRUCTIONS
    [transcript] = step.request.items
    assert "USER: start" in transcript.content and "read({}) [c0]" in transcript.content
    reply = ModelReply(
        content="the user read two parts", usage=Usage(model_calls=1, total_tokens=9)
    )
    context.record(state, step.compaction, now=T0, summary=reply)
    sent = loop.model_request(state).items
    assert sent[0].content == f"{context.SUMMARY_HEADER}\nthe user read two parts"
    assert state.usage.model_calls == 1  # the summary's call is counted


def test_a_refusal_as_too_long_compacts_once_more_then_fails():
    state = run(turns=2)  # below the estimate: no compaction of its own
    refused = ErrorInfo(
        type=ERROR_MODEL_REQUEST,
        message="too long",
        details={"provider_code": "context_length_exceeded"},
    )
    assert loop.model_failed(state, refused, now=T0) is True
    step = loop.next_step(state)
    assert isinstance(step, loop.Compact) and step.compaction.reason == "context_length_exceeded"
    context.record(state, step.compaction, now=T0)
    assert loop.model_failed(state, refused, now=T0) is False
    assert state.status.value == "failed"


def test_another_refusal_fails_at_once():
    state = run(turns=2)
    other = ErrorInfo(
        type=ERROR_MODEL_REQUEST, message="bad key", details={"provider_code": "invalid_api_key"}
    )
    assert loop.model_failed(state, other, now=T0) is False and state.status.value == "failed"
