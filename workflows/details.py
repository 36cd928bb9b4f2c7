"""What a run shows in the Temporal UI: its current details (short markdown), the
one-line summary of a tool call, the static summary set at start. Pure, no temporalio."""

from __future__ import annotations

import json
import re

from durable_agents.workflows import (
    argument_view,
    decisions,
    handoffs,
    refusals,
    short_ids,
    tree_approvals,
)
from durable_agents.workflows.audit import Redefinition, ToolListing, WebhookDelivery
from durable_agents.workflows.interrupt_models import Interruption
from durable_agents.workflows.run_items import AssistantMessage, Compaction, ToolCall, ToolResult
from durable_agents.workflows.state import BackgroundRun, RunState, SubApproval

SHORT = 80
"""Widest text (arguments, tool result) in the current details before it is cut."""
SUMMARY_LIMIT = 60
"""Widest tool-call summary and static-summary input before they are cut."""
SHOWN_PER_CALL = 16_000
"""Characters of one pending call's arguments the details show; past them (a model
can write megabytes) a marker says how many more there are and where to see them."""
SHOWN_ALWAYS = 200
"""Characters of any one value shown even once the call's budget is spent."""

_PLAIN = re.compile(r"[^\s,()=\[\]{}\"'`]+")
"""A string argument shown without quotes: nothing that would read as punctuation."""


def render(state: RunState) -> str:
    """Status, turn, pending approvals (tool and short arguments), the latest reply's
    reasoning summary, last tool result, usage."""
    usage = state.usage
    price = state.agent.price
    spent = f" · {usage.cost:.4f} {price.currency}" if price is not None else ""
    first = handoffs.first_agent(state)
    agent = state.agent.name if first == state.agent.name else f"{first} → {state.agent.name}"
    lines = [
        f"**{tree_approvals.shown_status(state).value}** · {agent} · turn {state.turn} · "
        f"{_plural(usage.total_tokens, 'token')} · {_plural(usage.model_calls, 'model call')}"
        f"{spent}"
    ]
    if state.paused is not None and not state.status.is_final:
        who = f" by {_code(argument_view.safe(state.paused.by))}" if state.paused.by else ""
        why = f": {_code(_short(state.paused.reason, 200))}" if state.paused.reason else ""
        waits = "" if state.status.value == "paused" else " (what is running finishes first)"
        lines += ["", f"**Paused**{who}{why}{waits}"]
    pending = decisions.pending_calls(state)
    if pending:
        lines += ["", f"**Pending approvals ({len(pending)})**"]
        for call in pending:
            lines += _pending_call(state, call)
    if state.sub_approvals:
        lines += ["", f"**Pending approvals in runs below ({len(state.sub_approvals)})**"]
        lines += [_sub_approval(state, s) for s in state.sub_approvals]
    if state.background_runs:
        lines += ["", f"**Agents in the background ({len(state.background_runs)})**"]
        lines += [_background_run(b) for b in state.background_runs[-8:]]
    if state.refused_decisions:  # a signal gets no answer: an operator reads it here
        refused = state.refused_decisions[-1]
        count = refusals.total_refused_decisions(state)
        why = _code(_short(refused.refused_because or "", 200))
        lines += [
            "",
            f"**Last refused decision** ({_plural(count, 'refused')} in all): "
            f"{refused.decision} of call {_code(_short(refused.call_id, 80))} by "
            f"{_code(_short(refused.approver, 80))}: {why}",
        ]
    if state.evaluations:  # what the evaluator said of the latest call it was asked about
        done = state.evaluations[-1]
        said = f"said {done.verdict}" if done.verdict is not None else "no verdict"
        why = f": {_code(_short(done.reason, 200))}" if done.reason else ""
        lines += [
            "",
            f"**Last evaluation**: evaluator {_code(_short(done.evaluator, 80))} on call "
            f"{_code(_short(done.call_id, 80))}: {done.outcome} ({said}){why}",
        ]
    reply = next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)
    summary = " ".join(s for thought in (reply.reasoning if reply else []) for s in thought.summary)
    if reply is not None and summary:
        lines += ["", f"**Reasoning** (turn {reply.turn}): {_code(_short(summary, 2 * SHORT))}"]
    result = next((i for i in reversed(state.items) if isinstance(i, ToolResult)), None)
    if result is not None:
        marker = " (interrupted)" if result.interrupted else " (error)" if result.is_error else ""
        tool = _code(_tool_of(state, result.call_id))
        lines += ["", f"**Last tool result** {tool}{marker}: {_code(_short(result.content))}"]
    policy = state.agent.context_policy
    made = [i for i in state.items if isinstance(i, Compaction)]
    if policy is not None and made:
        last = made[-1]
        lines += [
            "",
            f"**Context** {_plural(len(made), 'compaction')} ({policy.strategy}), the latest "
            f"before turn {last.turn}: ~{last.tokens_before:,} → ~{last.tokens_after:,} tokens "
            f"of {policy.max_input_tokens:,}",
        ]
    if state.tool_listings:
        lines += ["", _listing(state.tool_listings[-1])]
    if state.redefinitions:
        lines += ["", _redefinition(state.redefinitions[-1])]
    troubled = [
        d for d in state.webhook_deliveries if d.status in ("failing", "refused", "gave_up")
    ]
    if troubled:
        lines += ["", f"**Webhooks** ({len(troubled)} not delivered)"]
        lines += [_delivery(d) for d in troubled[-5:]]
    if state.interrupt is not None:
        lines += ["", "**Interrupting**: stopping the model call and tools under way"]
    if state.interruptions:
        lines += ["", _interruption(state.interruptions[-1], len(state.interruptions))]
    if state.queued_messages:
        lines += ["", f"**Queued user messages:** {len(state.queued_messages)}"]
    if state.error is not None:
        error = _code(_short(state.error.message, 200))
        lines += ["", f"**Error** {_code(state.error.type)}: {error}"]
    return "\n".join(lines)


