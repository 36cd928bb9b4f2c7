"""What the approval inbox shows on demand about the run that holds a call
(`GET /inbox/context/{run_id}`): its summary as the Temporal UI shows it, its status,
the conversation that led to the call (values of sensitive arguments masked), and its
link in the Temporal UI.

Read only when a person asks (a button on the call), with a describe, the `get_status`
query and the `get_state` query (page by page for a large run): nothing is written to
the run's history, and an open inbox costs nothing more until someone asks.
"""

from __future__ import annotations

from typing import Literal

from durable_agents.client import render, ui_links
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    Item,
    ToolResult,
    UserMessage,
)
from durable_agents.workflows.state import RunState
from pydantic import BaseModel

MAX_ENTRIES = 60
"""Conversation entries answered at most: the latest ones (the call is at the end)."""
MAX_TEXT = 4000
"""Characters of one entry answered at most; a longer one is cut, and says so."""


class Entry(BaseModel):
    """One line of the conversation: who said or did what."""

    kind: Literal["user", "assistant", "call", "result", "decision", "other"]
    text: str
    cut: int = 0
    """Characters left out of `text` (it was longer than `MAX_TEXT`)."""


class RunContext(BaseModel):
    """The context of a decision, as `GET /inbox/context/{run_id}` answers it."""

    run_id: str
    summary: str | None
    """The run's summary in the Temporal UI (its agent and its input's first words)."""
    status: str
    """One line: run, status, turn, pending approvals, tokens (as `agentctl status`)."""
    conversation: list[Entry]
    """The latest `MAX_ENTRIES` entries of the conversation, oldest first."""
    earlier: int
    """Entries before those, not answered (`agentctl state RUN_ID` prints them all)."""
    ui_url: str | None
    """The run in the Temporal UI; None when the gateway does not know the UI's address."""


async def run_context(agents: AgentClient, run_id: str, *, ui: str | None) -> RunContext:
    """Read the context of `run_id` now (see the module docstring)."""
    with agents.translating(run_id):
        described = await agents.client.get_workflow_handle(run_id).describe()
        summary = await described.static_summary()
    status = await agents.status(run_id)
    entries = conversation(await agents.state(run_id))
    shown = entries[-MAX_ENTRIES:]
    return RunContext(
        run_id=run_id,
        summary=summary,
        status=render.status(run_id, status),
        conversation=shown,
        earlier=len(entries) - len(shown),
        ui_url=ui_links.run(ui, agents.client.namespace, run_id) if ui else None,
    )


def conversation(state: RunState) -> list[Entry]:
    """Every item of the run as entries; a tool call's sensitive values masked."""
    hidden: dict[str, list[str]] = {}
    for item in state.items:
        for call in item.tool_calls if isinstance(item, AssistantMessage) else []:
            tool = state.agent.tool(call.tool)
            hidden[call.call_id] = tool.sensitive if tool is not None else [render.ALL_VALUES]
    return [entry for item in state.items for entry in _entries(item, hidden)]


def _entries(item: Item, hidden: dict[str, list[str]]) -> list[Entry]:
    if isinstance(item, UserMessage):
        return [_entry("user", item.content)]
    if isinstance(item, AssistantMessage):
        said = [_entry("assistant", item.content)] if item.content else []
        for call in item.tool_calls:
            shown = render.hidden_arguments(call.arguments, hidden.get(call.call_id, []))
            said.append(_entry("call", f"{call.tool}({shown}) [{call.call_id}]"))
        return said
    if isinstance(item, ToolResult):
        return [_entry("result", f"[{item.call_id}] {item.content}")]
    if isinstance(item, Decision):
        return [_entry("decision", render.decision(item, sensitive=hidden.get(item.call_id, [])))]
    return [_entry("other", item.type)]


def _entry(kind: str, text: str) -> Entry:
    cut = max(0, len(text) - MAX_TEXT)
    return Entry.model_validate({"kind": kind, "text": text[:MAX_TEXT], "cut": cut})
