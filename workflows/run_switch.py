"""When a run switches to a new workflow run (continue-as-new, carrying its whole
state): its turn or history-size budget for one workflow run is used, a new build of a
versioned worker is current, or Temporal suggests it; and the switch itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NoReturn

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import handoffs, visibility
    from durable_agents.workflows.payloads import AgentInput
    from durable_agents.workflows.state import RunState


@dataclass(frozen=True)
class Switch:
    """Where this workflow run began: its first turn, history length and size."""

    first_turn: int
    first_length: int
    first_size: int

    @classmethod
    def from_here(cls, state: RunState) -> Switch:
        info = workflow.info()
        return cls(state.turn, info.get_current_history_length(), info.get_current_history_size())

    def due(self, state: RunState) -> bool:
        """This workflow run used its turn or history-size budget, or Temporal suggests
        continue-as-new. Never before its history has grown: a state carried over
        that is already past a limit would otherwise switch again and again."""
        info = workflow.info()
        if state.turn - self.first_turn >= state.agent.turns_per_workflow_run:
            return True
        if info.get_current_history_length() <= self.first_length:
            return False
        budget = state.agent.history_bytes_per_workflow_run
        if budget is not None and info.get_current_history_size() - self.first_size >= budget:
            return True
        if info.is_target_worker_deployment_version_changed():
            return True  # a new build is current: move to it (versioned workers only)
        return info.is_continue_as_new_suggested()


def continue_as_new(state: RunState, events: dict[str, Any]) -> NoReturn:
    """Carry `state` and the event stream's state (`events`) into a new workflow run of
    the same workflow id; a versioned worker's run goes on on the deployment's current
    build."""
    upgrade = None
    version = workflow.info().get_current_deployment_version()  # unversioned: no name
    if version is not None and version.deployment_name:
        upgrade = workflow.ContinueAsNewVersioningBehavior.AUTO_UPGRADE
    workflow.continue_as_new(
        AgentInput(
            agent=handoffs.first_agent(state),
            input="",
            session=state.session,
            resume_from=state,
            events=events,
        ),
        search_attributes=visibility.carried(state),  # set with the start: free
        initial_versioning_behavior=upgrade,
    )
