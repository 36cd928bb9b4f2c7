"""Send an approve/reject signal and find out what the run did with it.

A signal gets no answer from Temporal: it is accepted as soon as it is in the
run's history. The run applies it, holds it (its call is not proposed yet) or
refuses it, and keeps the outcome in its state (`workflows.decisions`). Reading
the state right after the signal shows that outcome: a query waits for the
workflow task that applies the signal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import AgentClientError, DecisionRefused
from durable_agents.workflows.audit import DecisionAttempt
from durable_agents.workflows.payloads import DecideInput
from durable_agents.workflows.refusals import total_refused_decisions
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunState


async def send_decision(
    agents: AgentClient,
    run_id: str,
    call_id: str,
    decision: Literal["approve", "reject"],
    **options: Any,
) -> Decision | DecisionAttempt:
    """Signal a decision (`options` as `AgentClient.approve` / `reject` take them) to
    run `run_id`; returns the recorded Decision, or the DecisionAttempt the run holds
    for a call not proposed yet. Raises `DecisionRefused` with the run's reason if
    the run refused it."""
    key = options.get("signing_key")
    approver = key.owner if key is not None else options.get("approver")
    request = _Sent(call_id, decision, approver or "")
    before = await agents.state(run_id)
    if decision == "approve":
        await agents.approve(run_id, call_id, **options)
    else:
        await agents.reject(run_id, call_id, **options)
    outcome = outcome_of(before, await agents.state(run_id), request)
    if outcome is None:
        raise AgentClientError(
            f"{decision} for call {call_id!r} of run {run_id!r} was sent, "
            "but the run's state does not show it"
        )
    if isinstance(outcome, DecisionAttempt) and outcome.refused_because is not None:
        raise DecisionRefused(outcome.refused_because, run_id=run_id, call_id=call_id)
    return outcome


@dataclass(frozen=True)
class _Sent:
    call_id: str
    decision: str
    approver: str


def outcome_of(
    before: RunState, after: RunState, request: DecideInput | _Sent
) -> Decision | DecisionAttempt | None:
    """What `after` (the state once the signal was applied) shows of `request`: a
    refusal added since `before`, a held attempt, or the call's decision by this
    approver (an exact repeat of a recorded decision is not refused: it is that)."""

    def mine(entry: Decision | DecisionAttempt) -> bool:
        named = (entry.call_id, getattr(entry, "short_id", None))  # a decision: either id
        return request.call_id in named and (entry.decision, entry.approver) == (
            request.decision,
            request.approver,
        )

    added = total_refused_decisions(after) - total_refused_decisions(before)
    recent = after.refused_decisions[-added:] if added > 0 else []
    refused = [r for r in recent if mine(r)]
    if refused:
        return refused[-1]
    held = [h for h in after.held_decisions if mine(h)]
    if held:
        return held[-1]
    return next(
        (
            i
            for i in after.items
            if isinstance(i, Decision) and i.via in ("signal", "update") and mine(i)
        ),
        None,
    )
