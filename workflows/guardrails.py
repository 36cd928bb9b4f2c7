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
from typing import Literal

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


def due(state: RunState) -> tuple[Kind, JsonValue] | None:
    """The guardrails to run next, and the value they check; None if none are due."""
    agent = state.agent
    if agent.input_guardrails:
        message = _latest_user_message(state)
        if message is not None and not _checked_after(state, message, "input"):
            return "input", state.items[message].content  # type: ignore[union-attr]
    if agent.output_guardrails and state.final_output is not None:
        reply = _latest_reply(state)
        if reply is not None and _is_final(state, reply) and not _checked_after(state, reply, "output"):
            return "output", _output_value(state)
    return None


def _is_final(state: RunState, index: int) -> bool:
    """The reply at `index` is the run's answer: no tool calls, nobody spoke after it
    (a feedback message asks again; a user message starts a new exchange)."""
    reply = state.items[index]
    return (
        isinstance(reply, AssistantMessage)
        and not reply.tool_calls
        and not any(isinstance(i, UserMessage) for i in state.items[index + 1 :])
    )


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


def _latest_user_message(state: RunState) -> int | None:
    for index in range(len(state.items) - 1, -1, -1):
        item = state.items[index]
        if isinstance(item, UserMessage) and not item.feedback:
            return index
    return None


def _latest_reply(state: RunState) -> int | None:
    for index in range(len(state.items) - 1, -1, -1):
        if isinstance(state.items[index], AssistantMessage):
            return index
    return None


def _checked_after(state: RunState, index: int, kind: Kind) -> bool:
    return any(isinstance(i, GuardrailCheck) and i.kind == kind for i in state.items[index + 1 :])
