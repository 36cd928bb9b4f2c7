"""What AgentWorkflow's queries answer, before the run has a state too (still starting,
or ended before it had one: `Unstarted`)."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract, loop, state_pages
    from durable_agents.workflows.payloads import StatusView
    from durable_agents.workflows.run_items import Usage
    from durable_agents.workflows.state import RunState, RunStatus

Unstarted = tuple[RunStatus, str]
"""How a run that never had a state ended (failed, cancelled), and why."""


def state_answer(
    state: RunState | None, unstarted: Unstarted | None, request: Any
) -> dict[str, Any]:
    """`get_state`: the RunState, or a page of it when it is larger than the answer's
    bound (`workflows.state_pages`)."""
    if state is None and unstarted is not None:
        status, why = unstarted
        raise ApplicationError(f"the run ended {status.value} before it had a state: {why}")
    if state is None:
        raise ApplicationError("the run is still starting; its state is not available yet")
    try:
        return state_pages.answer(state, state_pages.parse_query(request))
    except state_pages.StateQueryError as err:
        raise ApplicationError(
            str(err), type=contract.ERROR_STATE_QUERY_REFUSED, non_retryable=True
        ) from None


def status(state: RunState | None, unstarted: Unstarted | None, agent: str | None) -> StatusView:
    """`get_status`; a run without a state is `running` (starting) or how it ended."""
    if state is not None:
        return loop.status_view(state)
    status, why = unstarted or (RunStatus.RUNNING, None)
    return StatusView(
        status=status,
        error=why,
        agent=agent or "",
        turn=0,
        pending_approvals=0,
        usage=Usage(),
        current_agent=agent or "",
    )
