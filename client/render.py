"""Short human renderings of the payloads, for agentctl's default output."""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import TypeVar

from durable_agents.client.agent_client import PendingAcrossRuns, RunPendingApproval
from durable_agents.client.operations import RunSummary, WatchEvent
from durable_agents.client.retries import ActivityRetry
from durable_agents.client.tree import RunNode
from durable_agents.workflows import definitions
from durable_agents.workflows.agent_spec import AgentSpec, ApprovalCondition, ApprovalPolicy
from durable_agents.workflows.argument_view import (
    as_object,
    fold,
    masked,
    named_values,
    redacted,
    safe,
    safe_lines,
)
from durable_agents.workflows.audit import Evaluation, ToolListing, WebhookDelivery
from durable_agents.workflows.interrupt_models import Interruption
from durable_agents.workflows.payloads import AgentResult, PendingApproval, StatusView
from durable_agents.workflows.run_items import (
    AssistantMessage,
    BudgetRequest,
    Compaction,
    Decision,
    GuardrailCheck,
    Handoff,
    Item,
    ToolResult,
    Usage,
    UserMessage,
)
from durable_agents.workflows.state import RunState, RunStatus

_Pending = TypeVar("_Pending", PendingApproval, RunPendingApproval)

SEP = " · "
CELL = 48
"""Widest table cell or quoted text before it is cut with an ellipsis."""


def status(run_id: str, view: StatusView, *, definition: bool = False) -> str:
    """`support-ab12 · awaiting_approval · turn 2 · 1 pending approval · 153 tokens`."""
    pending = _plural(view.pending_approvals, "pending approval")
    shown = view.status.value
    if view.paused and view.status is RunStatus.RUNNING:
        shown = f"{shown} (pausing: what runs finishes first)"
    parts = [run_id, shown, f"turn {view.turn}", pending, _tokens(view.usage)]
    if view.current_agent and view.current_agent != view.agent:  # handed over
        parts.insert(1, f"agent {safe(view.agent)} → {safe(view.current_agent)}")
    if view.currency is not None:
        parts.append(f"{view.usage.cost:.4f} {view.currency}")
    if view.context_tokens is not None:
        made = _plural(view.compactions, "compaction")
        parts.append(f"context ~{view.context_tokens:,} tokens ({made})")
    if definition and view.definition is not None:  # `agentctl status`, not `watch`
        parts.append(f"definition {safe(view.definition)}")
    return SEP.join(parts)


def webhook_line(delivery: WebhookDelivery) -> str:
    """`  webhook to billing · approval_requested · failing: 503, next try ... (3 attempts)`."""
    said = str(delivery.code) if delivery.code is not None else ""
    if delivery.error:
        said = f"{said} {_cut(delivery.error)}".strip()
    parts = [f"  webhook to {safe(delivery.endpoint)}", safe(delivery.event)]
    state = delivery.status.replace("_", " ") + (f": {said}" if said else "")
    if delivery.next_try_at is not None and delivery.status == "failing":
        state += f", next try {_time(delivery.next_try_at)}"
    parts.append(f"{state} ({_plural(delivery.attempts, 'attempt')})")
    return SEP.join(parts)


def retry_line(retry: ActivityRetry) -> str:
    """`  retrying call_model (activity 3): attempt 4 of 10 · next at ... · last error: ...`."""
    of = f" of {retry.maximum_attempts}" if retry.maximum_attempts else ""
    parts = [
        f"  retrying {safe(retry.activity)} (activity {safe(retry.activity_id)}): "
        f"attempt {retry.attempt}{of}"
    ]
    if retry.next_attempt_at is not None:
        parts.append(f"next at {_time(retry.next_attempt_at)}")
    else:
        parts.append("running")
    if retry.last_error is not None:
        parts.append(f"last error: {safe(retry.last_error)}")
    return SEP.join(parts)


