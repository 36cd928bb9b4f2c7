"""The pinned run event objects (DESIGN.md: `{"seq", "type", "at", ...}`), one model
per `type`, for their published JSON Schema (`schemas/payloads/run-event.schema.json`)
and for checking what `workflows.step_events` and `workflows.run_events` build
(strict: an unknown field is an error, so the schema and the events cannot drift).
Fields without a value are left out of an event. Pure: no Temporal imports.
"""

from __future__ import annotations

from typing import Annotated, Literal

from durable_agents.workflows.interrupt_models import CallWas
from durable_agents.workflows.run_items import Usage
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seq: int = Field(ge=1)
    """The event's number in its run: from 1, never reused, in order across
    continue-as-new (its Workflow Streams offset plus one)."""
    at: str
    """When it happened, RFC 3339 (workflow time)."""
    run_id: str
    """The run's workflow id."""
    agent: str


class RunStarted(_Event):
    type: Literal["run_started"]
    turn: int
    session: bool
    input: str | None = None
    """The start of the user's first message."""


class TurnStarted(_Event):
    type: Literal["turn_started"]
    turn: int
    """The turn the model call under way makes."""


class ModelFinished(_Event):
    type: Literal["model_finished"]
    turn: int
    text: str | None = None
    """The start of the reply's text."""
    tool_calls: int
    usage: Usage | None = None


class TextDelta(_Event):
    """What the model wrote since the last delta (agents with `stream=True`): its text,
    or with `call_id`, the arguments of that tool call. A preview: the reply the run
    records is `model_finished`'s turn in the run's state."""

    type: Literal["text_delta"]
    turn: int
    attempt: int = Field(ge=1)
    """The model call's attempt: after a `model_retry`, an earlier attempt's text is void."""
    text: str
    call_id: str | None = None
    tool: str | None = None


class ModelRetry(_Event):
    """A model call is attempted again: discard the text its earlier attempts streamed."""

    type: Literal["model_retry"]
    turn: int
    attempt: int = Field(ge=2)


class ToolProposed(_Event):
    type: Literal["tool_proposed"]
    call_id: str
    tool: str
    call: str
    """`refund(order=A12, amount=40)`, sensitive values masked, cut."""
    needs_approval: bool


class ToolStarted(_Event):
    type: Literal["tool_started"]
    call_id: str
    tool: str
    call: str


class ToolFinished(_Event):
    type: Literal["tool_finished"]
    call_id: str
    tool: str
    is_error: bool
    interrupted: bool = False
    """The call's outcome was lost (an at-most-once tool): it may or may not have taken
    effect. Left out when false."""
    result: str
    """The start of what the tool returned (or why it failed)."""


class ApprovalRequested(_Event):
    type: Literal["approval_requested"]
    path: list[str]
    call_id: str
    tool: str
    args: dict[str, JsonValue]
    """The arguments, sensitive values masked."""
    sensitive: list[str]
    arguments_sha256: str
    requested_at: str
    deadline: str | None = None
    answer: dict[str, JsonValue]
    """How to decide: the signals' and the update's exact input, and the `temporal`
    CLI commands."""
    kind: Literal["approval", "answer"] = "approval"
    """`answer`: a call of an external tool, waiting for its answer (`answer_schema`)."""
    answer_schema: dict[str, JsonValue] | None = None
    """(`answer`) the JSON Schema its answer must meet."""
    short_id: str | None = None
    """The call's short id, accepted wherever `call_id` is."""
    reopened_because: str | None = None
    """The call was approved, but the tool's worker refused to start it (the key that
    signed the approval was revoked): asked again, and why. Left out otherwise."""


class ApprovalDecided(_Event):
    type: Literal["approval_decided", "approval_expired"]
    path: list[str]
    call_id: str
    tool: str | None = None
    decision: Literal["approve", "reject", "answer"] | None = None
    approver: str | None = None
    reason: str | None = None
    via: str | None = None
    result: JsonValue = None
    """(`decision: "answer"`) the answer, whole (at most 32,000 bytes of JSON, as
    answers are taken); left out when it is JSON null."""
    result_bytes: int | None = Field(None, ge=0)
    """(`decision: "answer"`) an answer too large for an event (only a hand-made
    snapshot's can be) is left out: its size; the run's state holds it."""


class Paused(_Event):
    type: Literal["paused"]
    by: str | None = None
    reason: str | None = None


class Resumed(_Event):
    type: Literal["resumed"]


class HandoffEvent(_Event):
    type: Literal["handoff"]
    call_id: str
    from_agent: str
    to_agent: str
    """The agent answering from the next model call."""
    turn: int
    reason: str | None = None


class ChildStarted(_Event):
    type: Literal["child_started"]
    call_id: str
    child_agent: str
    child_run_id: str
    """The child run's workflow id: operate and approve it there."""
    background: bool | None = None
    """True: the call did not wait for it (`Agent.as_tool(wait=False)`); its end comes
    as a `child_finished` event and a message to the model."""


class ChildFinished(_Event):
    """An agent the run started in the background ended; its output is the model's
    next message."""

    type: Literal["child_finished"]
    child_run_id: str
    status: str
    call_id: str | None = None
    child_agent: str | None = None
    reason: str | None = None


class InterruptedCallEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    call_id: str
    tool: str
    was: CallWas
    """Withdrawn if it waited for a decision or an answer; stopped (or asked to) if it
    ran."""
    note: str
    """What the model is told of it, and what is known (a preview)."""


class InterruptedEvent(_Event):
    """The turn was stopped (a message sent with `while_busy="interrupt"`, or the
    `interrupt` update): the model call cut, the calls without a result answered."""

    type: Literal["interrupted"]
    via: Literal["message", "update"]
    by: str | None = None
    reason: str | None = None
    turn: int
    model_call: bool
    calls: list[InterruptedCallEvent]


class ContinuedAsNew(_Event):
    type: Literal["continued_as_new"]
    turn: int


class RunFinished(_Event):
    type: Literal["run_finished"]
    status: str
    final_output: JsonValue = None
    reason: str | None = None
    turn: int
    usage: Usage


class Truncated(_Event):
    """Made by the reader, not the run: events trimmed before they were read. Its
    `seq` is the last one missed, so reading after it starts at the oldest kept."""

    type: Literal["truncated"]
    agent: str | None = None  # type: ignore[assignment]
    missed: int = Field(ge=1)
    first_kept: int = Field(ge=1)


RunEvent = Annotated[
    RunStarted
    | TurnStarted
    | ModelFinished
    | TextDelta
    | ModelRetry
    | ToolProposed
    | ToolStarted
    | ToolFinished
    | ApprovalRequested
    | ApprovalDecided
    | Paused
    | Resumed
    | HandoffEvent
    | ChildStarted
    | InterruptedEvent
    | ChildFinished
    | ContinuedAsNew
    | RunFinished
    | Truncated,
    Field(discriminator="type"),
]

RUN_EVENT: TypeAdapter[RunEvent] = TypeAdapter(RunEvent)
