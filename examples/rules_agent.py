"""Example agent: an approval rule in code where a data rule fails open.

The OpenAI Agents SDK's `human_in_the_loop.py` asks a person before it looks up the
weather in Oakland: `needs_approval=lambda ctx, args, _: "Oakland" in args["city"]`.
Ported as data (`op="in"` over a list of spellings, the `oakland_data_rule` agent
below), the rule lets "Oakland, USA" through: no list of spellings says what the
organisation means. The code rule (`in_oakland`) says it, and runs on the worker; its
verdict is recorded on the call (`ToolCall.rule_verdict`), so replay, resume and the
audit see the same verdict.

It has no scripted model: serve it with a model of your own,
`OPENAI_API_KEY=... .venv/bin/python worker.py --dev --agents examples.rules_agent`
(tests/integration/test_approval_rules.py runs it against a scripted one).
"""

from __future__ import annotations

import asyncio

from durable_agents import Agent, ApprovalCondition, ApprovalContext, ApprovalPolicy, tool

FORECASTS = {"oakland": "foggy, 14 °C", "paris": "sunny, 21 °C"}


def in_oakland(arguments: dict, context: ApprovalContext) -> bool:
    """Ask a person for any city in Oakland, however it is written."""
    return "oakland" in str(arguments.get("city", "")).casefold()


async def in_oakland_async(arguments: dict, context: ApprovalContext) -> bool:
    """The same rule, async (it could ask a service: here it yields once)."""
    await asyncio.sleep(0)
    return in_oakland(arguments, context)


def _forecast(city: str) -> str:
    known = next((f for name, f in FORECASTS.items() if name in city.casefold()), "mild")
    return f"The weather in {city} is {known}."


@tool(needs_approval=in_oakland)
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return _forecast(city)


@tool(name="get_weather", needs_approval=in_oakland_async)
def get_weather_async_rule(city: str) -> str:
    """Today's weather in a city."""
    return _forecast(city)


@tool(
    name="get_weather",
    needs_approval=ApprovalPolicy(
        when=[ApprovalCondition(field="city", op="in", value=["Oakland", "Oakland, CA"])]
    ),
)
def get_weather_data_rule(city: str) -> str:
    """Today's weather in a city."""
    return _forecast(city)


INSTRUCTIONS = "Answer questions about the weather with the get_weather tool."

oakland_rule = Agent(
    name="oakland_rule", instructions=INSTRUCTIONS, model="gpt-4o-mini", tools=[get_weather]
)
oakland_rule_async = Agent(
    name="oakland_rule_async",
    instructions=INSTRUCTIONS,
    model="gpt-4o-mini",
    tools=[get_weather_async_rule],
)
oakland_data_rule = Agent(
    name="oakland_data_rule",
    instructions=INSTRUCTIONS,
    model="gpt-4o-mini",
    tools=[get_weather_data_rule],
)
"""The port as data: it fails open on "Oakland, USA" (kept to show why)."""