def pending(approvals: list[PendingApproval], *, reveal: bool = False) -> str:
    """A small table (call id, tool, requested at, arguments digest), each row followed
    by every argument of the call in full (`arguments_lines`). When calls of runs below
    the run are among them (agents called as tools), a first column says whose: the
    agents from the run asked down to the one holding the call, and that run's id."""
    if not approvals:
        return "no pending approvals"
    header: tuple[str, ...] = ("CALL ID", "SHORT ID", "TOOL", "REQUESTED AT", "ARGUMENTS SHA256")
    rows: list[tuple[str, ...]] = [
        (safe(a.call_id), safe(a.short_id or "-"), safe(a.tool), _time(a.requested_at), _digest(a))
        for a in approvals
    ]
    if any(len(a.path) > 1 for a in approvals):
        header = ("IN", *header)
        rows = [(_holder(a), *row) for a, row in zip(approvals, rows, strict=True)]
    return _table_with_arguments(header, rows, approvals, reveal=reveal)


def path(item: PendingApproval) -> str:
    """`lead → mailer`: the agents from the run asked down to the one holding the call."""
    return " → ".join(safe(a) for a in item.path)


def _holder(item: PendingApproval) -> str:
    """`lead → mailer (lead-4f2a/c2)`, or `lead (this run)`."""
    if len(item.path) <= 1:
        return f"{path(item)} (this run)"
    return f"{path(item)} ({safe(item.run_id or '')})"


def pending_across_runs(found: PendingAcrossRuns, *, reveal: bool = False) -> str:
    """The same, with a run id column, then the runs that did not answer."""
    header = ("RUN ID", "CALL ID", "SHORT ID", "TOOL", "REQUESTED AT", "ARGUMENTS SHA256")
    rows = [
        (
            safe(a.run_id),
            safe(a.call_id),
            safe(a.short_id or "-"),
            safe(a.tool),
            _time(a.requested_at),
            _digest(a),
        )
        for a in found.approvals
    ]
    table = _table_with_arguments(header, rows, found.approvals, reveal=reveal)
    lines = [table if found.approvals else "no pending approvals"]
    if found.unanswered:
        lines.append(f"runs that did not answer: {', '.join(map(safe, found.unanswered))}")
    return "\n".join(lines)


def tree(node: RunNode, depth: int = 0) -> str:
    """`lead-4f2a · lead · running · turn 1`, then each sub-run indented under it:
    `  └ [c2] lead-4f2a/c2 · mailer · awaiting_approval · turn 1 · 1 pending: n1 notify`."""
    view = node.view
    agent = safe(view.agent)
    if view.current_agent and view.current_agent != view.agent:
        agent = f"{agent} → {safe(view.current_agent)}"
    parts = [safe(node.run_id), agent, view.status.value, f"turn {view.turn}"]
    if node.background and depth:
        parts.append("in the background")
    if node.pending:
        calls = ", ".join(f"{safe(p.call_id)} {safe(p.tool)}" for p in node.pending[:5])
        more = f" (+{len(node.pending) - 5})" if len(node.pending) > 5 else ""
        parts.append(f"{_plural(len(node.pending), 'pending')}: {calls}{more}")
    head = SEP.join(parts)
    if depth:
        head = "  " * (depth - 1) + f"  └ [{safe(node.call_id or '')}] " + head
    lines = [head, *(tree(child, depth + 1) for child in node.children)]
    lines += [
        "  " * depth + f"  └ [{safe(call)}] {safe(run)} · cannot be read: {_cut(why)}"
        for call, run, why in node.unreadable
    ]
    if node.left_out:
        lines.append("  " * depth + f"  … {node.left_out} more sub-runs not shown")
    return "\n".join(lines)


def call(item: PendingApproval) -> str:
    """`refund (sha256 1f2e3d4c5b6a…)` and every argument, one per line: what a
    decision on the call approves."""
    return "\n".join([f"{safe(item.tool)} (sha256 {_digest(item)})", *arguments_lines(item)])


def arguments_lines(
    item: PendingApproval | RunPendingApproval, *, reveal: bool = False
) -> list[str]:
    """Every argument of a call on its own line, in full: a long string is folded
    over several lines (marked `↪`), never cut; control and bidi characters are
    shown escaped. Values of sensitive parameters are masked (with their length)
    unless `reveal`. Arguments that are not a JSON object are shown as sent."""
    shown = named_values(item.arguments, item.sensitive, reveal=reveal)
    if isinstance(shown, str):
        return [f"    arguments: {safe(shown)}"]
    lines: list[str] = []
    for name, value in shown:
        chunks = fold(safe(value))
        lines.append(f"    {safe(name)} = {chunks[0]}")
        lines += [f"      ↪ {chunk}" for chunk in chunks[1:]]
    return lines or ["    (no arguments)"]


