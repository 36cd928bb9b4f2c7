"""Payloads that cross a Temporal boundary: workflow input and result, signal,
update and query payloads, and the activities' inputs and results.

All plain JSON so that a service in any language, or the `temporal` CLI, can
send them. Unknown fields are refused rather than ignored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from durable_agents.workflows.snapshot_input import SnapshotInput
from durable_agents.workflows.state import Item, RunStatus, Usage
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


def problems(err: ValidationError) -> str:
    """A validation error on one line: `always: Input should be a valid boolean; ...`."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors()
    )


# --- workflow -----------------------------------------------------------------


class AgentInput(_Payload):
    """Input of `AgentWorkflow`."""

    agent: str = Field(min_length=1)
    """Name of an agent registered on the workers of the task queue."""
    input: str
    """The user's first message."""
    context: JsonValue = None
    """JSON handed to every tool call (never to the model)."""
    max_turns: int | None = Field(None, ge=1)
    """Overrides the agent's own limit of model calls."""
    session: bool = False
    """Keep the run open for further user messages (`send_message`) until ended."""
    resume_from: SnapshotInput | None = None
    """Continue from this snapshot instead of starting afresh: a RunState, or an
    exported snapshot file as is (digest checked, migrated; `workflows.snapshot_input`)."""


class AgentResult(_Payload):
    """Result of `AgentWorkflow`: how the run ended."""

    status: RunStatus
    final_output: str | None
    turn: int
    usage: Usage


# --- decisions ------------------------------------------------------------------


class DecisionSignal(_Payload):
    """Payload of the `approve` and `reject` signals."""

    model_config = ConfigDict(extra="forbid", strict=True)

    call_id: str = Field(min_length=1)
    approver: str = Field(min_length=1)
    reason: str | None = None
    always: bool = False
    arguments: dict[str, JsonValue] | None = None
    """Approve with these arguments instead of the model's (validated against the tool)."""
    sender: str | None = None
    """The program sending the decision (`agentctl`, a service's name), kept in the audit."""


class DecideInput(DecisionSignal):
    """Payload of the `decide` update."""

    decision: Literal["approve", "reject"]


class MessageSignal(_Payload):
    """Payload of the `send_message` signal: the user's next message in a session."""

    content: str


class EndSessionSignal(_Payload):
    """Payload of the `end_session` signal."""

    reason: str | None = None


# --- queries ----------------------------------------------------------------------


class StatusView(_Payload):
    """Result of the `get_status` query."""

    status: RunStatus
    agent: str
    turn: int
    pending_approvals: int
    usage: Usage


class PendingApproval(_Payload):
    """One entry of the `get_pending_approvals` query."""

    call_id: str
    tool: str
    arguments: str
    requested_at: datetime


# --- activities ---------------------------------------------------------------


class DescribeAgentInput(_Payload):
    """Input of `describe_agent`."""

    agent: str


class ModelRequest(_Payload):
    """Input of `call_model`: everything the model needs for one turn."""

    model: str
    instructions: str
    items: list[Item]
    tools: list[ToolSchema]
    turn: int
    tool_output_limit: int = 64_000
    """Characters of one tool result sent to the model; the rest is cut, marked."""


class ToolSchema(_Payload):
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: dict[str, JsonValue]


class ModelToolCall(_Payload):
    """A tool call as the model wrote it."""

    call_id: str
    tool: str
    arguments: str


class ModelReply(_Payload):
    """Result of `call_model`."""

    content: str | None = None
    tool_calls: list[ModelToolCall] = []
    usage: Usage = Usage()
    finish_reason: str | None = None


class ToolRequest(_Payload):
    """Input of `run_tool`."""

    run_id: str = ""
    """The run (workflow id) the call belongs to."""
    agent: str
    tool: str
    call_id: str
    arguments: str
    """JSON text of the arguments, validated by the activity against the tool's schema."""
    idempotency_key: str
    """Workflow id + tool call id: stable across retries and continue-as-new."""
    context: JsonValue = None


class ToolOutcome(_Payload):
    """Result of `run_tool`: the tool's output, or why it has none."""

    call_id: str
    content: str
    is_error: bool = False


ModelRequest.model_rebuild()
