"""The last signal a run refused, for `agentctl status` and `agentctl state`.

A signal gets no answer: the `temporal` CLI says "Signal workflow succeeded" whatever
the run then does with it. What the run cannot use it records in its state
(`RunState.refused_signals`, and `refused_decisions` for approve/reject), so this is
where a sender learns that, and why. `status` reads it from the first page of
`get_state` (bounded, `workflows.state_pages`), and the whole state only when that
page cut the refusals short.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from durable_agents.client import state_reader
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import AgentClientError
from durable_agents.workflows.argument_view import safe
from durable_agents.workflows.audit import DecisionAttempt, RefusedSignal
from durable_agents.workflows.state import RunState
from pydantic import BaseModel
from pydantic_core import to_json

_LISTS = ("refused_signals", "refused_decisions")


class LastRefusal(BaseModel):
    """The newest signal the run refused (`agentctl status --json`'s `last_refused_signal`)."""

    signal: str
    """The signal's name: `approve`, `reject`, or what was sent."""
    refused_because: str
    at: datetime
    """Workflow time at which the run handled it."""
    call_id: str | None = None
    """The call a decision signal named (None for other signals)."""
    approver: str | None = None
    """Who a decision signal said decides (None for other signals)."""
    refused_total: int
    """Signals the run refused in all, those its audit no longer lists included."""


def last_of(state: RunState) -> LastRefusal | None:
    """The newest refused signal of `state`; None if it refused none."""
    return _newest(
        state.refused_signals,
        state.refused_decisions,
        dropped=state.refused_signals_dropped + state.refused_decisions_dropped,
    )


def _newest(
    signals: list[RefusedSignal], attempts: list[DecisionAttempt], *, dropped: int
) -> LastRefusal | None:
    refused = [a for a in attempts if a.refused_because is not None]  # others are held
    total = dropped + len(signals) + len(refused)
    found: list[LastRefusal] = [
        LastRefusal(
            signal=s.signal, refused_because=s.refused_because, at=s.at, refused_total=total
        )
        for s in signals
    ]
    found += [
        LastRefusal(
            signal=a.decision,
            refused_because=a.refused_because or "",
            at=a.at,
            call_id=a.call_id,
            approver=a.approver,
            refused_total=total,
        )
        for a in refused
    ]
    return max(found, key=lambda r: r.at, default=None)


async def last_refusal(agents: AgentClient, run_id: str) -> LastRefusal | None:
    """The newest signal run `run_id` refused; None if none, or if the run has no state
    to read yet (still starting, or ended before it had one)."""
    handle = agents.client.get_workflow_handle(run_id)
    try:
        with agents.translating(run_id):
            first: dict[str, Any] = await state_reader.querying(handle)(None)
    except AgentClientError:
        return None
    cut = [str(c.get("pointer", "")) for c in (first.get("page") or {}).get("cut", [])]
    if any(p.startswith(tuple(f"/{name}" for name in _LISTS)) for p in cut):
        return last_of(await agents.state(run_id))  # cut short on the first page
    return _newest(
        [RefusedSignal.model_validate_json(to_json(s)) for s in first.get("refused_signals", [])],
        [
            DecisionAttempt.model_validate_json(to_json(a))
            for a in first.get("refused_decisions", [])
        ],
        dropped=int(first.get("refused_signals_dropped", 0))
        + int(first.get("refused_decisions_dropped", 0)),
    )


def line(refusal: LastRefusal) -> str:
    """`  last refused signal: approve (call c1, by bob) at ...: no pending call ... (2 in all)`."""
    about = []
    if refusal.call_id is not None:
        about.append(f"call {safe(refusal.call_id)}")
    if refusal.approver is not None:
        about.append(f"by {safe(refusal.approver)}")
    what = safe(refusal.signal) + (f" ({', '.join(about)})" if about else "")
    when = refusal.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    total = f" ({refusal.refused_total} refused in all)" if refusal.refused_total > 1 else ""
    because = " ".join(safe(refusal.refused_because).split())
    return f"  last refused signal: {what} at {when}: {because}{total}"
