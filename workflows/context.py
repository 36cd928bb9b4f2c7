"""What the model sees of a long conversation: the run keeps every item, the model gets
a compacted view once it would pass the agent's context window. Pure.

Two strategies (`ContextPolicy.strategy`):

- `stub_tool_outputs`: the results of tool calls older than the recent turns are sent
  as a one-line stub saying how long they were (the run keeps them whole); when that
  is not enough, the turns before the recent ones are not sent at all (a line says
  how many items were left out);
- `summarize`: the conversation before the recent turns is sent as one message
  holding a summary the model wrote of it (a model call of its own).

Each compaction is a `Compaction` item recording what it replaced, at which turn, and
the estimated tokens before and after; the view is a function of the items, so a
replayed, resumed or forked run sees exactly what the model saw. Tokens are estimated
offline (`estimate`: the provider's count of the previous call, plus about 4
characters a token for what came after), never downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from durable_agents.workflows.payloads import ModelReply, ModelRequest
from durable_agents.workflows.state import (
    AssistantMessage,
    Compaction,
    ErrorInfo,
    Item,
    ModelSettings,
    RunState,
    ToolResult,
    Usage,
    UserMessage,
)

CHARS_PER_TOKEN = 4
"""The offline estimate's rate (English text and JSON average about 4 characters)."""
PER_MESSAGE = 8
"""Tokens of a message's framing (role, separators, call ids) in the estimate."""
TARGET_SHARE = 0.6
"""Of `max_input_tokens`, what a compaction aims to leave: room for several calls
before the next one (stubs alone falling short, the older turns go too)."""
SUMMARY_HEADER = "[Summary of the conversation before this point, written to save context]"
DROPPED = "[{count} earlier messages of this conversation are left out to save context]"
SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation below for your own later use: the user's goals and "
    "instructions, the decisions made, the facts tool calls established (with the exact "
    "values that matter: ids, amounts, names), and what is still open. Be complete but "
    "brief. Answer with the summary only."
)


def stub(result: ToolResult) -> ToolResult:
    """The stub the model sees for a result a compaction dropped."""
    return result.model_copy(
        update={
            "content": f"[output of this call removed to save context: {len(result.content):,} "
            "characters; the run keeps it]"
        }
    )


SUMMARY_INPUT_SHARE = 0.75
"""Of the window, what the transcript sent to be summarized may fill (the rest: the
instructions and the summary itself)."""
RESULT_CHARS_IN_TRANSCRIPT = 2_000
"""Characters of one tool result in that transcript."""


def compactions(state: RunState) -> list[Compaction]:
    """The run's compactions, oldest first."""
    return [i for i in state.items if isinstance(i, Compaction)]


def view(state: RunState, pending: Compaction | None = None) -> list[Item]:
    """The items the model is sent: all of them until a compaction, then the latest
    summary (if any) in place of what it covers, and stubs for stubbed results.
    `pending`: a compaction not recorded yet, applied too (to estimate it)."""
    done = compactions(state) + ([pending] if pending is not None else [])
    if not done:
        return state.items
    stubbed = {call_id for c in done for call_id in c.stubbed}
    cut = next((c for c in reversed(done) if c.summary is not None or c.dropped), None)
    start = cut.up_to if cut is not None else 0
    shown: list[Item] = []
    if cut is not None and cut.summary is not None:
        shown.append(UserMessage(content=f"{SUMMARY_HEADER}\n{cut.summary}"))
    elif cut is not None:
        count = len(view_of(state.items[:start]))
        shown.append(UserMessage(content=DROPPED.format(count=count)))
    for item in state.items[start:]:
        if isinstance(item, ToolResult):
            shown.append(stub(item) if item.call_id in stubbed else item)
        elif isinstance(item, UserMessage | AssistantMessage):
            shown.append(item)
    return shown


def estimate(state: RunState, request: ModelRequest) -> int:
    """Input tokens the call `request` sends, estimated offline: the provider's count of
    the previous call plus what came after it when nothing was compacted since, else
    about `CHARS_PER_TOKEN` characters a token for everything sent."""
    counted = _last_counted(state)
    if counted is not None:
        index, usage = counted
        return usage.input_tokens + usage.output_tokens + _tokens(view_of(state.items[index + 1 :]))
    return _fixed(request) + _tokens(request.items)


