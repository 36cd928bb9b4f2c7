"""Payloads built on the client side and refused there, before anything is sent,
with one readable line: a bad value never reaches a workflow."""

from __future__ import annotations

import math
from typing import TypeVar

from durable_agents.client.errors import AgentClientError
from durable_agents.workflows.payloads import AgentInput, problems
from pydantic import BaseModel, JsonValue, ValidationError

_M = TypeVar("_M", bound=BaseModel)


def agent_input(agent: str, input: str, *, context: JsonValue, max_turns: int | None) -> AgentInput:
    """The workflow input, refused here (not by the workflow) if it is not valid JSON data."""
    problem = json_problem(context, "context")
    if problem:
        raise AgentClientError(f"context must be JSON data: {problem}")
    return checked(AgentInput, agent=agent, input=input, context=context, max_turns=max_turns)


def json_problem(value: object, path: str) -> str | None:
    """Where `value` stops being plain JSON data (None if it is JSON all through)."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value}, not a JSON number"
    if isinstance(value, list):
        problems = (json_problem(v, f"{path}[{i}]") for i, v in enumerate(value))
        return next((p for p in problems if p), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}; JSON keys are strings"
            if problem := json_problem(item, f"{path}.{key}"):
                return problem
        return None
    return (
        f"{path} is of type {type(value).__name__}; use dict, list, str, int, float, bool or None"
    )


def checked(model: type[_M], **fields: object) -> _M:
    """Build a payload model; a validation error becomes one readable line."""
    try:
        return model(**fields)
    except ValidationError as err:
        raise AgentClientError(f"invalid {model.__name__}: {problems(err)}") from err
