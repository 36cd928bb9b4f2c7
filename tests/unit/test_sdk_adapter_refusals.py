"""Each row of the adapter's refusal table (docs/how-to/openai-agents-adapter.md) that
tests/unit/test_sdk_adapter.py does not cover: refused by `from_sdk_agent` at definition
time, naming the agent and the feature; and the converted guardrails' definition."""

from __future__ import annotations

import dataclasses

import pytest
from agents import (
    Agent,
    AgentHooks,
    AgentOutputSchema,
    FunctionTool,
    GuardrailFunctionOutput,
    ModelSettings,
    OpenAIChatCompletionsModel,
    function_tool,
    handoff,
    input_guardrail,
    output_guardrail,
    tool_input_guardrail,
)
from agents.mcp import MCPServerStdio
from agents.model_settings import MCPToolChoice
from agents.tool_guardrails import ToolGuardrailFunctionOutput
from openai import AsyncOpenAI
from pydantic import BaseModel

from durable_agents.openai_agents import SDKAgentRefused, from_sdk_agent


@function_tool
def lookup(order_id: str) -> str:
    """Look an order up."""
    return order_id


@tool_input_guardrail
def no_secrets(data) -> ToolGuardrailFunctionOutput:
    return ToolGuardrailFunctionOutput.allow()


class Verdict(BaseModel):
    ok: bool


def _with(tool: FunctionTool, **changes) -> FunctionTool:
    return dataclasses.replace(tool, **changes)


def _refused(agent: Agent) -> str:
    with pytest.raises(SDKAgentRefused) as refused:
        from_sdk_agent(agent)
    return str(refused.value)


class _Hooks(AgentHooks):
    pass


@pytest.mark.parametrize(
    ("agent", "words"),
    [
        (Agent(name="a", tools=[_with(lookup, tool_input_guardrails=[no_secrets])]), "guardrails"),
        (Agent(name="a", tools=[_with(lookup, timeout_behavior="raise_exception")]), "timeout"),
        (Agent(name="a", tools=[_with(lookup, defer_loading=True)]), "defer_loading"),
        (Agent(name="a", prompt={"id": "pmpt_1"}), "prompt"),
        (
            Agent(
                name="a",
                model=OpenAIChatCompletionsModel(model="m", openai_client=AsyncOpenAI(api_key="x")),
            ),
            "model as an object",
        ),
        (Agent(name="a", hooks=_Hooks()), "hooks"),
        (
            Agent(name="a", mcp_servers=[MCPServerStdio(params={"command": "true"})]),
            "mcp_servers",
        ),
        (Agent(name="a", output_type=AgentOutputSchema(Verdict)), "schema object"),
        (
            Agent(name="a", handoffs=[handoff(Agent(name="b"), is_enabled=False)]),
            "is_enabled",
        ),
        (
            Agent(name="a", handoffs=[handoff(Agent(name="b"), nest_handoff_history=True)]),
            "nest_handoff_history",
        ),
        (
            Agent(
                name="a",
                tools=[Agent(name="b").as_tool("b", "B", is_enabled=lambda ctx, agent: True)],
            ),
            "is_enabled",
        ),
        (
            Agent(
                name="a",
                model_settings=ModelSettings(tool_choice=MCPToolChoice(server_label="s", name="t")),
            ),
            "tool_choice",
        ),
    ],
)
def test_each_refusal_of_the_table_names_the_agent_and_the_feature(agent, words):
    said = _refused(agent)
    assert said.startswith("SDK agent 'a") and words in said, said


@input_guardrail
def polite(ctx, agent, message) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)


@output_guardrail(name="no_leaks")
async def leaks(ctx, agent, output) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)


def test_sdk_guardrails_become_ours_with_their_names_and_tripwire_actions():
    agent = Agent(name="a", input_guardrails=[polite], output_guardrails=[leaks])
    converted = from_sdk_agent(agent, guardrail_refusals={"no_leaks": "Not that."})
    [given], [taken] = converted.input_guardrails, converted.output_guardrails
    assert (given.name, given.kind, given.on_trip, given.refusal) == (
        "polite",
        "input",
        "end",
        None,
    )
    assert (taken.name, taken.kind, taken.on_trip, taken.refusal) == (
        "no_leaks",
        "output",
        "refuse",
        "Not that.",
    )
    spec = converted.spec()
    assert spec.output_guardrails[0].on_trip == "refuse"
    assert "on_trip" not in spec.input_guardrails[0].model_dump(mode="json")
