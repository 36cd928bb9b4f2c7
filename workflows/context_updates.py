"""A run's context changed by its tools: a tool with a `ToolContext` parameter may change
`ctx.context` (in place, or with `ctx.set_context(...)`); `run_tool` sends the change back
with the call's outcome, and the workflow takes it here, when it records the reply's
results, in the order of the reply's calls. The calls of one reply that run together all
see the context as it was when they started. When the context is a JSON object, a change
is the top-level keys a call set or removed, so calls that change different keys all keep
theirs (two that set the same key: the later call of the reply wins); any other change
replaces the whole context.

The context travels in every activity input that gives it (tools, rules, instructions),
so it stays small: a change that would take it past `MAX_CONTEXT_BYTES` is refused, with
the reason recorded on the call's result; the result itself is recorded all the same.

Pure: no temporalio.
"""

from __future__ import annotations

import pydantic_core
from durable_agents.workflows.payloads import ContextUpdate
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunState
from pydantic import JsonValue

MAX_CONTEXT_BYTES = 32_000
"""The most a run's context may take as JSON after a tool changes it."""


def too_large(value: JsonValue) -> str | None:
    """Why `value` cannot be the run's context (its JSON is too large); None if it can."""
    size = len(pydantic_core.to_json(value))
    if size <= MAX_CONTEXT_BYTES:
        return None
    return f"the new context is {size:,} bytes of JSON, more than {MAX_CONTEXT_BYTES:,}"


def changed(before: JsonValue, after: JsonValue) -> ContextUpdate:
    """The update that makes `before` into `after` (which differ)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return ContextUpdate(value=after)
    keys = {k: v for k, v in after.items() if k not in before or not same(before[k], v)}
    return ContextUpdate(keys=keys, removed=[k for k in before if k not in after])


def applied(context: JsonValue, update: ContextUpdate) -> JsonValue:
    """`context` with `update` taken."""
    if update.keys is None:
        return update.value
    base = dict(context) if isinstance(context, dict) else {}
    for key in update.removed:
        base.pop(key, None)
    return {**base, **update.keys}


def apply(state: RunState, result: ToolResult, update: ContextUpdate | None) -> ToolResult:
    """Take `update` (the change a call's tool made) into `state.context`, and return the
    call's `result` marked with what became of it."""
    if update is None:
        return result
    new = applied(state.context, update) if update.refused is None else None
    refused = update.refused or too_large(new)
    if refused is not None:
        return result.model_copy(update={"context_refused": refused})
    state.context = new
    return result.model_copy(update={"context_changed": True})


def same(a: JsonValue, b: JsonValue) -> bool:
    """`a` and `b` are the same JSON (`==` alone takes 1, 1.0 and True for one)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def overlay_context(base: JsonValue, overlay: JsonValue) -> JsonValue:
    """A resumed run's tool context: `overlay` laid over the snapshot's `base`. Two
    objects merge key by key (the overlay's value wins, nested objects merged the same
    way); anything else is replaced by the overlay."""
    if isinstance(base, dict) and isinstance(overlay, dict):
        merged = dict(base)
        for key, value in overlay.items():
            merged[key] = overlay_context(base.get(key), value) if key in base else value
        return merged
    return overlay
