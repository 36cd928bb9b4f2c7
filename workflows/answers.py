"""Answers to calls of external tools (`@tool(external=True)`). Pure.

An external tool's call runs no code: it waits, as a call waiting for approval, for
a person or a service to answer it (the `answer` signal, or `decide` with
`"decision": "answer"`). The answer is checked against the tool's answer schema (the
JSON Schema of the function's return annotation), every nested field included, before
it is recorded; the model then gets it as the call's result, as a tool returning that
value would give it: a string as it is, any other value as JSON text. A call waiting
for an answer takes an answer or a rejection, never an approval (approving would
run a body that never runs); a call waiting for approval takes no answer.

The schema is checked with `jsonschema` (Draft 2020-12, what pydantic writes):
deterministic, no I/O (its `$ref`s are local, resolved in the schema itself; a remote
one is refused, never fetched).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from durable_agents.workflows.agent_spec import ToolSpec
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import DecideInput
from durable_agents.workflows.run_items import AssistantMessage, ToolCall
from durable_agents.workflows.state import RunState
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import Unresolvable

Kind = Literal["approval", "answer"]

MAX_PROBLEM_CHARS = 600
"""The most characters of a schema mismatch told back (the path and the first error)."""

_NO_REMOTE: Registry[Any] = Registry()
"""A registry that retrieves nothing: a `$ref` out of the answer schema fails (without
one, `jsonschema` would fetch it over the network)."""


def kind(tool: ToolSpec | None) -> Kind:
    """What a call of `tool` waits for: an answer (an external tool) or a decision."""
    return "answer" if tool is not None and tool.external else "approval"


def check(call: ToolCall, tool: ToolSpec | None, request: DecideInput) -> None:
    """Raise DecisionRefused unless `request` is a decision the call can take: an answer
    (meeting the answer schema) or a rejection for a call of an external tool, an
    approval or a rejection for any other."""
    waits_for = kind(tool)
    if request.decision == "answer" and waits_for != "answer":
        raise DecisionRefused(
            f"tool call {call.call_id} ({call.tool}) waits for approve or reject, not an "
            "answer: only a call of an external tool takes one"
        )
    if request.decision == "approve" and waits_for == "answer":
        raise DecisionRefused(
            f"tool call {call.call_id} ({call.tool}) waits for an answer, not an approval: "
            "send `answer` with a `result` (or reject it)"
        )
    if request.decision != "answer":
        if request.result is not None:
            raise DecisionRefused(f"only an answer carries a `result`, not a {request.decision}")
        return
    if "result" not in request.model_fields_set:
        raise DecisionRefused("an answer must carry its `result` (JSON; null where allowed)")
    if request.always:
        raise DecisionRefused("an answer is given once per call: `always` is refused")
    assert tool is not None
    problem = result_problem(tool, request.result)
    if problem is not None:
        raise DecisionRefused(
            f"the answer does not match the answer schema of {call.tool}: {problem}"
        )


def result_problem(tool: ToolSpec, result: Any) -> str | None:
    """Why `result` does not meet `tool`'s answer schema (the first error, with the
    path to the field), or None."""
    schema = tool.answer_schema if tool.answer_schema is not None else {}
    try:
        validator = Draft202012Validator(schema, registry=_NO_REMOTE)
        errors = sorted(validator.iter_errors(result), key=_order)
    except (SchemaError, Unresolvable) as err:
        return f"the answer schema cannot be checked ({type(err).__name__})"
    except RecursionError:
        return "the answer nests too deeply to be checked"
    if not errors:
        return None
    first = errors[0]
    where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in first.absolute_path)
    text = f"{where.lstrip('.') or '(root)'}: {first.message}"
    if len(errors) > 1:
        text += f" (and {len(errors) - 1} more)"
    return text if len(text) <= MAX_PROBLEM_CHARS else text[: MAX_PROBLEM_CHARS - 1] + "…"


def _order(error: Any) -> tuple[int, str, str]:
    """Errors in a fixed order (shallowest first), so a refusal reads the same on replay."""
    path = [str(p) for p in error.absolute_path]
    return (len(path), ".".join(path), error.message)


def wait_summary(state: RunState, call_ids: tuple[str, ...]) -> str:
    """The Temporal UI's summary of a run's wait for decisions: what it waits for
    (`approval deadline: c1`, `answer deadline: c2`, or both), and on which calls."""
    tools = {c.call_id: state.agent.tool(c.tool) for c in decisions_calls(state)}
    asked = [i for i in call_ids if kind(tools.get(i)) == "answer"]
    approvals = [i for i in call_ids if i not in asked]
    parts = [f"approval deadline: {', '.join(approvals)}"] if approvals else []
    parts += [f"answer deadline: {', '.join(asked)}"] if asked else []
    return "; ".join(parts)


def decisions_calls(state: RunState) -> list[ToolCall]:
    """The calls of the run's latest reply."""
    reply = next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)
    return reply.tool_calls if reply is not None else []


def result_text(result: Any) -> str:
    """What the model gets as the call's result: a string as it is, any other JSON
    value as compact JSON text (as `run_tool` gives a tool's return value)."""
    if isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))
