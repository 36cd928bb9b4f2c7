"""What a run keeps for the audit, each list bounded: decision signals held or
refused and other refused signals, pauses and resumes, MCP tool listings, changed
definitions taken, webhook deliveries, and where an imported run came from.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from durable_agents.workflows.agent_spec import ApprovalCondition
from durable_agents.workflows.run_items import Decision, Usage
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, StrictBool, StrictStr


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


REFUSALS_KEPT = 50
"""Newest entries kept in `refused_decisions` and in `refused_signals`; older ones
are dropped and counted, so a flood of bad signals cannot grow the state."""

PREVIEW_CHARS = 200
"""Characters of a refused signal's payload kept in its audit entry."""


class RefusedSignal(_Model):
    """A signal the run could not use: an unknown name, a payload that is not the
    signal's, or more than one argument. Decision signals are audited in
    `refused_decisions` instead."""

    signal: StrictStr
    """The signal's name, as sent."""
    payload: StrictStr | None = None
    """The start of what was sent, as JSON text (at most `PREVIEW_CHARS`); None: nothing."""
    refused_because: StrictStr
    at: AwareDatetime
    """Workflow time at which the signal was handled."""


class Signature(_Model):
    """An Ed25519 signature over the RFC 8785 canonical JSON of a decision payload
    without its `signature` field."""

    key_id: StrictStr = Field(min_length=1, max_length=200)
    sig: StrictStr = Field(pattern=r"^[A-Za-z0-9_-]{86}$")
    """The 64-byte signature, base64url without padding."""


class DecisionAttempt(_Model):
    """A decision signal not recorded as a Decision: held or refused."""

    call_id: StrictStr
    decision: Literal["approve", "reject", "answer"]
    approver: StrictStr
    reason: StrictStr | None = None
    always: StrictBool = False
    sender: StrictStr | None = None
    """The program that sent it, as it said."""
    arguments: dict[str, JsonValue] | None = None
    run_id: StrictStr | None = None
    arguments_sha256: StrictStr | None = None
    expires_at: StrictStr | None = None
    signature: Signature | None = None
    always_when: list[ApprovalCondition] | None = None
    """The binding fields the sender gave (see `Decision`)."""
    execution_id: StrictStr | None = None
    """As `Decision.execution_id`."""
    metadata: dict[str, JsonValue] | None = None
    """As `Decision.metadata` (not kept on a refused one)."""
    via: Literal["signal", "snapshot", "revoked"] = "signal"
    """`snapshot`: a decision carried in a resumed snapshot that could not be
    verified, dropped rather than trusted; `revoked`: an approval taken back because the
    tool's worker no longer trusts the key that signed it (the call is asked again)."""
    at: AwareDatetime
    """Workflow time at which the signal was handled."""
    refused_because: str | None = None
    """Why it cannot apply; None while it is held for a call not yet seen."""

    @classmethod
    def taken_back(
        cls, decision: Decision, *, via: Literal["snapshot", "revoked"], at: datetime, why: str
    ) -> DecisionAttempt:
        """A recorded decision taken back (`via`): what `refused_decisions` keeps of it."""
        kept = decision.model_dump(include=_TAKEN_BACK)
        return cls(**kept, via=via, at=at, refused_because=why)


_TAKEN_BACK = {
    *("call_id", "decision", "approver", "reason", "always", "sender", "arguments"),
    *("run_id", "arguments_sha256", "expires_at", "execution_id"),
}


class Evaluation(_Model):
    """What an evaluator (`ApprovalPolicy.evaluator`) said of a waiting call, and what
    came of it. Its approval or rejection that decided the call is also a `Decision`
    with `via: "evaluator"`."""

    call_id: StrictStr = Field(min_length=1)
    evaluator: StrictStr = Field(min_length=1)
    """The evaluator's name (`EvaluatorRef.name`)."""
    kind: Literal["function", "agent"]
    verdict: Literal["approve", "reject", "escalate"] | None = None
    """What it said; None: it said nothing usable (failed, timed out, not asked)."""
    reason: StrictStr | None = None
    """Its reason, or why it gave no verdict or was not asked."""
    outcome: Literal["decided", "escalated", "ignored"]
    """`decided`: its verdict is the call's decision; `escalated`: a person decides (it
    escalated, failed or timed out, approved outside `auto_approve_within`, or the
    policy requires a signature or separate duties, so it was not asked); `ignored`:
    it answered after a person (or the deadline) had decided."""
    usage: Usage | None = Field(None, exclude_if=lambda u: u is None)
    """(An agent) what its model call used, counted in the run's usage."""
    at: AwareDatetime


class PauseEvent(_Model):
    """One pause or resume of a run, for the audit (`RunState.pause_log`)."""

    action: Literal["pause", "resume"]
    by: str | None = Field(None, max_length=200)
    reason: str | None = Field(None, max_length=2_000)
    at: AwareDatetime


PAUSES_KEPT = 50
"""Newest entries kept in `RunState.pause_log`."""


