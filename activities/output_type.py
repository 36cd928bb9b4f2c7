"""An agent's output type: the strict JSON Schema the model is asked for, and the check of
a final reply against the type itself (in `call_model`, in the worker that defines it).

The schema follows the OpenAI client's own strict-schema rules
(`openai.lib._pydantic.to_strict_json_schema`, what `client.chat.completions.parse`
sends: every object closed, every property required). Strict mode wants an object
at the root, so a type that is not a pydantic model (`int`, `list[str]`, a
`Literal`, a union of models) is asked for as `{"output": <value>}` and unwrapped
after validation, as the OpenAI Agents SDK does.
"""

from __future__ import annotations

import functools
import hashlib
import re
import types
import typing
from dataclasses import dataclass
from typing import Any

from durable_agents.workflows.agent_spec import OutputSpec
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.payloads import OutputCheck, problems
from durable_agents.workflows.proposed_calls import parse_arguments
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError, create_model


@dataclass(frozen=True)
class OutputType:
    """A type as an agent's output: its spec (frozen into runs) and its validator."""

    type_: Any
    spec: OutputSpec
    adapter: TypeAdapter[Any]
    """Validates the reply's JSON as the model sends it (the wrapper, if wrapped)."""

    def check(self, content: str | None) -> OutputCheck:
        """Whether `content` is a valid output; the value as JSON, or the problem."""
        if not content or not content.strip():
            return OutputCheck(valid=False, problem="the reply is empty: send the JSON")
        try:
            parse_arguments(content, finite=True)  # NaN, Infinity, 1e400: no JSON value
        except ValueError as err:
            return OutputCheck(valid=False, problem=f"Invalid JSON: {err}")
        try:
            value = self.adapter.validate_json(content)
        except ValidationError as err:
            return OutputCheck(valid=False, problem=problems(err))
        if self.spec.wrapped:
            value = value.output
        return OutputCheck(valid=True, value=_plain(self.type_).dump_python(value, mode="json"))


@functools.lru_cache(maxsize=256)
def output_type(type_: Any) -> OutputType:
    """`type_` as an output type; TypeError if pydantic cannot validate it or it has no
    strict JSON Schema."""
    name = _name(type_)
    wrapped = not (isinstance(type_, type) and issubclass(type_, BaseModel))
    try:
        model: Any = (
            create_model(name, __config__=ConfigDict(extra="forbid"), output=(type_, ...))
            if wrapped
            else type_
        )
        adapter: TypeAdapter[Any] = TypeAdapter(model)
        # imported here: `openai` takes 0.4 s to load, and agentctl (through
        # `signing.Trust`) loads this module without ever making a schema
        from openai.lib._pydantic import to_strict_json_schema

        schema = to_strict_json_schema(adapter)
    except Exception as err:  # pydantic's and openai's errors for types they cannot take
        raise TypeError(f"output_type {type_!r} cannot be asked for: {err}") from None
    digest = hashlib.sha256(canonical_json(schema)).hexdigest()
    spec = OutputSpec(name=name, json_schema=schema, sha256=digest, wrapped=wrapped)
    return OutputType(type_=type_, spec=spec, adapter=adapter)


def _name(type_: Any) -> str:
    """`RefundDecision`; `list_str` for `list[str]`, `Approve_or_Reject` for a union:
    what the API's `name` allows."""
    return re.sub(r"[^A-Za-z0-9]+", "_", _words(type_)).strip("_")[:64] or "output"


def _words(type_: Any) -> str:
    origin, args = typing.get_origin(type_), typing.get_args(type_)
    if origin in (typing.Union, types.UnionType):
        return "_or_".join(_words(a) for a in args)
    if origin is typing.Literal:
        return "_".join(["Literal", *(str(a) for a in args)])
    if origin is not None:
        return "_".join([_words(origin), *(_words(a) for a in args)])
    return type_.__name__ if isinstance(type_, type) else str(type_)


@functools.lru_cache(maxsize=256)
def _plain(type_: Any) -> TypeAdapter[Any]:
    return TypeAdapter(type_)
