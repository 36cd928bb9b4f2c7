"""Frozen specs derived from definitions by field name, so an option is declared once
on each side (the definition's field, the spec's field) and copied by rule:

- a spec field `X` takes the definition's `X` as is;
- a spec field `X_seconds` takes the definition's `X` (a timedelta, or None) in seconds;
- anything else is given explicitly by the caller (`derived`).

`Agent.spec()` and `Tool.spec()` use it; tests/unit/test_tools.py checks that every spec
field has a source, so a new option cannot be silently left at its default.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel

_S = TypeVar("_S", bound=BaseModel)


def derive(spec: type[_S], source: object, **derived: Any) -> _S:
    """`spec` built from `source`'s same-named fields, plus `derived`."""
    values = dict(derived)
    for name in spec.model_fields:
        if name in values:
            continue
        plain = name.removesuffix("_seconds")
        if plain != name and hasattr(source, plain):
            values[name] = _seconds(getattr(source, plain))
        elif hasattr(source, name):
            values[name] = getattr(source, name)
        else:
            raise TypeError(f"{type(source).__name__} has no source for {spec.__name__}.{name}")
    return spec(**values)


def _seconds(duration: timedelta | None) -> float | None:
    return duration.total_seconds() if duration is not None else None
