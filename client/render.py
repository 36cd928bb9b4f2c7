"""Short human renderings of the payloads, for agentctl's default output."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from durable_agents.client.agent_client import PendingAcrossRuns, RunPendingApproval
from durable_agents.client.operations import RunSummary, WatchEvent
from durable_agents.workflows.payloads import AgentResult, PendingApproval, StatusView
from durable_agents.workflows.state import (
    AssistantMessage,
    Decision,
    Item,
    RunState,
    RunStatus,
    ToolResult,
    Usage,
    UserMessage,
)

SEP = " · "
CELL = 48
"""Widest table cell or quoted text before it is cut with an ellipsis."""


def status(run_id: str, view: StatusView) -> str:
    """`support-ab12 · awaiting_approval · turn 2 · 1 pending approval · 153 tokens`."""
    pending = _plural(view.pending_approvals, "pending approval")
    parts = [run_id, view.status.value, f"turn {view.turn}", pending, _tokens(view.usage)]
    return SEP.join(parts)


def pending(approvals: list[PendingApproval]) -> str:
    """A small table (call id, tool, requested at, arguments digest), each row followed
    by every argument of the call in full (`arguments_lines`)."""
    if not approvals:
        return "no pending approvals"
    header = ("CALL ID", "TOOL", "REQUESTED AT", "ARGUMENTS SHA256")
    rows = [(safe(a.call_id), safe(a.tool), _time(a.requested_at), _digest(a)) for a in approvals]
    return _table_with_arguments(header, rows, approvals)


def pending_across_runs(found: PendingAcrossRuns) -> str:
    """The same, with a run id column, then the runs that did not answer."""
    header = ("RUN ID", "CALL ID", "TOOL", "REQUESTED AT", "ARGUMENTS SHA256")
    rows = [
        (safe(a.run_id), safe(a.call_id), safe(a.tool), _time(a.requested_at), _digest(a))
        for a in found.approvals
    ]
    table = _table_with_arguments(header, rows, found.approvals)
    lines = [table if found.approvals else "no pending approvals"]
    if found.unanswered:
        lines.append(f"runs that did not answer: {', '.join(found.unanswered)}")
    return "\n".join(lines)


def call(item: PendingApproval) -> str:
    """`refund (sha256 1f2e3d4c5b6a…)` and every argument, one per line: what a
    decision on the call approves."""
    return "\n".join([f"{safe(item.tool)} (sha256 {_digest(item)})", *arguments_lines(item)])


def arguments_lines(item: PendingApproval | RunPendingApproval) -> list[str]:
    """Every argument of a call on its own line, in full: a long string is folded
    over several lines (marked `↪`), never cut; control and bidi characters are
    shown escaped. Arguments that are not a JSON object are shown as sent."""
    if item.args is None:
        return [f"    arguments: {safe(item.arguments)}"]
    lines: list[str] = []
    for name, value in item.args.items():
        text = safe(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
        chunks = [text[i : i + FOLD] for i in range(0, len(text), FOLD)] or [""]
        lines.append(f"    {safe(name)} = {chunks[0]}")
        lines += [f"      ↪ {chunk}" for chunk in chunks[1:]]
    return lines or ["    (no arguments)"]


FOLD = 100
"""Characters of an argument value per line; longer values continue on the next."""

_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\U000e0000-\U000e007f]"
)


def safe(text: str) -> str:
    """`text` with control, bidi and zero-width characters shown as `\\u{1b}`: a
    value can neither move the cursor, hide the rest of a line, nor reorder it."""
    return _INVISIBLE.sub(lambda m: f"\\u{{{ord(m.group()):x}}}", text)


def _digest(item: PendingApproval | RunPendingApproval) -> str:
    return item.arguments_sha256[:16] + "…" if item.arguments_sha256 else "-"


def _table_with_arguments(
    header: tuple[str, ...],
    rows: list[tuple[str, ...]],
    items: Sequence[PendingApproval | RunPendingApproval],
) -> str:
    table = _table([header, *rows]).split("\n")
    lines = [table[0]]
    for row, item in zip(table[1:], items, strict=True):
        lines += [row, *arguments_lines(item)]
    return "\n".join(lines)


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


def result(outcome: AgentResult) -> str:
    """`completed · turn 2 · 153 tokens`, then the final output."""
    head = SEP.join([outcome.status.value, f"turn {outcome.turn}", _tokens(outcome.usage)])
    return head if outcome.final_output is None else f"{head}\n{outcome.final_output}"


def decision(recorded: Decision) -> str:
    """`approved call_1 by alice (looks fine) at 2025-01-01 12:00:00Z`, then what else
    it carries: `always` and its scope, edited arguments (in full), the signing key."""
    verb = "approved" if recorded.decision == "approve" else "rejected"
    why = f" ({safe(recorded.reason)})" if recorded.reason else ""
    parts = [
        f"{verb} {safe(recorded.call_id)} by {safe(recorded.approver)}{why} at {_time(recorded.at)}"
    ]
    if recorded.always:
        scope = (
            "with the same arguments"
            if recorded.always_when is None
            else "where "
            + " and ".join(
                f"{safe(c.field)} {c.op} {safe(json.dumps(c.value))}" for c in recorded.always_when
            )
        )
        until = f" until {recorded.expires_at}" if recorded.expires_at else ""
        parts.append(f"always, for this tool's later calls {scope}{until}")
    if recorded.arguments is not None:
        edited = safe(json.dumps(recorded.arguments, ensure_ascii=False))
        parts.append(f"arguments edited by {safe(recorded.approver)} to {edited}")
    if recorded.signed_by is not None:
        parts.append(f"signed with key {safe(recorded.signed_by)}")
    return SEP.join(parts)


def state(snapshot: RunState) -> str:
    """A header line, then one line per conversation item, then the outcome."""
    head = SEP.join(
        [
            snapshot.run_id,
            f"agent {snapshot.agent.name}",
            snapshot.status.value,
            f"turn {snapshot.turn}/{snapshot.max_turns}",
            _tokens(snapshot.usage),
        ]
    )
    lines = [head, *(f"  {line}" for item in snapshot.items for line in _item(item))]
    if snapshot.final_output is not None:
        lines.append(f"final output: {snapshot.final_output}")
    if snapshot.error is not None:
        lines.append(f"error [{snapshot.error.type}]: {snapshot.error.message}")
    return "\n".join(lines)


def _item(item: Item) -> list[str]:
    if isinstance(item, UserMessage):
        return [f"user: {_cut(item.content)}"]
    if isinstance(item, AssistantMessage):
        lines = [f"assistant (turn {item.turn}): {_cut(item.content)}"] if item.content else []
        lines += [
            f"assistant (turn {item.turn}) calls {c.tool}({_cut(c.arguments)}) [{c.call_id}]"
            + (" needs approval" if c.needs_approval else "")
            for c in item.tool_calls
        ]
        return lines
    if isinstance(item, ToolResult):
        mark = "error" if item.is_error else "result"
        return [f"tool {mark} [{item.call_id}]: {_cut(item.content)}"]
    if isinstance(item, Decision):
        return [decision(item) + _HOW.get(item.via, "")]
    return [f"{item.type}"]


_HOW = {"rule": " (by rule)", "timeout": " (deadline passed)"}


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _tokens(usage: Usage) -> str:
    return _plural(usage.total_tokens, "token")


def _cut(text: str, limit: int = CELL) -> str:
    flat = safe(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _time(moment: datetime) -> str:
    if moment.tzinfo is None:
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def runs(found: list[RunSummary]) -> str:
    """A table of runs: id, agent, status, turn, pending approvals, start time."""
    if not found:
        return "no runs"
    rows = [("RUN ID", "AGENT", "STATUS", "TURN", "PENDING", "STARTED")]
    rows += [
        (
            r.run_id,
            r.agent or "-",
            r.status,
            _or_dash(r.turn),
            _or_dash(r.pending_approvals),
            _time(r.started_at),
        )
        for r in found
    ]
    return _table(rows)


def watch_line(event: WatchEvent) -> str:
    """`[  2.5s] support-ab12 · running · turn 1 · 0 pending approvals · 15 tokens`."""
    if event.closed is not None:  # closed without a final status: say how it ended
        line = SEP.join([event.run_id, event.closed, f"turn {event.view.turn}"])
    else:
        line = status(event.run_id, event.view)
    return f"[{event.elapsed_seconds:5.1f}s] {line}"


def watch_outcome(event: WatchEvent) -> str:
    """What the watched run needs now, with the commands that give it."""
    run_id, view = event.run_id, event.view
    if event.closed is not None:
        last = SEP.join([f"last status {view.status.value}", f"turn {view.turn}"])
        return f"run {run_id} ended: {event.closed} ({last})"
    if view.status is RunStatus.AWAITING_APPROVAL:
        return "\n".join(
            [
                f"run {run_id} needs a decision:",
                pending(event.pending),
                f"decide with: agentctl approve {run_id} CALL_ID  |  "
                f"agentctl reject {run_id} CALL_ID --reason R",
            ]
        )
    if view.status is RunStatus.AWAITING_INPUT:
        return (
            f"run {run_id} waits for the user's next message: "
            f"agentctl message {run_id} TEXT  |  agentctl end {run_id}"
        )
    outcome = SEP.join([view.status.value, f"turn {view.turn}", _tokens(view.usage)])
    return f"run {run_id} ended: {outcome}"


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)