class Redefinition(_Model):
    """A run that took its agent's changed definition, or could not
    (`RunState.redefinitions`)."""

    at: AwareDatetime
    turn: int = Field(ge=0)
    reason: Literal["session_message", "continue_as_new"]
    before: str = Field(min_length=1, max_length=64)
    """The digest of the definition the run had (`definitions.digest`)."""
    after: str | None = Field(None, min_length=1, max_length=64)
    """The digest of the one it has since; None: it kept `before` (see `error`)."""
    changed: list[str] = Field([], max_length=64)
    """The parts of the definition that changed (`instructions`, `tools`, ...)."""
    error: str | None = Field(None, max_length=2_000)
    """Why the run kept its definition: the agent is no longer served, or the new one
    does not fit the run (a budget without a bound on a reply, ...)."""


REDEFINITIONS_KEPT = 20
"""Newest entries kept in `RunState.redefinitions`."""


class ToolListing(_Model):
    """One listing of the run's MCP tools after it started, for the audit
    (`RunState.tool_listings`)."""

    at: AwareDatetime
    turn: int = Field(ge=0)
    """The run's turn when its tools were listed (before the model call of turn + 1)."""
    reason: Literal["session_message", "requested"]
    by: str | None = Field(None, max_length=200)
    """Who asked (`requested`)."""
    added: list[str] = []
    """Tools the run has since this listing and did not have before."""
    removed: list[str] = []
    """Tools the run had and no longer has (a call the model makes to one is refused)."""
    changed: list[str] = []
    """Tools whose description, parameters or approval rule changed."""
    error: str | None = Field(None, max_length=2_000)
    """Why the tools could not be listed (the run kept the ones it had); None: listed."""

    def changes(self) -> list[tuple[str, list[str]]]:
        """`("added", names)`, `("removed", ...)`, `("changed", ...)`, those not empty."""
        found = (("added", self.added), ("removed", self.removed), ("changed", self.changed))
        return [(what, names) for what, names in found if names]


LISTINGS_KEPT = 50
"""Newest entries kept in `RunState.tool_listings`."""


class WebhookDelivery(_Model):
    """How one event's delivery to one endpoint goes (`RunState.webhook_deliveries`),
    as its delivery workflow reports it."""

    endpoint: str = Field(min_length=1, max_length=100)
    webhook_id: str = Field(min_length=1, max_length=300)
    event: str = Field(min_length=1, max_length=50)
    status: Literal["sending", "failing", "delivered", "refused", "gave_up"]
    attempts: int = Field(0, ge=0)
    code: int | None = None
    """The receiver's last HTTP status; None: no answer (refused connection, timeout)."""
    error: str | None = Field(None, max_length=500)
    next_try_at: AwareDatetime | None = None
    workflow_id: str | None = Field(None, max_length=500, exclude_if=lambda w: w is None)
    """The delivery workflow's id (its part only the workers make: `workflows.secret_ids`)."""
    at: AwareDatetime


DELIVERIES_KEPT = 50
"""Newest entries kept in `RunState.webhook_deliveries`."""


class ImportedDecision(_Model):
    """A decision an imported OpenAI Agents SDK run state had recorded: kept for the
    audit, never applied (an unsigned file cannot approve anything)."""

    call_id: str | None = Field(None, min_length=1, max_length=200)
    """The call it decided; None: a rule for every call of `tool` (the SDK's `always`)."""
    tool: str = Field(min_length=1, max_length=200)
    decision: Literal["approve", "reject"]
    message: str | None = Field(None, max_length=2_000)
    """The rejection message the SDK would have sent the model."""


class DroppedItem(_Model):
    """Something of an imported run state that only the SDK can run, dropped because
    the person importing it said so (`--lossy`)."""

    where: str = Field(min_length=1, max_length=200)
    """Its JSON path in the imported file."""
    what: str = Field(min_length=1, max_length=500)


IMPORT_ENTRIES_KEPT = 200
"""At most this many recorded decisions, and dropped items, per import."""


class ImportRecord(_Model):
    """Where an imported run came from (`agentctl import-openai`)."""

    format: Literal["openai-agents"] = "openai-agents"
    schema_version: str = Field(min_length=1, max_length=20)
    """The file's `$schemaVersion`."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Of the file's bytes as read."""
    agent: str = Field(min_length=1, max_length=200)
    """The SDK's current agent when it stopped (the run goes on with `RunState.agent`)."""
    turn: int = Field(ge=0)
    """The SDK's `current_turn`: model calls since the run's input."""
    max_turns: int | None = Field(None, ge=1)
    """The SDK's `max_turns` (the run keeps its own agent's limit)."""
    decisions: list[ImportedDecision] = Field([], max_length=IMPORT_ENTRIES_KEPT)
    """The first `IMPORT_ENTRIES_KEPT` decisions the file records."""
    decisions_omitted: int = Field(0, ge=0, exclude_if=lambda n: not n)
    """Recorded decisions past those: counted, not kept."""
    dropped: list[DroppedItem] = Field([], max_length=IMPORT_ENTRIES_KEPT)
    """The first `IMPORT_ENTRIES_KEPT` items dropped (`--lossy`)."""
    dropped_omitted: int = Field(0, ge=0, exclude_if=lambda n: not n)
    """Dropped items past those: counted, not listed."""
    at: AwareDatetime
