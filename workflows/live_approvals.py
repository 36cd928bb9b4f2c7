"""A code rule or an evaluator given in Python (`ApprovalPolicy(rule=fn,
evaluator=fn_or_agent)`, `@tool(needs_approval=fn)`): the policy keeps the object for
the worker and records only its name, which is what a run's state and history carry.
Pure: the workflow only ever sees the names.
"""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import BaseModel


def name_of(fn: Any) -> str:
    """A function's name as people find it in code: `module.qualname`."""
    module = getattr(fn, "__module__", None) or "?"
    qualname = getattr(fn, "__qualname__", None) or type(fn).__name__
    return f"{module}.{qualname}"[:300]


def _two_arguments(fn: Any, what: str) -> None:
    """Refuse, at definition, a function that cannot be called `(arguments, context)`."""
    try:
        inspect.signature(fn).bind({}, None)
    except TypeError as err:
        raise ValueError(f"{what} {name_of(fn)} must take (arguments, context): {err}") from None
    except ValueError:  # a builtin without a signature: it is tried when called
        pass


def _is_agent(value: Any) -> bool:
    return all(hasattr(value, a) for a in ("name", "model", "instructions", "tools"))


def evaluator_ref(value: Any) -> dict[str, Any]:
    """The plain-data `EvaluatorRef` of an evaluator given in Python."""
    if _is_agent(value):
        if not isinstance(value.instructions, str):
            raise ValueError(f"evaluator agent {value.name}: its instructions must be a string")
        return {
            "kind": "agent",
            "name": value.name,
            "model": value.model,
            "instructions": value.instructions,
            "model_api": getattr(value, "model_api", None),
        }
    if callable(value):
        _two_arguments(value, "evaluator")
        return {"kind": "function", "name": name_of(value)}
    raise ValueError(f"an evaluator is a function or an Agent, not {type(value).__name__}")


def split(data: Any) -> tuple[Any, Any, Any]:
    """`data` for the policy's validation, with a rule function and an evaluator object
    replaced by their names; and those objects (None where not given in Python)."""
    if not isinstance(data, dict):
        return data, None, None
    rule = data.get("rule")
    evaluator = data.get("evaluator")
    rule_fn = rule if callable(rule) and not isinstance(rule, str) else None
    live = evaluator is not None and not isinstance(evaluator, dict | BaseModel)
    if rule_fn is None and not live:
        return data, None, None
    data = dict(data)
    if rule_fn is not None:
        _two_arguments(rule_fn, "approval rule")
        data["rule"] = name_of(rule_fn)
    if live:
        data["evaluator"] = evaluator_ref(evaluator)
    return data, rule_fn, evaluator if live else None
