"""Size limits on what senders put into a run, so no signal or update can bloat its
state (a 1.9 MB `reason` five times over is 7.6 MB carried across every
continue-as-new and export). Together they keep what senders can add under 1 MB:
20 queued messages of 32,000 characters, 50 held decisions of 16 KB of arguments.
Pure: the inbox and the `decide` validator apply them.
"""

from __future__ import annotations

import json

from durable_agents.workflows import input_items
from durable_agents.workflows.input_items import InputMessage
from durable_agents.workflows.payloads import DecisionSignal

MAX_ID_CHARS = 200
"""`call_id`, `approver`, `sender` (and a decision's `run_id`, checked by its model)."""
MAX_REASON_CHARS = 2_000
"""A decision's `reason`, an `end_session` reason."""
MAX_ARGUMENTS_BYTES = 16_000
"""Edited arguments, as compact JSON."""
MAX_METADATA_BYTES = 4_000
"""Bytes of a decision's `metadata` as compact JSON (the sender's own audit data)."""
MAX_MESSAGE_CHARS = 32_000
"""One `send_message` content."""
MAX_ANSWER_BYTES = 32_000
"""The most bytes of JSON an answer (`result`) may have: the model reads it."""
MAX_ANSWER_DEPTH = 32
"""The deepest an answer may nest (arrays and objects)."""
MAX_JSON_DEPTH = 64
"""The deepest edited arguments, `always_when` or `metadata` may nest."""
MAX_HELD = 50
"""Decisions held for calls a model reply has not proposed yet."""
MAX_QUEUED_MESSAGES = 20
"""Messages waiting for the current turn to end."""


def decision_problem(payload: DecisionSignal) -> str | None:
    """Why a decision payload is too large to take, or None."""
    for name in ("call_id", "approver", "sender"):
        value = getattr(payload, name)
        if value is not None and len(value) > MAX_ID_CHARS:
            return f"{name}: {len(value):,} characters, at most {MAX_ID_CHARS:,}"
    if payload.reason is not None and len(payload.reason) > MAX_REASON_CHARS:
        return f"reason: {len(payload.reason):,} characters, at most {MAX_REASON_CHARS:,}"
    for name, limit, deepest in (
        ("result", MAX_ANSWER_BYTES, MAX_ANSWER_DEPTH),
        ("arguments", MAX_ARGUMENTS_BYTES, MAX_JSON_DEPTH),
        ("always_when", MAX_ARGUMENTS_BYTES, MAX_JSON_DEPTH),
        ("metadata", MAX_METADATA_BYTES, MAX_JSON_DEPTH),
    ):
        value = getattr(payload, name)
        if value is None:
            continue
        plain = _plain(value)
        depth = json_depth(plain)
        if depth > deepest:
            return f"{name}: nested {depth} deep, at most {deepest}"
        try:  # JSON has no Infinity or NaN: `1e400` reads as inf, and no digest holds it
            text = json.dumps(plain, separators=(",", ":"), allow_nan=False)
        except ValueError:
            return f"{name}: a number that is not finite (JSON has no Infinity or NaN)"
        if len(text.encode()) > limit:
            return f"{name}: {len(text.encode()):,} bytes of JSON, at most {limit:,}"
    return None


def json_depth(value: object) -> int:
    """How deeply a JSON value nests (a scalar: 0), counted without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _plain(value: object) -> object:
    if isinstance(value, list):
        return [_plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump is not None else value


def message_problem(content: str | list[InputMessage]) -> str | None:
    """Why a message is too large to take (or holds too many images), or None."""
    if not isinstance(content, str):
        return input_items.images_problem(content) or message_problem(input_items.text_of(content))
    if len(content) > MAX_MESSAGE_CHARS:
        return f"content: {len(content):,} characters, at most {MAX_MESSAGE_CHARS:,}"
    return None


def reason_problem(reason: str | None) -> str | None:
    """Why an `end_session` reason is too large, or None."""
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        return f"reason: {len(reason):,} characters, at most {MAX_REASON_CHARS:,}"
    return None


MAX_REFUSAL_CHARS = 500
"""A refusal's recorded reason (it may quote what was sent)."""


def clip(text: str, limit: int = MAX_ID_CHARS) -> str:
    """`text` cut to `limit` characters, marked, for an audit entry."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