def masked_item(item: _Pending) -> _Pending:
    """The pending item with the values of its sensitive arguments masked (`--json`
    without `--show-sensitive`)."""
    if not item.sensitive:
        return item
    args = None
    if item.args is not None:
        args = {n: masked(v) if n in item.sensitive else v for n, v in item.args.items()}
    return item.model_copy(
        update={"arguments": redacted(item.arguments, item.sensitive), "args": args}
    )


def _digest(item: PendingApproval | RunPendingApproval) -> str:
    return item.arguments_sha256[:16] + "…" if item.arguments_sha256 else "-"


def _table_with_arguments(
    header: tuple[str, ...],
    rows: list[tuple[str, ...]],
    items: Sequence[PendingApproval | RunPendingApproval],
    *,
    reveal: bool,
) -> str:
    table = _table([header, *rows]).split("\n")
    lines = [table[0]]
    for row, item in zip(table[1:], items, strict=True):
        lines += [
            row,
            *arguments_lines(item, reveal=reveal),
            *answer_lines(item),
            *evaluating_lines(item),
        ]
    return "\n".join(lines)


def evaluating_lines(item: PendingApproval | RunPendingApproval) -> list[str]:
    """That the policy's evaluator decides the call now, since when, and until when (a
    person may decide first)."""
    asked = getattr(item, "evaluating", None)
    if asked is None:
        return []
    return [
        f"    the evaluator {safe(asked.evaluator)} ({asked.kind}) decides it since "
        f"{_time(asked.since)}, until {_time(asked.timeout_at)}; a person may decide first"
    ]


def answer_lines(item: PendingApproval | RunPendingApproval) -> list[str]:
    """For a call of an external tool: that it waits for an answer, and the answer's
    JSON Schema in full (folded, never cut)."""
    if item.kind != "answer":
        return []
    schema = json.dumps(item.answer_schema, ensure_ascii=False, separators=(",", ":"))
    chunks = fold(safe(schema))
    return [
        "    waits for an answer (agentctl answer ... --result JSON) matching:",
        *(f"      {chunk}" for chunk in chunks),
    ]


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


ALL_VALUES = "*"
"""In a list of sensitive argument names: every value is (the tool's names are unknown)."""


def hidden_arguments(arguments_json: str, sensitive: Collection[str]) -> str:
    """`redacted`, or with `ALL_VALUES`, every value masked."""
    if ALL_VALUES not in sensitive:
        return redacted(arguments_json, sensitive)
    arguments = as_object(arguments_json)
    if arguments is None:
        return json.dumps(masked(arguments_json))
    shown = {name: masked(value) for name, value in arguments.items()}
    return json.dumps(shown, ensure_ascii=False, separators=(",", ":"))


def result(outcome: AgentResult) -> str:
    """`completed · turn 2 · 153 tokens`, then the final output."""
    head = SEP.join([outcome.status.value, f"turn {outcome.turn}", _tokens(outcome.usage)])
    answer = outcome.final_output
    return head if answer is None else f"{head}\n{safe_lines(answer)}"


def _condition_value(field: str, value: object, sensitive: Collection[str]) -> str:
    """An `always_when` condition's value as shown: masked on a sensitive argument (its
    first name, `card` of `card.number`), as the call's arguments are."""
    if ALL_VALUES in sensitive or field.split(".")[0] in sensitive:
        return masked(value)
    return safe(json.dumps(value))


