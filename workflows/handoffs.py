"""Handoffs: the run goes on with another agent, inside the same run. Pure.

A handoff is a tool of the agent whose `ToolSpec.handoff` names the agent it hands
over to (`transfer_to_<agent>`, `activities.agent.handoff`). The model calls it like
any tool, and like any tool it may need approval first; taking it switches the run's
agent from the next model call: instructions, tools, model, model settings, output
type. The conversation carries over; a `Handoff` item records each switch. The run
keeps its id, its budgets and its `max_turns`, and its `AgentName` stays the agent it
started as (`first_agent`), so operators' saved searches keep finding it.

Of several handoff calls in one reply, the first is taken and the others answered
as not taken (a run has one agent at a time).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from durable_agents.workflows import mcp_tools, settings
from durable_agents.workflows.state import AgentSpec, Handoff, RunState, ToolCall

REASON_CHARS = 2_000
"""Characters of a handoff call's arguments kept as its reason."""


def target(state: RunState, call: ToolCall) -> str | None:
    """The agent `call` hands the run over to, if it is a call of a handoff tool."""
    tool = state.agent.tool(call.tool)
    return tool.handoff if tool is not None else None


def taken(state: RunState, calls: Sequence[ToolCall]) -> ToolCall | None:
    """The handoff call of a batch that is taken: the first."""
    return next((c for c in calls if target(state, c) is not None), None)


def result(to_agent: str) -> str:
    """What the model is told of a handoff taken (the SDK's form)."""
    return json.dumps({"assistant": to_agent})


def not_taken(call: ToolCall, chosen: ToolCall, to_agent: str) -> str:
    """What the model is told of a handoff call that was not taken."""
    return (
        f"Not taken: call {chosen.call_id} of the same reply handed the conversation "
        f"over to {to_agent} (one handoff at a time)."
    )


def take(state: RunState, call: ToolCall, spec: AgentSpec, *, now: datetime) -> None:
    """Switch the run to `spec` (the agent `call` hands over to, as a worker serves it
    now), recording the handoff. The new agent's own model settings apply (the start
    input's overrides were for the first agent); MCP tools come listed with `spec`."""
    state.items.append(
        Handoff(
            call_id=call.call_id,
            from_agent=state.agent.name,
            to_agent=spec.name,
            turn=state.turn,
            reason=reason(call),
            at=now,
        )
    )
    state.agent = spec
    state.model_settings = settings.for_run(spec, None)
    state.tools_listed_messages = mcp_tools.user_messages(state) if spec.mcp_servers else None
    state.tools_refresh = None


def reason(call: ToolCall) -> str | None:
    """The call's `reason` argument if it has one, else its arguments (None if empty)."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        arguments = None
    if isinstance(arguments, dict):
        said = arguments.get("reason")
        if isinstance(said, str) and said:
            return said[:REASON_CHARS]
        if not arguments:
            return None
    text = call.arguments.strip()
    return text[:REASON_CHARS] if text and text != "{}" else None


def first_agent(state: RunState) -> str:
    """The agent the run started as (its `AgentName`)."""
    first = next((i for i in state.items if isinstance(i, Handoff)), None)
    return first.from_agent if first is not None else state.agent.name


def handoffs(state: RunState) -> list[Handoff]:
    """The run's handoffs, oldest first."""
    return [i for i in state.items if isinstance(i, Handoff)]
