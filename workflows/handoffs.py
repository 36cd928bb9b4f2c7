"""Handoffs: the run goes on with another agent, inside the same run. Pure.

A handoff is a tool of the agent whose `ToolSpec.handoff` names the agent it hands
over to (`transfer_to_<agent>`, `activities.handoff.handoff`). The model calls it like
any tool, and like any tool it may need approval first; taking it switches the run's
agent from the next model call: instructions, tools, model, model settings, output
type. The conversation carries over; a `Handoff` item records each switch. The run
keeps its id, its budgets and its `max_turns`, and its `AgentName` stays the agent it
started as (`first_agent`), so operators' saved searches keep finding it.

Of several handoff calls in one reply, only the first can be taken (once approved, if
it needs approval); the others are answered as not taken. Taking it answers the
reply's other calls that have not run (waiting for a decision) as not run: they were
the old agent's, judged by its policies, and the new agent may not have them.
`always` rules given before a handoff do not decide calls after it
(`decisions.standing_rule`), and the new agent's input guardrails check the user's
latest message (`guardrails.due`). A handoff that would break the run's budgets (a
token budget with a target that bounds no reply, a cost budget with a target
whose model has no price, or prices in another currency) is refused (`refusal`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from durable_agents.workflows import mcp_tools, settings
from durable_agents.workflows.agent_spec import AgentSpec
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Handoff,
    Item,
    ToolCall,
    ToolResult,
    UserMessage,
)
from durable_agents.workflows.state import RunState

REASON_CHARS = 2_000
"""Characters of a handoff call's arguments kept as its reason."""


def target(state: RunState, call: ToolCall) -> str | None:
    """The agent `call` hands the run over to, if it is a call of a handoff tool."""
    tool = state.agent.tool(call.tool)
    return tool.handoff if tool is not None else None


def taken(state: RunState, calls: Sequence[ToolCall]) -> ToolCall | None:
    """The handoff call of a reply (its `calls`) that can be taken: the first."""
    return next((c for c in calls if target(state, c) is not None), None)


def refusal(state: RunState, spec: AgentSpec) -> str | None:
    """Why the run cannot go on with `spec` under its budgets, or None."""
    if state.token_budget is not None and spec.model_settings.max_output_tokens is None:
        return (
            f"this run has a token budget and {spec.name} does not bound its replies "
            "(model_settings.max_output_tokens)"
        )
    here, there = state.agent.price, spec.price
    if state.cost_budget is not None and there is None:
        return f"this run has a cost budget and {spec.name}'s model has no price"
    if here is not None and there is not None and here.currency != there.currency:
        return f"this run's cost is in {here.currency}, {spec.name}'s in {there.currency}"
    return None


def result(to_agent: str) -> str:
    """What the model is told of a handoff taken (the SDK's form)."""
    return json.dumps({"assistant": to_agent})


def not_taken(call: ToolCall, chosen: ToolCall, to_agent: str) -> str:
    """What the model is told of a handoff call that was not taken."""
    return (
        f"Not taken: call {chosen.call_id} of the same reply handed the conversation "
        f"over to {to_agent} (one handoff at a time)."
    )


def filtered_from(state: RunState, call: ToolCall) -> list[Item]:
    """What `call`'s handoff gives its input filter in code: the conversation so far
    (none for any other call)."""
    tool = state.agent.tool(call.tool)
    if tool is None or tool.input_filter_function is None:
        return []
    return [state.items[n] for n in conversation(state)]


def conversation(state: RunState) -> list[int]:
    """The positions in the run's items of its user messages, replies and tool results:
    what an input filter in code chooses from (`ToolRequest.conversation`)."""
    kinds = UserMessage | AssistantMessage | ToolResult
    return [n for n, item in enumerate(state.items) if isinstance(item, kinds)]


def take(
    state: RunState,
    call: ToolCall,
    spec: AgentSpec,
    *,
    now: datetime,
    left_out: list[int] | None = None,
) -> None:
    """Switch the run to `spec` (the agent `call` hands over to, as a worker serves it
    now), recording the handoff, after answering the reply's calls that have not run.
    The new agent's own model settings apply (the start input's overrides were for the
    first agent); MCP tools come listed with `spec`. `left_out`: what an input filter in
    code left out, as positions in the conversation it was sent (which only grew since)."""
    given = conversation(state)
    out = None if left_out is None else [given[k] for k in left_out if 0 <= k < len(given)]
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    reply = next(i for i in reversed(state.items) if isinstance(i, AssistantMessage))
    for other in reply.tool_calls:
        if other.call_id not in answered:
            answered.add(other.call_id)
            state.items.append(
                ToolResult(
                    call_id=other.call_id,
                    content=(
                        f"Not run: call {call.call_id} of the same reply handed the "
                        f"conversation over to {spec.name}."
                    ),
                    is_error=True,
                )
            )
    if state.first_agent is None:
        state.first_agent = state.agent.name
    mcp_tools.remember_leaving(state)
    tool = state.agent.tool(call.tool)
    state.items.append(
        Handoff(
            call_id=call.call_id,
            from_agent=state.agent.name,
            to_agent=spec.name,
            turn=state.turn,
            reason=reason(call),
            input_filter=tool.input_filter if tool is not None else None,
            left_out=sorted(set(out)) if out is not None else None,
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
    except (ValueError, RecursionError):
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
    """The agent the run started as (its `AgentName`): the one it had when it first
    handed over, else its agent. Never read from `Handoff` items, which a snapshot
    can say anything in."""
    return state.first_agent or state.agent.name


def latest(state: RunState) -> int | None:
    """The index of the run's latest `Handoff` item, if any."""
    return next(
        (n for n in range(len(state.items) - 1, -1, -1) if isinstance(state.items[n], Handoff)),
        None,
    )
