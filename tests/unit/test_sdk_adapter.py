"""`from_sdk_agent`: what it maps from an OpenAI Agents SDK agent, and what it refuses
with a reason naming the agent and the feature."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agents import (
    Agent,
    GuardrailFunctionOutput,
    ModelSettings,
    WebSearchTool,
    function_tool,
    handoff,
    input_guardrail,
)
from agents.extensions import handoff_filters
from durable_agents.activities.approval_rules import ApprovalContext
from durable_agents.activities.tool import ToolContext
from pydantic import BaseModel

from durable_agents.openai_agents import SDKAgentRefused, from_sdk_agent


@function_tool
def lookup(order_id: str) -> str:
    """Look an order up.

    Args:
        order_id: The order's id.
    """
    return f"order {order_id}"


@function_tool
def whoami(ctx: Any) -> str:
    """Who the run is for."""
    return str(ctx.context)


@input_guardrail
def polite(ctx, agent, message) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)


class Verdict(BaseModel):
    ok: bool


def test_a_function_tool_keeps_its_schema_and_runs_through_the_sdk():
    agent = from_sdk_agent(
        Agent(
            name="a",
            instructions="Help.",
            model="m",
            tools=[lookup],
            model_settings=ModelSettings(temperature=0.3, max_tokens=100),
            output_type=Verdict,
        )
    )
    [tool] = agent.tools
    spec = tool.spec()
    assert spec.description == "Look an order up."
    assert spec.parameters == lookup.params_json_schema
    assert spec.parameters["properties"]["order_id"]["description"] == "The order's id."
    assert (agent.instructions, agent.model, agent.output_type) == ("Help.", "m", Verdict)
    assert (agent.model_settings.temperature, agent.model_settings.max_output_tokens) == (0.3, 100)
    ctx = ToolContext(idempotency_key="k", run_id="r", call_id="c1", agent="a", context={"x": 1})
    result = asyncio.run(tool.invoke(tool.arguments(), ctx, '{"order_id": "A1"}'))
    assert result == "order A1"


def test_needs_approval_true_is_our_approval_and_a_function_our_code_rule():
    tool = function_tool(needs_approval=True)(_refund)
    assert from_sdk_agent(Agent(name="a", tools=[tool])).tools[0].approval is not None
    seen = []

    async def rule(ctx, args, call_id) -> bool:
        seen.append((ctx.context, call_id))
        return args["order_id"].startswith("OAK")

    def sync_rule(ctx, args, _):  # the SDK example's shape: a plain lambda works too
        return "Oakland" in args["order_id"]

    for sdk_rule in (rule, sync_rule):
        sdk_tool = function_tool(needs_approval=sdk_rule)(_refund)
        [converted] = from_sdk_agent(Agent(name="a", tools=[sdk_tool])).tools
        policy = converted.approval
        assert policy is not None and policy.rule is not None and policy.rule_function
        assert policy.rule.endswith(sdk_rule.__qualname__)
        ctx = ApprovalContext(run_id="r", call_id="c9", agent="a", tool="t", context={"k": 1})
        asks = asyncio.run(policy.rule_function({"order_id": "OAK-1 Oakland"}, ctx))
        waves = asyncio.run(policy.rule_function({"order_id": "P-2"}, ctx))
        assert (asks, waves) == (True, False)
    assert seen == [({"k": 1}, "c9"), ({"k": 1}, "c9")]


def _refund(order_id: str) -> str:
    """Refund an order."""
    return "done"


def test_handoffs_and_agents_as_tools_reference_the_converted_agents():
    billing = Agent(name="billing", handoff_description="Refunds.")
    helper = Agent(name="helper")
    triage = Agent(
        name="triage",
        tools=[helper.as_tool(tool_name="ask_helper", tool_description="Ask.")],
        handoffs=[billing, handoff(helper, input_filter=handoff_filters.remove_all_tools)],
    )
    billing.handoffs.append(triage)
    converted = from_sdk_agent(triage)
    ask, to_billing, to_helper = converted.all_tools()
    assert (ask.name, ask.description, ask.runs_agent) == ("ask_helper", "Ask.", "helper")
    assert to_billing.handoff == "billing" and to_billing.description.endswith("Refunds.")
    assert to_helper.input_filter == "remove_tools"
    [back] = to_billing.target.handoffs  # back to an agent under way: by name
    assert (back.handoff, back.target) == ("triage", None)


def _refused(agent: Agent) -> str:
    with pytest.raises(SDKAgentRefused) as refused:
        from_sdk_agent(agent)
    return str(refused.value)


@pytest.mark.parametrize(
    ("agent", "words"),
    [
        (Agent(name="a", tools=[WebSearchTool()]), "tool WebSearchTool"),
        (Agent(name="a", tool_use_behavior="stop_on_first_tool"), "tool_use_behavior"),
        (Agent(name="a", reset_tool_choice=False), "reset_tool_choice"),
        (Agent(name="a", model_settings=ModelSettings(truncation="auto")), "truncation"),
        (
            Agent(name="a", handoffs=[handoff(Agent(name="b"), input_filter=lambda d: d)]),
            "input_filter",
        ),
        (
            Agent(name="a", tools=[function_tool(is_enabled=lambda c, a: True)(_refund)]),
            "is_enabled",
        ),
        (
            Agent(name="a", tools=[Agent(name="b").as_tool("b", "B", max_turns=3)]),
            "as_tool(max_turns=...)",
        ),
        (Agent(name="a", handoffs=[Agent(name="a2"), Agent(name="a2")]), "two different"),
    ],
)
def test_what_cannot_be_carried_over_is_refused_naming_the_agent_and_the_feature(agent, words):
    said = _refused(agent)
    assert said.startswith("SDK agent 'a") and words in said
