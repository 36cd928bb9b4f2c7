"""What AgentWorkflow's updates refuse, as the typed, non-retryable failures their
callers get (a validator's refusal leaves no trace in history)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        contract,
        decisions,
        errors,
        inbox,
        limits,
        tree_approvals,
    )
    from durable_agents.workflows.payloads import DecideInput, PauseSignal, ResumeSignal
    from durable_agents.workflows.state import RunState

T = TypeVar("T")


def refusal(problem: str, error_type: str) -> ApplicationError:
    """`problem` as an update's refusal of type `error_type`."""
    return ApplicationError(problem, type=error_type, non_retryable=True)


def refuse(problem: str | None, error_type: str) -> None:
    """Raise `problem`, if any, as the update's refusal of type `error_type`."""
    if problem is not None:
        raise refusal(problem, error_type)


def deciding(decide: Callable[[], T]) -> T:
    """`decide()`, a `DecisionRefused` it raises turned into the `decide` update's
    refusal."""
    try:
        return decide()
    except errors.DecisionRefused as err:
        raise refusal(str(err), contract.ERROR_DECISION_REFUSED) from None


def started(state: RunState | None) -> RunState:
    """The run's state; `DecisionRefused` while it has none."""
    if state is None:
        raise errors.DecisionRefused("the run is still starting; no call is pending yet")
    return state


def check_decide(state: RunState | None, payload: DecideInput, *, now: datetime) -> None:
    """`DecisionRefused` unless the run can take `payload` now: within the bounds, for a
    pending call of this run, or of a run below it while this one goes on."""
    too_large = limits.decision_problem(payload)
    if too_large is not None:
        raise errors.DecisionRefused(f"invalid decide payload: {too_large}")
    state = started(state)
    child = tree_approvals.route(state, payload.call_id, payload.run_id)
    if child is None:
        decisions.check(state, payload, now=now)
    elif state.status.is_final:
        raise errors.DecisionRefused(f"run {state.run_id} has ended ({state.status.value})")


def check_pause(state: RunState | None, payload: PauseSignal | ResumeSignal) -> None:
    """Refuse a pause or resume the run cannot take."""
    refuse(inbox.pause_refusal(state, payload), contract.ERROR_PAUSE_REFUSED)