def decision(recorded: Decision, *, sensitive: Collection[str] = ()) -> str:
    """`approved call_1 by alice (looks fine) at 2025-01-01 12:00:00Z`, then what else
    it carries: `always` and its scope, edited arguments (in full), the signing key."""
    verb = {"approve": "approved", "reject": "rejected", "answer": "answered"}[recorded.decision]
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
                f"{safe(c.field)} {c.op} {_condition_value(c.field, c.value, sensitive)}"
                for c in recorded.always_when
            )
        )
        until = f" until {recorded.expires_at}" if recorded.expires_at else ""
        parts.append(f"always, for this tool's later calls {scope}{until}")
    if recorded.arguments is not None:
        given = json.dumps(recorded.arguments, ensure_ascii=False)
        edited = safe(hidden_arguments(given, sensitive))
        parts.append(f"arguments edited by {safe(recorded.approver)} to {edited}")
    if recorded.decision == "answer":
        given = json.dumps(recorded.result, ensure_ascii=False)
        parts.append(f"answer: {safe(given if len(given) <= 2_000 else given[:1_999] + '…')}")
    if recorded.signed_by is not None:
        parts.append(f"signed with key {safe(recorded.signed_by)}")
    return SEP.join(parts)


def state(snapshot: RunState, *, reveal: bool = False) -> str:
    """A header line, then one line per conversation item, then the outcome. Values
    of sensitive arguments are masked unless `reveal`."""
    head = SEP.join(
        [
            safe(snapshot.run_id),
            f"agent {safe(snapshot.agent.name)}",
            snapshot.status.value,
            f"turn {snapshot.turn}/{snapshot.max_turns}",
            _tokens(snapshot.usage),
        ]
    )
    hidden: dict[str, list[str]] = {}  # call id -> its tool's sensitive argument names
    if not reveal:
        for item in snapshot.items:
            for call in item.tool_calls if isinstance(item, AssistantMessage) else []:
                tool = snapshot.agent.tool(call.tool)
                # A tool the agent no longer has (a handoff since): its names are not
                # known here, so all its values are masked.
                hidden[call.call_id] = tool.sensitive if tool is not None else [ALL_VALUES]
    lines = [head, *_imported(snapshot)]
    if snapshot.context is not None:  # as its tools left it (workflows.context_updates)
        lines.append(f"context: {_cut(json.dumps(snapshot.context, ensure_ascii=False), 500)}")
    lines += [f"  {line}" for item in snapshot.items for line in _item(item, hidden)]
    lines += [listing(done) for done in snapshot.tool_listings]
    lines += [interruption(done) for done in snapshot.interruptions]
    if snapshot.interrupt is not None:
        lines.append(f"interrupting (asked {_time(snapshot.interrupt.at)}): stopping the turn")
    lines += [evaluation(e) for e in snapshot.evaluations]
    if snapshot.final_output is not None:
        lines.append(f"final output: {safe_lines(snapshot.final_output)}")
    if snapshot.error is not None:
        lines.append(f"error [{safe(snapshot.error.type)}]: {safe_lines(snapshot.error.message)}")
    return "\n".join(lines)


def interruption(record: Interruption) -> str:
    """`interrupted by ops (wrong order) at ... · model call cut · 2 calls: c1 running,
    c2 withdrawn`."""
    said = "by a new message" if record.via == "message" else f"by {safe(record.by or '?')}"
    if record.reason:
        said += f" ({_cut(record.reason)})"
    parts = [f"interrupted {said} at {_time(record.applied_at)}, turn {record.turn}"]
    if record.model_call:
        parts.append("model call cut")
    if record.calls:
        shown = ", ".join(f"{safe(c.call_id)} {_WAS.get(c.was, c.was)}" for c in record.calls)
        parts.append(f"{_plural(len(record.calls), 'call')} answered: {shown}")
    return SEP.join(parts)


_WAS = {
    "running": "stopped",
    "finished": "finished anyway (keeps its result)",
    "awaiting_approval": "withdrawn (waited for approval)",
    "awaiting_answer": "withdrawn (waited for an answer)",
    "approved": "not run (approved)",
    "not_started": "not run",
}


def evaluation(done: Evaluation) -> str:
    """`evaluator screen on r1: escalated (said approve: outside ...)`."""
    said = f"said {done.verdict}" if done.verdict is not None else "no verdict"
    why = f": {_cut(safe(done.reason))}" if done.reason else ""
    return (
        f"evaluator {safe(done.evaluator)} on {safe(done.call_id)}: {done.outcome} "
        f"({said}{why}) at {_time(done.at)}"
    )


