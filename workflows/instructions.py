"""Instructions a function gives (`Agent(instructions=FUNCTION)`): asked on the worker by
`call_model` before each model call, as the OpenAI Agents SDK asks before each call, with
the run's context; the text comes back on the reply and is recorded in the run
(`RunState.dynamic_instructions`), so a replay reads it from history and the run's state
says what the latest call was told. No activity of its own: the model call carries it.

Pure: no temporalio.
"""

from __future__ import annotations

from durable_agents.workflows.payloads import InstructionsScope, ModelReply
from durable_agents.workflows.state import RunState

MAX_INSTRUCTIONS_CHARS = 100_000
"""The most text an instructions function may give (more fails the run, with the reason:
history stays far below Temporal's payload limits)."""


def scope(state: RunState) -> InstructionsScope | None:
    """What `call_model` asks the agent's instructions function with; None: the agent's
    instructions are text."""
    if state.agent.instructions_function is None:
        return None
    return InstructionsScope(agent=state.agent.name, run_id=state.run_id, context=state.context)


def last_known(state: RunState) -> str:
    """The instructions the request carries until the function answers: the agent's text,
    or (for a function) what it gave last time, for the context window's estimates."""
    if state.agent.instructions_function is None:
        return state.agent.instructions
    return state.dynamic_instructions or ""


def record(state: RunState, reply: ModelReply) -> None:
    """Keep the text the function gave for the reply's call."""
    if reply.instructions is not None:
        state.dynamic_instructions = reply.instructions
