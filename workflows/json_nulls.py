"""Empty lists and maps written as `null`, read as empty.

Go's `encoding/json` writes a nil slice or map as `null`, and the `temporal`
CLI prints a query answer (`get_state -o json`) that way too; a service that
feeds such a state back (`resume_from`, a snapshot file) would be refused with
`items: Input should be a valid array`. `filled` replaces `null` by `[]` or `{}`
wherever RunState's JSON Schema has an array or a map that may not be null, and
nowhere else: a `null` where the schema wants an object, a string or a number
is still refused, and a field that may be null stays null.

It works on the parsed JSON, before validation: a pydantic `before` validator
would have the rest of the document validated in Python mode, where strict
durations (`"PT1H"`) and timestamps no longer parse.
"""

from __future__ import annotations

import functools
from typing import Any

from durable_agents.workflows.state import RunState

Schema = dict[str, Any]


@functools.cache
def _schema() -> Schema:
    return RunState.model_json_schema(mode="validation")


def filled(document: dict[str, Any]) -> dict[str, Any]:
    """`document` (a RunState as JSON data) with `null` lists and maps made empty."""
    schema = _schema()
    result = _fill(document, schema, schema.get("$defs", {}))
    assert isinstance(result, dict)
    return result


def _fill(value: Any, schema: Schema, defs: dict[str, Schema]) -> Any:
    schema = _resolved(schema, value, defs)
    if value is None:
        if schema.get("type") == "array":
            return []
        if schema.get("type") == "object" and "properties" not in schema:
            return {}
        return None
    if isinstance(value, dict) and "properties" in schema:
        properties = schema["properties"]
        return {
            key: _fill(inner, properties[key], defs) if key in properties else inner
            for key, inner in value.items()
        }
    if isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        return {
            key: _fill(inner, schema["additionalProperties"], defs) for key, inner in value.items()
        }
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_fill(inner, schema["items"], defs) for inner in value]
    return value


def _resolved(schema: Schema, value: Any, defs: dict[str, Schema]) -> Schema:
    """The one schema `value` is read with: references followed, a union narrowed to its
    discriminator's choice or to its only alternative that is not `null` (an empty
    schema, which fills nothing, when it cannot be told)."""
    for _ in range(32):  # a reference chain, never a cycle in practice
        if "$ref" in schema:
            schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
            continue
        options = schema.get("oneOf") or schema.get("anyOf")
        if not options:
            return schema
        discriminator = schema.get("discriminator")
        if discriminator and isinstance(value, dict):
            tag = value.get(discriminator["propertyName"])
            target = discriminator.get("mapping", {}).get(tag) if isinstance(tag, str) else None
            schema = {"$ref": target} if target else {}
            continue
        not_null = [o for o in options if o.get("type") != "null"]
        if len(not_null) != 1 or (value is None and len(options) > len(not_null)):
            return {}  # several alternatives, or null allowed: leave the value as it is
        schema = not_null[0]
    return {}
