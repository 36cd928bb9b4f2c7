"""The token budget without Temporal: the bound of the next call, when a run stops, and
who may set the budget."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from durable_agents.workflows import budget, loop, resume_trust
from durable_agents.workflows.agent_spec import AgentSpec, ModelSettings, OutputSpec, ToolSpec
from durable_agents.workflows.payloads import AgentInput, ModelReply, ModelToolCall, ToolOutcome
from durable_agents.workflows.run_items import Usage
from durable_agents.workflows.state import RunStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def spec(token_budget: int | None = 1_000, max_output: int | None = 100) -> AgentSpec:
    return AgentSpec(
        name="a",
        instructions="be brief",
        model="m",
        tools=[ToolSpec(name="add", description="", parameters={"type": "object"})],
        token_budget=token_budget,
        model_settings=ModelSettings(max_output_tokens=max_output),
    )


def run(asked: int | None = None, **options):
    start = AgentInput(agent="a", input="hi", token_budget=asked)
    return loop.new_state(spec(**options), start, run_id="r", now=T0)


def test_the_first_call_is_bounded_by_the_bytes_of_the_request_and_its_max_output():
    state = run()
    step = loop.next_step(state)
    assert isinstance(step, loop.CallModel)
    bound = budget.next_call_bound(state, step.request)
    assert bound > 100 + len("be brief") + len("hi")  # instructions, tools, message, output


def test_later_calls_start_from_what_the_provider_counted():
    state = run()
    call = ModelToolCall(call_id="c1", tool="add", arguments="{}")
    usage = Usage(model_calls=1, input_tokens=300, output_tokens=20, total_tokens=320)
    loop.record_model_reply(state, ModelReply(tool_calls=[call], usage=usage), now=T0)
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c1", content="x" * 50)], now=T0)
    request = loop.model_request(state)
    assert budget.next_call_bound(state, request) == 320 + 50 + budget.PER_MESSAGE + 100


def test_the_run_stops_before_a_call_that_could_pass_the_budget():
    state = run(asked=400)
    usage = Usage(model_calls=1, input_tokens=150, output_tokens=20, total_tokens=170)
    call = ModelToolCall(call_id="c1", tool="add", arguments="{}")
    loop.record_model_reply(state, ModelReply(tool_calls=[call], usage=usage), now=T0)
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c1", content="3")], now=T0)
    assert loop.next_step(state) == loop.Finish(RunStatus.BUDGET_EXCEEDED)
    loop.finish(state, RunStatus.BUDGET_EXCEEDED, now=T0)
    bound = 170 + len("3") + budget.PER_MESSAGE + 100  # what it read, what it adds, max out
    assert state.error.details == {"budget": 400, "used": 170, "next_call_bound": bound}


def test_a_run_can_lower_the_agent_s_budget_but_not_lift_it():
    assert run(asked=500).token_budget == 500
    assert run(asked=5_000).token_budget == 1_000
    assert run(asked=None).token_budget == 1_000
    assert run(asked=300, token_budget=None).token_budget == 300


def test_a_budget_needs_a_bound_on_each_reply():
    with pytest.raises(ValueError, match=r"needs model_settings\.max_output_tokens"):
        run(asked=300, token_budget=None, max_output=None)


def test_a_resumed_snapshot_cannot_lift_the_agent_s_budget():
    state = run(asked=500)
    forged = state.model_copy(update={"token_budget": None})
    resumed = loop.resume(forged, run_id="r2", workflow_run="w2", now=T0)
    assert resume_trust.reground(resumed, spec(), now=T0).token_budget == 1_000
    honest = loop.resume(state, run_id="r3", workflow_run="w3", now=T0)
    assert resume_trust.reground(honest, spec(), now=T0).token_budget == 500


def test_the_first_call_of_a_typed_agent_counts_the_schema_it_sends():
    plain = run()
    typed = run()
    typed.agent.output = OutputSpec(
        name="big",
        json_schema={"type": "object", "description": "x" * 5_000},
        sha256="0" * 64,
    )
    request = loop.model_request(plain)
    assert budget.next_call_bound(typed, request) >= budget.next_call_bound(plain, request) + 5_000
