"""An agent whose tool has a code rule and an evaluator (its run is the `approval_rules`
scenario history, tests/integration/test_evaluators.py; `tests/unit/test_replay.py`
replays it with the verdicts it recorded)."""

from __future__ import annotations

from durable_agents import Agent, ApprovalCondition, ApprovalPolicy, Verdict, tool
from examples.rules_agent import in_oakland


def screen_lookup(arguments: dict, context: object) -> Verdict:
    """Weather lookups are harmless: approved (within the policy's limits)."""
    return Verdict(decision="approve", reason="a weather lookup is harmless")


@tool(
    name="get_weather",
    needs_approval=ApprovalPolicy(
        rule=in_oakland,
        evaluator=screen_lookup,
        auto_approve_within=[ApprovalCondition(field="city", op="contains", value="Oakland")],
    ),
)
def screened_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"The weather in {city} is mild."


ruled = Agent(
    name="ruled",
    instructions="Answer questions about the weather with the get_weather tool.",
    model="gpt-4o-mini",
    tools=[screened_weather],
)
