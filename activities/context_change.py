"""A tool's change to the run's context, as `run_tool` sends it back: nothing when the
context is as it was, the change when the new context is JSON of a size the run takes,
else why not (`workflows.context_updates` takes it into the run)."""

from __future__ import annotations

from durable_agents.workflows.context_updates import changed, same, too_large
from durable_agents.workflows.payloads import ContextUpdate
from pydantic import JsonValue, TypeAdapter, ValidationError

_JSON: TypeAdapter[JsonValue] = TypeAdapter(JsonValue)


def changed_context(before: JsonValue, after: object) -> ContextUpdate | None:
    """The update `after` stands for, against the context `before`; None: unchanged. The
    size is checked here on the whole new context (the run checks it again on what the
    change makes of its context)."""
    try:
        value = _JSON.validate_python(after, strict=True)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the context"
        said = f"the new context is not JSON: {where}: {first['msg']}"
        return ContextUpdate(refused=said[:2_000])
    if same(value, before):
        return None
    refused = too_large(value)
    return ContextUpdate(refused=refused) if refused else changed(before, value)
