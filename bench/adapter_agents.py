"""The same agent twice, for `bench.adapter`: written natively (`native_echo`) and
written with the OpenAI Agents SDK, converted by `from_sdk_agent` (`openai_echo`). Both
have one no-op async tool, `echo`, and the same instructions and model."""

from __future__ import annotations

import dataclasses

from agents import Agent as SDKAgent
from agents import function_tool
from durable_agents.activities import Agent, tool

from durable_agents.openai_agents import from_sdk_agent

INSTRUCTIONS = "Echo what you are asked to."
TURNS = 200
"""max_turns of both: the responder, not the agent, ends a run."""


@tool
async def echo(text: str) -> str:
    """Return the text.

    Args:
        text: What to return.
    """
    return text


native_echo = Agent(
    name="native_echo", instructions=INSTRUCTIONS, model="scripted", tools=[echo], max_turns=TURNS
)


@function_tool(name_override="echo")
async def openai_echo_tool(text: str) -> str:
    """Return the text.

    Args:
        text: What to return.
    """
    return text


openai_echo = dataclasses.replace(
    from_sdk_agent(
        SDKAgent(
            name="openai_echo",
            instructions=INSTRUCTIONS,
            model="scripted",
            tools=[openai_echo_tool],
        )
    ),
    max_turns=TURNS,
)
