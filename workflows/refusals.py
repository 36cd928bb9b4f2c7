"""The bounded audit of refused signals: pure functions of RunState.

A signal gets no answer, so what the run could not use is recorded in its state
for the sender to find (`refused_decisions`, `refused_signals`). A service that
repeats a bad signal for days, or a flood, must not grow the state without
bound: each list keeps its newest `REFUSALS_KEPT` entries and counts the rest.
"""

from __future__ import annotations

from datetime import datetime

from durable_agents.workflows.audit import REFUSALS_KEPT, RefusedSignal
from durable_agents.workflows.state import RunState


def over_limit(state: RunState) -> bool:
    """A list holds more entries than it keeps."""
    return max(len(state.refused_decisions), len(state.refused_signals)) > REFUSALS_KEPT


def trim(state: RunState) -> None:
    """Drop the oldest entries past the limit, counting them."""
    extra = len(state.refused_decisions) - REFUSALS_KEPT
    if extra > 0:
        del state.refused_decisions[:extra]
        state.refused_decisions_dropped += extra
    extra = len(state.refused_signals) - REFUSALS_KEPT
    if extra > 0:
        del state.refused_signals[:extra]
        state.refused_signals_dropped += extra


def refuse_signal(
    state: RunState, signal: str, payload: str | None, why: str, *, now: datetime
) -> None:
    """Record a signal the run cannot use (not a decision signal)."""
    state.refused_signals.append(
        RefusedSignal(signal=signal, payload=payload, refused_because=why, at=now)
    )


def total_refused_decisions(state: RunState) -> int:
    """Refused decision signals ever recorded, those dropped by the limit included."""
    return state.refused_decisions_dropped + len(state.refused_decisions)