def _imported(snapshot: RunState) -> list[str]:
    """Where an imported run came from, in one line (none for other runs)."""
    found = snapshot.imported
    if found is None:
        return []
    return [
        f"imported from an OpenAI Agents SDK run state {safe(found.schema_version)} "
        f"(its agent {_cut(found.agent)}, turn {found.turn}){SEP}"
        f"{len(found.decisions) + found.decisions_omitted} decisions it recorded, "
        f"none applied{SEP}{len(found.dropped) + found.dropped_omitted} items dropped"
    ]


def _item(item: Item, hidden: dict[str, list[str]]) -> list[str]:
    """One item's lines, the values of the arguments `hidden` names masked."""
    if isinstance(item, UserMessage):
        return [f"user: {_cut(item.content)}"]
    if isinstance(item, AssistantMessage):
        lines = [f"assistant (turn {item.turn}): {_cut(item.content)}"] if item.content else []
        lines += [
            f"assistant (turn {item.turn}) calls {safe(c.tool)}"
            f"({_cut(hidden_arguments(c.arguments, hidden.get(c.call_id, [])))})"
            f" [{safe(c.call_id)}]" + (" needs approval" if c.needs_approval else "")
            for c in item.tool_calls
        ]
        return lines
    if isinstance(item, ToolResult):
        mark = "interrupted" if item.interrupted else "error" if item.is_error else "result"
        images = f" [{_plural(len(item.attachments), 'image')} kept]" if item.attachments else ""
        if item.context_changed:
            images += " [context changed]"
        if item.context_refused:
            images += f" [context change refused: {_cut(item.context_refused)}]"
        return [f"tool {mark} [{safe(item.call_id)}]: {_cut(item.content)}{images}"]
    if isinstance(item, Decision):
        masked_names = hidden.get(item.call_id, [])
        return [decision(item, sensitive=masked_names) + _HOW.get(item.via, "")]
    if isinstance(item, GuardrailCheck):
        verdict = "tripped" if item.tripped else "passed"
        why = f": {_cut(item.reason)}" if item.reason else ""
        return [f"{item.kind} guardrail {safe(item.name)} {verdict}{why}"]
    if isinstance(item, Compaction):
        how = "outputs stubbed, older turns left out" if item.dropped else "outputs stubbed"
        how = "summarized" if item.summary is not None else how
        lines = [
            f"context compacted before turn {item.turn} ({how}, {item.reason}): "
            f"~{item.tokens_before:,} → ~{item.tokens_after:,} tokens"
        ]
        if item.summary is not None:
            lines.append(f"  notes: {_cut(item.summary, 200)}")
        return lines
    if isinstance(item, BudgetRequest):
        unit = "tokens" if item.kind == "tokens" else ""
        return [
            f"budget request [{item.call_id}]: {item.kind} budget {item.budget:g} reached "
            f"(the next call could need {item.needed:g} {unit}".rstrip()
            + f"); asks for {item.proposed:g}"
        ]
    if isinstance(item, Handoff):
        why = f": {_cut(item.reason)}" if item.reason else ""
        if item.left_out is not None:  # an input filter in code chose what it is sent
            why += f" [its input filter left out {_plural(len(item.left_out), 'item')}]"
        return [
            f"handed over [{item.call_id}] from {safe(item.from_agent)} to "
            f"{safe(item.to_agent)} (turn {item.turn}){why}"
        ]
    return [f"{item.type}"]


_HOW = {
    "rule": " (by rule)",
    "timeout": " (deadline passed)",
    "evaluator": " (by the policy's evaluator)",
}


