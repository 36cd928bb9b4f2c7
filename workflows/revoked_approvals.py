"""A call approved with an approver key that the tool's worker no longer trusts (removed
from its `AGENT_APPROVER_KEYS`, or past its `not_after`) before the tool started: the
tool's worker refuses it (`ApprovalKeyRevoked`, `activities.run_tool`), and the run
asks again instead of answering the call. Pure functions of RunState.

The approvals of the call are taken back (kept in `refused_decisions` with
`via: "revoked"` and the reason), an `always` rule one of them made decides no further
calls (`revoked_rules`), the keys that signed them approve nothing more in this run
(dropped from the run's frozen approver keys), and the call waits for a decision again:
it shows in the pending approvals (`reopened_because`), an `approval_requested` event
goes out again, and a new decision runs it or rejects it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from durable_agents.workflows import refusals
from durable_agents.workflows.audit import DecisionAttempt
from durable_agents.workflows.payloads import ToolOutcome
from durable_agents.workflows.run_items import AssistantMessage, Decision, ToolCall
from durable_agents.workflows.state import RunState

VIA: Final = "revoked"
"""`DecisionAttempt.via` of an approval taken back because its key was revoked."""


def reopen(state: RunState, call: ToolCall, why: str, *, now: datetime) -> ToolOutcome:
    """Take back the approvals of `call` (refused by the tool's worker for `why`) and
    have it asked again; the outcome the batch drops (`asked_again`)."""
    taken = [
        i
        for i in state.items
        if isinstance(i, Decision) and i.call_id == call.call_id and i.decision == "approve"
    ]
    gone = {id(d) for d in taken}
    state.items = [i for i in state.items if id(i) not in gone]
    signers = {d.signed_by for d in taken if d.signed_by is not None}
    if signers:
        keys = state.agent.approver_keys
        state.agent.approver_keys = [k for k in keys if k.key_id not in signers]
    rules = {
        i.call_id
        for i in state.items
        if isinstance(i, Decision) and i.always and i.signed_by in signers
    } | {d.call_id for d in taken if d.always}
    state.revoked_rules = sorted({*state.revoked_rules, *rules})
    for decision in taken:
        state.refused_decisions.append(
            DecisionAttempt.taken_back(
                decision, via=VIA, at=now, why=f"{why}; the call is asked again"
            )
        )
    refusals.trim(state)
    _not_started(state, call.call_id)
    return ToolOutcome(call_id=call.call_id, content=why, asked_again=True)


def reopened_because(state: RunState, call_id: str) -> str | None:
    """Why `call_id`, waiting for a decision, is asked again (its approval taken back);
    None when it is asked for the first time."""
    reason = None
    for attempt in state.refused_decisions:
        if attempt.call_id == call_id and attempt.via == VIA:
            reason = attempt.refused_because
    return reason


def _not_started(state: RunState, call_id: str) -> None:
    """The tool never started (its worker refused it first): an at-most-once call is
    not counted as started."""
    reply = next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)
    for call in reply.tool_calls if reply is not None else []:
        if call.call_id == call_id:
            call.started_at = None
