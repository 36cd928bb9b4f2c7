"""Pure checks behind approvals: does a call need a decision, and are edited
arguments acceptable for the tool. Deterministic; used inside the workflow.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Collection
from typing import Any

from durable_agents.workflows.agent_spec import ApprovalCondition, ApprovalPolicy, ToolSpec
from durable_agents.workflows.condition_ops import CannotJudge, holds_both, holds_either


def requires_decision(policy: ApprovalPolicy, arguments: dict[str, Any]) -> bool:
    """True if any condition holds (or there are none). Fails closed: a condition
    that cannot be evaluated holds, so a malformed call never skips approval."""
    if not policy.when:
        return True
    return any(_holds(c, arguments) for c in policy.when)


def _holds(condition: ApprovalCondition, arguments: dict[str, Any]) -> bool:
    if condition.field not in arguments:
        return True
    try:  # as written or as people read it (`workflows.condition_ops`)
        return holds_either(condition.op, arguments[condition.field], condition.value)
    except (TypeError, CannotJudge):
        return True


def condition_holds(condition: ApprovalCondition, arguments: dict[str, Any]) -> bool:
    """Whether the condition holds, strictly: a missing field or incomparable types
    make it false (used where holding grants something: limits, `always_when`)."""
    if condition.field not in arguments:
        return False
    value = arguments[condition.field]
    if isinstance(value, bool) != isinstance(condition.value, bool):
        return False  # True == 1 in Python; not in a policy
    try:  # as written and as people read it (`workflows.condition_ops`)
        return holds_both(condition.op, value, condition.value)
    except (TypeError, CannotJudge):
        return False


_VERBS = {"contains": "contain", "not_contains": "not contain", "matches": "match"}


def limits_problem(
    policy: ApprovalPolicy, arguments: dict[str, Any], *, sensitive: Collection[str] = ()
) -> str | None:
    """The first of the policy's `limits` the arguments do not meet, in words, or None
    (the value of a `sensitive` argument is not quoted)."""
    for limit in policy.limits:
        if not condition_holds(limit, arguments):
            value = arguments.get(limit.field, None)
            shown = "a sensitive value" if limit.field in sensitive else json.dumps(value)
            verb = _VERBS.get(limit.op, f"be {limit.op}")
            return (
                f"{limit.field} must {verb} {json.dumps(limit.value)} "
                f"(is {shown if limit.field in arguments else 'missing'})"
            )
    return None


def arguments_problem(tool: ToolSpec, arguments: dict[str, Any]) -> str | None:
    """Why `arguments` do not fit the tool's JSON Schema, or None.

    Checks what the schema pydantic makes for a tool states at the top level:
    required and unknown properties, and each value's JSON type, enum, bounds
    and lengths (following local `$ref`s). The tool's own pydantic model still
    validates fully when the call runs.
    """
    schema: dict[str, Any] = tool.parameters  # an MCP server's may be odd: checked loosely
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    missing = [name for name in required if isinstance(name, str) and name not in arguments]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    if schema.get("additionalProperties") is False:
        unknown = [name for name in arguments if name not in properties]
        if unknown:
            return f"unknown argument(s): {', '.join(unknown)}"
    for name, value in arguments.items():
        if name in properties:
            problem = _value_problem(_resolve(schema, properties[name]), value, schema)
            if problem:
                return f"{name}: {problem}"
    return None


_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _resolve(root: dict[str, Any], schema: object) -> dict[str, Any]:
    """The subschema, `$ref`s to `$defs` followed; anything but an object (a boolean
    schema, a server's odd value) as the empty schema: no constraint."""
    if not isinstance(schema, dict):
        return {}
    ref = schema.get("$ref", "")
    defs = root.get("$defs")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and isinstance(defs, dict):
        found = defs.get(ref.removeprefix("#/$defs/"), {})
        return found if isinstance(found, dict) else {}
    return schema


_MAX_DEPTH = 16
"""`anyOf`s nested (or referring to themselves) deeper than this are not checked."""


def _value_problem(
    schema: dict[str, Any],
    value: Any,
    root: dict[str, Any],
    depth: int = 0,
    seen: dict[tuple[int, int], tuple[dict[str, Any], str | None]] | None = None,
) -> str | None:
    """Why `value` does not fit `schema`, or None. `seen`: the answers for the subschemas
    (by identity, at each depth) already checked against this value: an `anyOf` whose
    options refer to it again is worked out once per depth, not once per path (three
    such options 16 deep were 3^16 checks, seconds of a workflow task)."""
    options = schema.get("anyOf")
    if isinstance(options, list) and options and depth < _MAX_DEPTH:
        seen = {} if seen is None else seen
        problems = []
        for option in options:
            resolved = _resolve(root, option)
            key = (id(resolved), depth + 1)  # `resolved` is kept with its answer: ids stay
            if key not in seen:
                seen[key] = (resolved, _value_problem(resolved, value, root, depth + 1, seen))
            problems.append(seen[key][1])
        return None if any(p is None for p in problems) else problems[0]
    expected = schema.get("type")
    if isinstance(expected, str) and expected in _JSON_TYPES and not _JSON_TYPES[expected](value):
        return f"expected {expected}, got {type(value).__name__}"
    if isinstance(schema.get("enum"), list) and value not in schema["enum"]:
        return f"must be one of {schema['enum']}"
    if "const" in schema and value != schema["const"]:
        return f"must be {schema['const']!r}"
    return _bounds_problem(schema, value)


def _bounds_problem(schema: dict[str, Any], value: Any) -> str | None:
    if _JSON_TYPES["number"](value):
        for key, fails, words in (
            ("minimum", operator.lt, "at least"),
            ("maximum", operator.gt, "at most"),
            ("exclusiveMinimum", operator.le, "greater than"),
            ("exclusiveMaximum", operator.ge, "less than"),
        ):
            bound: Any = schema.get(key)
            if _JSON_TYPES["number"](bound) and fails(value, bound):
                return f"must be {words} {bound}"
    if isinstance(value, str | list):
        shortest: Any = schema.get("minLength")
        longest: Any = schema.get("maxLength")
        if _JSON_TYPES["integer"](shortest) and len(value) < shortest:
            return f"must have at least {shortest} characters"
        if _JSON_TYPES["integer"](longest) and len(value) > longest:
            return f"must have at most {longest} characters"
    return None
