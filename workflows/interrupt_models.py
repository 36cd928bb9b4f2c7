"""What a run keeps of being steered while it works (issue 48): the interrupt asked and
not applied yet, and the interruptions it went through (bounded), each with the calls it
answered as interrupted and what is known of them. Plain data; pure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

WhileBusy = Literal["queue", "interrupt", "reject"]
"""What a `send_message` does while the run works on a turn: wait for the turn's tool
calls to be answered (`queue`), stop the turn and answer the message (`interrupt`), or
be refused (`reject`)."""

CallWas = Literal[
    "running", "finished", "awaiting_approval", "awaiting_answer", "approved", "not_started"
]
"""What an interrupted call was doing: running (stopped, or asked to stop), or running
and it `finished` anyway before the stop reached it (it keeps its real result, not an
error); waiting for a decision (`awaiting_approval`) or for an external tool's answer
(`awaiting_answer`), both withdrawn; approved but not started, or not started (it needed
no decision)."""

INTERRUPTIONS_KEPT = 20
"""The newest interruptions a run keeps in `RunState.interruptions`."""
NOTE_CHARS = 4_000
"""The most characters of what is known of one interrupted call."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PendingInterrupt(_Model):
    """An interrupt asked (a `send_message` with `while_busy="interrupt"`, or the
    `interrupt` update) that the loop has not applied yet: the model call and the tools
    under way are being stopped."""

    via: Literal["message", "update"]
    by: str | None = Field(None, max_length=200)
    reason: str | None = Field(None, max_length=2_000)
    at: AwareDatetime
    model_call: bool = False
    """A model call was under way and was cut (its reply, and what it used, are lost)."""
    notes: dict[str, str] = {}
    """What is known of each call that was running when it was stopped, by call id."""


class InterruptedCall(_Model):
    """A call of the model's latest reply that had no result when the turn was
    interrupted: answered as interrupted (`ToolResult.interrupted`)."""

    call_id: str = Field(min_length=1, max_length=200)
    tool: str = Field(max_length=200)
    was: CallWas
    """Running (stopped, or asked to stop), finished anyway (its result is its own),
    waiting for a decision or an answer (withdrawn), approved but not started, or not
    started (it needed no decision)."""
    note: str = Field(max_length=NOTE_CHARS)
    """What the model is told, and what is known (a tool that cannot hear a cancel may
    still run)."""


class Interruption(_Model):
    """One interrupted turn."""

    via: Literal["message", "update"]
    """A message sent with `while_busy="interrupt"`, or the `interrupt` update."""
    by: str | None = Field(None, max_length=200)
    reason: str | None = Field(None, max_length=2_000)
    at: AwareDatetime
    """When it was asked."""
    applied_at: AwareDatetime
    """When the model call and tools were stopped and the calls answered."""
    turn: int = Field(ge=0)
    """The run's turn then (a cut model call made none)."""
    model_call: bool = False
    """A model call was cut."""
    calls: list[InterruptedCall] = []
    item: int = Field(ge=0)
    """The number of items once its calls were answered: a user message at or after it
    is the one it gave way to."""