def _interruption(record: Interruption, kept: int) -> str:
    """The latest interruption: who, why, what was cut; the calls withdrawn by name."""
    who = " by a new message" if record.via == "message" else ""
    if record.by:
        who = f" by {_code(argument_view.safe(record.by))}"
    why = f": {_code(_short(record.reason, 200))}" if record.reason else ""
    cut = ["model call cut"] if record.model_call else []
    for was, said in (("running", "stopped"), ("finished", "finished"), ("awaiting", "withdrawn")):
        ids = [_code(_short(c.call_id, 40)) for c in record.calls if c.was.startswith(was)]
        cut += [f"{said} {', '.join(ids)}"] if ids else []
    other = [c for c in record.calls if c.was in ("approved", "not_started")]
    cut += [f"{_plural(len(other), 'call')} not run"] if other else []
    return (
        f"**Interrupted**{who}{why} at turn {record.turn} ({kept} kept): "
        f"{'; '.join(cut) or 'nothing was running'}"
    )


def _delivery(delivery: WebhookDelivery) -> str:
    """`- webhook to `billing` failing: 503, next try 14:02:05 (attempt 3)`."""
    said = f"{delivery.code}" if delivery.code is not None else "no answer"
    if delivery.error:
        said += f" ({_short(delivery.error, 80)})"
    status = delivery.status.replace("_", " ")
    when = ""
    if delivery.status == "failing" and delivery.next_try_at is not None:
        when = f", next try {delivery.next_try_at.strftime('%H:%M:%S')}"
    return (
        f"- webhook to {_code(delivery.endpoint)} ({_code(delivery.event)}) {status}: "
        f"{_code(said)}{when} (attempt {delivery.attempts})"
    )


def _redefinition(entry: Redefinition) -> str:
    """`**Definition changed** before turn 4 (a new session message): `0a1b…` → `9f8e…`:
    instructions, tools`."""
    why = "a new session message" if entry.reason == "session_message" else "continue-as-new"
    if entry.after is None:
        error = _code(_short(entry.error or "", 200))
        return f"**Definition kept** at turn {entry.turn} ({why}): {error}"
    changed = ", ".join(entry.changed[:10]) or "no part of it"
    return (
        f"**Definition changed** before turn {entry.turn + 1} ({why}): "
        f"{_code(entry.before)} → {_code(entry.after)}: {changed}"
    )


def _listing(listing: ToolListing) -> str:
    """`**MCP tools listed again** before turn 4 (asked by `ann`): added `a`; removed `b``."""
    who = f" by {_code(argument_view.safe(listing.by))}" if listing.by else ""
    why = f"asked{who}" if listing.reason == "requested" else "a new session message"
    head = f"**MCP tools listed again** before turn {listing.turn + 1} ({why}): "
    if listing.error is not None:
        return head + f"failed, the run kept its tools: {_code(_short(listing.error, 200))}"
    changes = [
        f"{what} {', '.join(_code(_short(argument_view.safe(n), 64)) for n in names[:10])}"
        + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        for what, names in listing.changes()
    ]
    return head + ("; ".join(changes) or "no change")


def _background_run(entry: BackgroundRun) -> str:
    """`- scout — run coord-1/c1 — awaiting_approval, turn 1 (call c1)`."""
    safe = argument_view.safe
    return (
        f"- {safe(entry.agent)} — run {_code(safe(entry.run_id))} — {entry.status.value}, "
        f"turn {entry.turn} (call {_code(safe(entry.call_id))})"
    )


