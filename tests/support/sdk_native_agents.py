"""An OpenAI Agents SDK agent written as the SDK's documentation writes dynamic
instructions (`instructions=` a function of the run context and the agent), converted by
`from_sdk_agent` (tests/integration/test_sdk_native_gaps.py, issue 46)."""

from __future__ import annotations

from dataclasses import dataclass

from agents import Agent, RunContextWrapper

from durable_agents.openai_agents import from_sdk_agent

ASKED: list[str] = []
"""The names the instructions function was asked with, in order."""


@dataclass
class UserContext:
    name: str
    uid: str


def dynamic_instructions(context: RunContextWrapper[UserContext], agent: Agent[UserContext]) -> str:
    ASKED.append(context.context.name)
    if context.context.uid == "banned":
        raise PermissionError(f"{context.context.name} may not use {agent.name}")
    return f"The user's name is {context.context.name}. Help them with their questions."


sdk_helper = Agent[UserContext](
    name="sdk_helper",
    instructions=dynamic_instructions,
    model="helper-model",
)

helper = from_sdk_agent(sdk_helper, context_type=UserContext)