def due(state: RunState, request: ModelRequest) -> Compaction | None:
    """The compaction to make before the call `request`, or None: when the estimate
    passes the policy's window (once per call), or when the provider refused the call
    as too long (once more, keeping fewer turns). None too when nothing is left to
    compact (the call is made as it is)."""
    policy = state.agent.context_policy
    if policy is None:
        return None
    turn = state.turn + 1
    forced = state.context_overflow == turn
    reason: Literal["window", "context_length_exceeded"] = (
        "context_length_exceeded" if forced else "window"
    )
    if any(c.turn == turn and c.reason == reason for c in compactions(state)):
        return None
    before = estimate(state, request)
    if not forced and before <= policy.max_input_tokens:
        return None
    keep = max(1, policy.keep_recent_turns // 2) if forced else policy.keep_recent_turns
    replies = [n for n, i in enumerate(state.items) if isinstance(i, AssistantMessage)]
    if len(replies) <= keep:
        return None
    boundary = replies[-keep]  # every call before a reply was answered before it
    planned = Compaction(
        turn=turn,
        strategy=policy.strategy,
        reason=reason,
        up_to=boundary,
        tokens_before=before,
        tokens_after=before,
        at=state.updated_at,
    )
    fixed = _fixed(request)
    latest = next((c for c in reversed(compactions(state)) if c.summary or c.dropped), None)
    cut_already = latest is not None and latest.up_to >= boundary
    if policy.strategy == "summarize":
        if cut_already:
            return None
        planned.tokens_after = _tokens(view(state, planned)) + fixed
        return planned
    stubbed = {call_id for c in compactions(state) for call_id in c.stubbed}
    planned.stubbed = [
        i.call_id
        for i in state.items[:boundary]
        if isinstance(i, ToolResult)
        and i.call_id not in stubbed
        and len(i.content) > len(stub(i).content)
    ]
    planned.tokens_after = _tokens(view(state, planned)) + fixed
    target = policy.max_input_tokens * TARGET_SHARE
    if (forced or planned.tokens_after > target) and not cut_already:
        planned.dropped = True  # stubs are not enough: the older turns go
        planned.tokens_after = _tokens(view(state, planned)) + fixed
    if not planned.stubbed and not planned.dropped:
        return None
    return planned


def summary_request(state: RunState, planned: Compaction, base: ModelRequest) -> ModelRequest:
    """The model call that writes the summary `planned` needs: the earlier summary and
    the items it is to cover, as one transcript (cut to fit), no tools."""
    policy = state.agent.context_policy
    assert policy is not None
    latest = next((c for c in reversed(compactions(state)) if c.summary is not None), None)
    start = latest.up_to if latest is not None else 0
    lines = [f"{SUMMARY_HEADER}\n{latest.summary}"] if latest and latest.summary else []
    lines += _transcript(state.items[start : planned.up_to])
    room = int(policy.max_input_tokens * SUMMARY_INPUT_SHARE) * CHARS_PER_TOKEN
    text = "\n\n".join(lines)
    if len(text) > room:  # the start goes: the earlier summary and the latest turns stay
        text = "[... the oldest part is cut ...]\n" + text[len(text) - room :]
    settings = base.settings
    kept = ModelSettings(max_output_tokens=settings.max_output_tokens) if settings else None
    return base.model_copy(
        update={
            "instructions": SUMMARY_INSTRUCTIONS,
            "items": [UserMessage(content=text)],
            "tools": [],
            "settings": kept if kept is not None and not kept.is_empty() else None,
            "output": None,
        }
    )


def record(
    state: RunState, planned: Compaction, *, now: datetime, summary: ModelReply | None = None
) -> None:
    """Record `planned` (with the summary the model wrote, and what that used)."""
    made = planned.model_copy(update={"at": now})
    if summary is not None:
        made.summary = summary.content or ""
        made.usage = summary.usage
        state.usage = state.usage.plus(summary.usage)
        made.tokens_after = _tokens(view(state, made))
    state.items.append(made)
    state.updated_at = now


def overflowed(state: RunState, error: ErrorInfo) -> bool:
    """Whether the provider refused the next call as longer than its window and the run
    may compact and call once more (recorded in `context_overflow`)."""
    turn = state.turn + 1
    code = error.details.get("provider_code")
    if state.agent.context_policy is None or code != "context_length_exceeded":
        return False
    if state.context_overflow == turn:
        return False  # it was compacted for that already
    keep = max(1, state.agent.context_policy.keep_recent_turns // 2)
    if sum(isinstance(i, AssistantMessage) for i in state.items) <= keep:
        return False  # nothing older than what is always sent: compacting cannot help
    state.context_overflow = turn
    return True


def view_of(items: Sequence[Item]) -> list[Item]:
    """The conversation items among `items` (what the model is sent of them)."""
    return [i for i in items if isinstance(i, UserMessage | AssistantMessage | ToolResult)]


def _fixed(request: ModelRequest) -> int:
    """Tokens of what every call sends besides the conversation: instructions, tools."""
    tools = json.dumps([t.model_dump() for t in request.tools])
    return (len(request.instructions) + len(tools)) // CHARS_PER_TOKEN


def _last_counted(state: RunState) -> tuple[int, Usage] | None:
    """The latest reply with the provider's count, if no compaction came after it and
    the provider counted it."""
    for index in range(len(state.items) - 1, -1, -1):
        item = state.items[index]
        if isinstance(item, Compaction):
            return None
        if isinstance(item, AssistantMessage) and item.usage is not None:
            # A provider that reports no usage (0 input tokens): estimate instead.
            return (index, item.usage) if item.usage.input_tokens > 0 else None
    return None


def _tokens(items: Sequence[Item]) -> int:
    chars = 0
    for item in items:
        if isinstance(item, UserMessage | ToolResult):
            chars += len(item.content)
        elif isinstance(item, AssistantMessage):
            chars += len(item.content or "")
            chars += sum(len(c.tool) + len(c.arguments) + len(c.call_id) for c in item.tool_calls)
            chars += sum(len(r.encrypted_content or "") for r in item.reasoning)
    return chars // CHARS_PER_TOKEN + PER_MESSAGE * len(items)


def _transcript(items: list[Item]) -> list[str]:
    lines: list[str] = []
    for item in items:
        if isinstance(item, UserMessage):
            lines.append(f"USER: {item.content}")
        elif isinstance(item, AssistantMessage):
            if item.content:
                lines.append(f"ASSISTANT: {item.content}")
            lines += [
                f"ASSISTANT called {c.tool}({c.arguments}) [{c.call_id}]" for c in item.tool_calls
            ]
        elif isinstance(item, ToolResult):
            text = item.content
            if len(text) > RESULT_CHARS_IN_TRANSCRIPT:
                text = f"{text[:RESULT_CHARS_IN_TRANSCRIPT]}… ({len(item.content):,} characters)"
            lines.append(f"RESULT [{item.call_id}]: {text}")
    return lines