def _sub_approval(state: RunState, entry: SubApproval) -> str:
    """`- notify(to=ann, text=5) — call id n1 — in run lead-1/c2 (lead → mailer)`:
    sensitive values masked; the decision goes to this run or to the one named."""
    shown = argument_view.redacted(entry.arguments, entry.sensitive)
    path = " → ".join(argument_view.safe(a) for a in [state.agent.name, *entry.path])
    return (
        f"- {_code(tool_call_summary(entry.tool, shown, SHORT))} — call id "
        f"{_code(entry.call_id)}{f' (short id {_code(entry.short_id)})' if entry.short_id else ''}"
        f"{' — **waits for an answer**' if entry.kind == 'answer' else ''}"
        f" — in run {_code(argument_view.safe(entry.run_id))} ({path})"
    )


def _pending_call(state: RunState, call: ToolCall) -> list[str]:
    """A line with the call in short; if that had to cut it, every argument below it
    in full (folded, `↪`), so what an approver reads is what runs. Sensitive values
    are masked."""
    sensitive = decisions.sensitive_names(state, call)
    shown = argument_view.redacted(call.arguments, sensitive)
    head = f"- {_code(tool_call_summary(call.tool, shown, SHORT))} — call id {_code(call.call_id)}"
    head += f" (short id {_code(short_ids.of(state, call))})"
    tool = state.agent.tool(call.tool)
    if tool is not None and tool.external:  # no yes/no: a person's answer is the result
        head += " — **waits for an answer** (`agentctl answer`, the `answer` signal)"
    if len(tool_call_summary(call.tool, shown, limit=len(call.tool) + len(shown) + 2)) <= SHORT:
        return [head]  # the whole call fits on its line
    values = argument_view.named_values(call.arguments, sensitive)
    pairs = [("arguments", values)] if isinstance(values, str) else values
    lines, budget = [head], SHOWN_PER_CALL
    for name, value in pairs:
        text = argument_view.safe(value)
        room = max(budget, SHOWN_ALWAYS)  # a short value shows, whatever came before it
        if len(text) > room:
            more = len(text) - room
            text = f"{text[:room]}… ({more:,} more characters: `agentctl pending` shows them)"
        budget = max(budget - len(text), 0)
        pieces = argument_view.fold(text)
        lines.append(f"  - {_code(argument_view.safe(name))} = {_code(pieces[0])}")
        lines += [f"    ↪ {_code(piece)}" for piece in pieces[1:]]
    return lines


def tool_call_summary(tool: str, arguments_json: str, limit: int = SUMMARY_LIMIT) -> str:
    """`refund(order=A12, amount=40)`: the call on one line, at most `limit` characters.

    A JSON object's members become `key=value` (plain strings unquoted, other values
    compact JSON); other or invalid JSON is shown as its raw text. Cut with `…`."""
    try:
        arguments = json.loads(arguments_json) if arguments_json.strip() else {}
    except (ValueError, RecursionError):  # nested deeper than this stack allows: raw text
        arguments = None
    if isinstance(arguments, dict):
        inner = ", ".join(f"{key}={_value(value)}" for key, value in arguments.items())
    else:
        inner = " ".join(arguments_json.split())
    full = argument_view.safe(f"{tool}({inner})")
    if len(full) <= limit:
        return full
    tool, inner = argument_view.safe(tool), argument_view.safe(inner)
    room = limit - len(tool) - 3  # "(", "…", ")"
    if room < 1:
        return _short(full, limit)
    return f"{tool}({inner[:room]}…)"


def static_summary(agent: str, input: str, limit: int = SUMMARY_LIMIT) -> str:
    """`support: Please refund order A12…`: the agent and the input's first words (cut
    at a word boundary, on one line, the input part at most `limit` characters)."""
    text = argument_view.safe(" ".join(input.split()))
    if len(text) > limit:
        cut = text.rfind(" ", 0, limit)  # the last word that fits with the "…"
        text = (text[:cut] if cut > limit // 2 else text[: limit - 1]) + "…"
    return f"{agent}: {text}" if text else agent


def _value(value: object) -> str:
    if isinstance(value, str) and _PLAIN.fullmatch(value) and not _reads_as_json(value):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _reads_as_json(text: str) -> bool:
    """True for `40`, `true`, `null`...: unquoted, they would pass for another type."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


def _code(text: str) -> str:
    """`text` as a markdown code span, whatever backticks it holds (CommonMark: a
    longer fence, and a space on each side if it starts or ends with a backtick)."""
    if not text:
        return "(empty)"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _tool_of(state: RunState, call_id: str) -> str:
    for item in reversed(state.items):
        if isinstance(item, AssistantMessage):
            for call in item.tool_calls:
                if call.call_id == call_id:
                    return call.tool
    return "?"


def _short(text: str, limit: int = SHORT) -> str:
    text = argument_view.safe(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"
