"""The JSON Schema of every payload of the contract (DESIGN.md), for services in
other languages: what to send with each signal and update, what each query and
the workflow answer. Made by pydantic from the models the workflow itself uses;
committed under `schemas/payloads/` (`python -m schemas.generate`).
"""

from __future__ import annotations

from typing import Any

from durable_agents.workflows.event_models import RunEvent
from durable_agents.workflows.payloads import (
    AgentInput,
    AgentResult,
    AnswerSignal,
    DecideInput,
    DecisionSignal,
    EndSessionSignal,
    InterruptInput,
    InterruptResult,
    MessageSignal,
    PauseSignal,
    PendingApproval,
    RefreshToolsSignal,
    ResumeSignal,
    StatusView,
)
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import SCHEMA_VERSION
from durable_agents.workflows.state_pages import StatePart, StateQuery, StateView
from pydantic import TypeAdapter

PAYLOADS: dict[str, tuple[Any, str]] = {
    "workflow-input": (AgentInput, "AgentWorkflow input"),
    "workflow-result": (AgentResult, "AgentWorkflow result"),
    "approve": (DecisionSignal, "`approve` signal"),
    "reject": (DecisionSignal, "`reject` signal"),
    "answer": (AnswerSignal, "`answer` signal"),
    "decide": (DecideInput, "`decide` update input"),
    "decide-result": (Decision, "`decide` update result: the recorded decision"),
    "send_message": (MessageSignal, "`send_message` signal and update input"),
    "interrupt": (InterruptInput, "`interrupt` update input"),
    "interrupt-result": (InterruptResult, "`interrupt` update result"),
    "end_session": (EndSessionSignal, "`end_session` signal"),
    "pause": (PauseSignal, "`pause` signal and update input"),
    "resume": (ResumeSignal, "`resume` signal and update input"),
    "refresh_tools": (RefreshToolsSignal, "`refresh_tools` signal"),
    "get_status": (StatusView, "`get_status` query result"),
    "get_pending_approvals": (list[PendingApproval], "`get_pending_approvals` query result"),
    "get_state": (
        StateView | StatePart,
        "`get_state` query result: the RunState without integrity block (and `page` when "
        "it is not the whole state), or with `from_item` > 0 or `text`, items and `page`",
    ),
    "get_state-argument": (StateQuery, "`get_state` query argument (optional)"),
    "run-event": (
        RunEvent,
        "a run event: an item of the run's Workflow Streams topic `events`, a line of "
        "`agentctl watch --follow --json`, a webhook delivery's body",
    ),
}
"""Payload name (file `schemas/payloads/<name>.schema.json`) → (type, what it is).
A snapshot file's schema (RunState with its integrity block) is
`schemas/runstate-<SCHEMA_VERSION>.schema.json`."""


def payload_schema(name: str) -> dict[str, Any]:
    """The JSON Schema (2020-12) of the named payload; KeyError for an unknown name. Its
    `$id` names the one schema version of the contract (`SCHEMA_VERSION`), as RunState's."""
    model, title = PAYLOADS[name]
    schema = TypeAdapter(model).json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:durable-agents:payload:{name}:{SCHEMA_VERSION}",
        **schema,
        "title": title,
    }
