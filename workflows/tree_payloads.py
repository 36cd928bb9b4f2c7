"""Payloads between the runs of a run tree: a child's reports and end to its caller
(`sub_run_report`, `sub_run_finished`), and decisions passed down to the run holding the
call (`forwarded_decision`) with that run's answers (`workflows.run_tree`,
`workflows.tree_approvals`, `workflows.background`)."""

from __future__ import annotations

from durable_agents.workflows.payloads import PendingApproval
from durable_agents.workflows.run_items import Decision, Usage
from durable_agents.workflows.state import RunStatus
from pydantic import BaseModel, ConfigDict, Field, JsonValue


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ForwardAnswer(_Payload):
    """What the run holding a call did with a decision passed down to it: the recorded
    decision, or why it refused it."""

    ref: str = Field(min_length=1, max_length=64)
    decision: Decision | None = None
    refused: str | None = Field(None, max_length=4_000)


class SubRunProgress(_Payload):
    """Where a run started in the background is, as it reports it to its caller."""

    status: RunStatus
    turn: int = Field(ge=0)
    last_output: str | None = Field(None, max_length=2_000)


class SubRunFinished(_Payload):
    """A run started in the background, to its caller (the `sub_run_finished` signal,
    sent to the caller's workflow id, so a caller that continued as new gets it): how
    it ended. Taken only from a running background child of the caller, and, on a
    worker with gate keys, only with the workers' tag (`durable_agents.gate_interceptor`)."""

    run_id: str = Field(min_length=1, max_length=200)
    """The child (workflow id)."""
    status: RunStatus
    final_output: str | None = Field(None, max_length=1_000_000)
    error: str | None = Field(None, max_length=4_000)
    usage: Usage | None = None
    """What it used itself; None: not known (its caller counts its whole budget share)."""
    sub_run_usage: Usage | None = None


class SubRunReport(_Payload):
    """A run's report to the run that called it (the `sub_run_report` signal): every call
    waiting for a decision in it and below it, and its answers to decisions passed down."""

    run_id: str = Field(min_length=1, max_length=200)
    """The reporting run (workflow id): a run the receiver is waiting on."""
    pending: list[PendingApproval] = Field([], max_length=50)
    answers: list[ForwardAnswer] = Field([], max_length=50)
    progress: SubRunProgress | None = Field(None, exclude_if=lambda p: p is None)
    """(A run started in the background) where it is: what `check_background_agent`
    tells its caller's model. Left out for a run its caller waits on."""


class ForwardedDecision(_Payload):
    """A `decide` update passed down to the run below that holds its call (the
    `forwarded_decision` signal); answered in that run's next `SubRunReport`."""

    ref: str = Field(min_length=1, max_length=64)
    decision: dict[str, JsonValue]
    """The `decide` payload as it was sent (a signature covers exactly its fields)."""
