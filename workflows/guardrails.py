"""Guardrails in the pure loop: when they run, and what their verdicts do. Pure.

Input guardrails check each message of the user (the first, and each new one of a
session) before the model sees it; output guardrails check the final output before
the run ends or waits for the next message. Their verdicts are recorded as
`GuardrailCheck` items after what they checked, so the loop knows what has been
checked, also after a continue-as-new or a resume. A tripwire ends the run
`guardrail_tripped` with the guardrail's name and reason; an output that tripped
one is withheld (`final_output` cleared). A guardrail that fails after its retries
counts as tripped: a check that cannot run must not let anything through.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal, TypeVar

from durable_agents.workflows.contract import ERROR_GUARDRAIL_TRIPPED
from durable_agents.workflows.payloads import GuardrailVerdict
from durable_agents.workflows.state import (
    AssistantMessage,
    ErrorInfo,
    GuardrailCheck,
    RunState,
    RunStatus,
    UserMessage,
)
from pydantic import JsonValue

Kind = Literal["input", "output"]
_I = TypeVar("_I", UserMessage, AssistantMessage)


def due(state: RunState) -> tuple[Kind, JsonValue] | None:
    """The guardrails to run next, and the value they check; None if none are due."""
    agent = state.agent
    if agent.input_guardrails:
        found = _latest(state, UserMessage)
        if (
            found is not None
            and not found[1].feedback
            and not _checked_after(state, found[0], "input")
        ):
            return "input", found[1].content
    if agent.output_guardrails and state.final_output is not None:
        reply = _latest(state, AssistantMessage)
        if reply is not None and _is_final(state, *reply):
            if not _checked_after(state, reply[0], "output"):
                return "output", _output_value(state)
    return None


def _is_final(state: RunState, index: int, reply: AssistantMessage) -> bool:
    """`reply` (at `index`) is the run's answer: no tool calls, nobody spoke after it
    (a feedback message asks again; a user message starts a new exchange)."""
    later = state.items[index + 1 :]
    return not reply.tool_calls and not any(isinstance(i, UserMessage) for i in later)


def record(state: RunState, kind: Kind, verdicts: list[GuardrailVerdict], *, now: datetime) -> None:
    """Record the verdicts; the first tripwire ends the run."""
    for verdict in verdicts:
        state.items.append(
            GuardrailCheck(
                kind=kind,
                name=verdict.name,
                tripped=verdict.tripped,
                reason=verdict.reason,
                at=now,
            )
        )
    tripped = next((v for v in verdicts if v.tripped), None)
    if tripped is not None:
        why = f": {tripped.reason}" if tripped.reason else ""
        state.error = ErrorInfo(
            type=ERROR_GUARDRAIL_TRIPPED,
            message=f"{kind} guardrail {tripped.name} tripped{why}",
            details={"guardrail": tripped.name, "kind": kind},
        )
        state.status = RunStatus.GUARDRAIL_TRIPPED
        if kind == "output":
            state.final_output = None
    state.updated_at = now


def _output_value(state: RunState) -> JsonValue:
    """The final output as the output guardrails get it: the typed value's JSON for an
    agent with an output type, else the text."""
    text = state.final_output or ""
    return json.loads(text) if state.agent.output is not None else text


def _latest(state: RunState, kind: type[_I]) -> tuple[int, _I] | None:
    """The latest item of `kind` and its index (feedback messages included)."""
    for index in range(len(state.items) - 1, -1, -1):
        item = state.items[index]
        if isinstance(item, kind):
            return index, item
    return None


def _checked_after(state: RunState, index: int, kind: Kind) -> bool:
    return any(isinstance(i, GuardrailCheck) and i.kind == kind for i in state.items[index + 1 :])