def tools(spec: AgentSpec) -> str:
    """An agent's tools, a line each: where it runs and its approval rule.

    `helpdesk · 2 tools`
    `  tickets_delete_ticket · MCP tickets/delete_ticket · approval · approvers ann`
    """
    shown = f"{SEP}definition {definitions.digest(spec)}"
    lines = [f"{safe(spec.name)}{SEP}{_plural(len(spec.tools), 'tool')}{shown}"]
    for t in spec.tools:
        where = (
            f"MCP {safe(t.mcp_server)}/{safe(t.mcp_tool or t.name)}"
            if t.mcp_server
            else "@tool (local)"
            if t.local
            else f"@tool (queue {safe(t.task_queue)})"
            if t.task_queue
            else "@tool"
        )
        where += f"{SEP}at most once" if t.at_most_once else ""
        rule = approval_rule(t.approval) if t.needs_approval else "no approval"
        lines.append(f"  {safe(t.name)}{SEP}{where}{SEP}{rule}")
    return "\n".join(lines)


def listing(done: ToolListing) -> str:
    """`MCP tools listed again before turn 3: added a, b · removed c`."""
    head = f"MCP tools listed again before turn {done.turn + 1}"
    if done.error is not None:
        return f"{head}: failed, the run kept its tools: {_cut(done.error)}"
    changes = [
        f"{what} {', '.join(_cut(safe(n)) for n in names[:20])}"
        + (f" and {len(names) - 20} more" if len(names) > 20 else "")
        for what, names in done.changes()
    ]
    return f"{head}: {SEP.join(changes) or 'no change'}"


def approval_rule(policy: ApprovalPolicy) -> str:
    """`approval when amount > 100 · approvers ann, bob · signed · 1 day, then reject`."""
    parts = ["approval" + (f" when {_conditions(policy.when, ' or ')}" if policy.when else "")]
    if policy.rule is not None:
        parts[0] = f"approval when rule {safe(policy.rule)} says so"
    if policy.evaluator is not None:
        within = policy.auto_approve_within
        limits = f" within {_conditions(within, ' and ')}" if within else " (never approves)"
        parts.append(f"evaluator {safe(policy.evaluator.name)}{limits}")
    if policy.approvers is not None:
        parts.append("approvers " + ", ".join(safe(a) for a in policy.approvers))
    if policy.require_signature:
        parts.append("signed")
    if policy.separate_duties:
        parts.append("not by who started the run")
    if not policy.allow_always:
        parts.append("no always")
    if policy.limits:
        parts.append(f"limits {_conditions(policy.limits, ' and ')}")
    if policy.timeout is not None:
        parts.append(f"{policy.timeout}, then {policy.on_timeout}")
    return SEP.join(parts)


def _conditions(conditions: list[ApprovalCondition], joined: str) -> str:
    return joined.join(
        f"{safe(c.field)} {c.op} {_cut(json.dumps(c.value, ensure_ascii=False))}"
        for c in conditions
    )


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _tokens(usage: Usage) -> str:
    """`153 tokens`, with the cached and reasoning shares when there are any."""
    shares = [
        f"{count} {kind}"
        for count, kind in (
            (usage.cached_input_tokens, "cached"),
            (usage.reasoning_tokens, "reasoning"),
        )
        if count
    ]
    total = _plural(usage.total_tokens, "token")
    return f"{total} ({', '.join(shares)})" if shares else total


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
            safe(r.run_id),
            safe(r.agent or "-"),
            safe(r.status),
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
    retries = "".join("\n" + retry_line(r) for r in event.retrying)
    return f"[{event.elapsed_seconds:5.1f}s] {line}{retries}"


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
    if view.status is RunStatus.PAUSED:
        return f"run {run_id} is paused: agentctl unpause {run_id}"
    if view.status is RunStatus.AWAITING_INPUT:
        return (
            f"run {run_id} waits for the user's next message: "
            f"agentctl message {run_id} TEXT  |  agentctl end {run_id}"
        )
    outcome = SEP.join([view.status.value, f"turn {view.turn}", _tokens(view.usage)])
    return f"run {run_id} ended: {outcome}"


def _or_dash(value: int | None) -> str:
    return "-" if value is None else str(value)


def ascii_json(output: str) -> str:
    """JSON output with every character past ASCII escaped as `\\uXXXX` (the same JSON:
    outside strings JSON has none): what a run's content puts in it (`\\u202e`, C1
    controls) cannot steer the terminal it is printed on."""
    return _NOT_ASCII.sub(lambda m: json.dumps(m.group())[1:-1], output)


_NOT_ASCII = re.compile(r"[^\x00-\x7e]")
