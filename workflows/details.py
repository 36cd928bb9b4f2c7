"""The run's "current details" shown in the Temporal UI: short markdown, pure."""

from __future__ import annotations

from workflows import decisions
from workflows.state import AssistantMessage, RunState, ToolResult

SHORT = 80


def render(state: RunState) -> str:
    """Status, turn, pending approvals (tool and short arguments), last tool result, usage."""
    lines = [
        f"**{state.status.value}** · {state.agent.name} · turn {state.turn} · "
        f"{state.usage.total_tokens} tokens · {state.usage.model_calls} model calls"
    ]
    pending = decisions.pending_calls(state)
    if pending:
        lines.append("")
        lines.append(f"**Pending approvals ({len(pending)})**")
        lines.extend(
            f"- `{c.tool}` `{_short(c.arguments)}` — call id `{c.call_id}`" for c in pending
        )
    result = next((i for i in reversed(state.items) if isinstance(i, ToolResult)), None)
    if result is not None:
        tool = _tool_of(state, result.call_id)
        marker = " (error)" if result.is_error else ""
        lines.append("")
        lines.append(f"**Last tool result** `{tool}`{marker}: {_short(result.content)}")
    if state.queued_messages:
        lines.append("")
        lines.append(f"**Queued user messages:** {len(state.queued_messages)}")
    if state.error is not None:
        lines.append("")
        lines.append(f"**Error** `{state.error.type}`: {_short(state.error.message, 200)}")
    return "\n".join(lines)


def _tool_of(state: RunState, call_id: str) -> str:
    for item in reversed(state.items):
        if isinstance(item, AssistantMessage):
            for call in item.tool_calls:
                if call.call_id == call_id:
                    return call.tool
    return "?"


def _short(text: str, limit: int = SHORT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
