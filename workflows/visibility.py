"""What operators see of a run in the Temporal UI: its current details (markdown,
`workflows.details`) and the contract's search attributes, kept current by the
workflow. Workflow code (deterministic)."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import details, handoffs, metrics, patches, tree_approvals
    from durable_agents.workflows import search_attributes as sa
    from durable_agents.workflows.state import RunState, RunStatus

Published = tuple[str, str, int, int, int, float]
"""The search-attribute values last set: agent, status, pending approvals, turn,
tokens, cost."""


def publish(state: RunState, *, last: Published | None) -> Published:
    """Set the current details, and the search attributes if they changed since
    `last` (an upsert is a history event); returns what they are now."""
    workflow.set_current_details(details.render(state))
    pending = tree_approvals.pending_count(state)  # with those of runs below it
    status = tree_approvals.shown_status(state).value
    tokens, cost = state.usage.total_tokens, state.usage.cost
    name = handoffs.first_agent(state)  # after a handoff too: what saved searches find
    values = (name, status, pending, state.turn, tokens, cost)
    if values != last:
        updates: list[SearchAttributeUpdate[Any]] = [
            sa.AGENT_NAME.value_set(name),
            sa.AGENT_STATUS.value_set(status),
            sa.AGENT_PENDING_APPROVALS.value_set(pending),
            sa.AGENT_TURN.value_set(state.turn),
        ]
        if patches.patched(patches.PATCH_TOTAL_TOKENS):
            updates.append(sa.AGENT_TOTAL_TOKENS.value_set(tokens))
        if state.agent.price is not None and patches.patched(patches.PATCH_TOTAL_COST):
            updates.append(sa.AGENT_TOTAL_COST.value_set(cost))
        workflow.upsert_search_attributes(updates)
    return values


def show_details(state: RunState) -> None:
    """Set the current details only (not a history event, unlike an upsert)."""
    workflow.set_current_details(details.render(state))


def publish_unstarted(agent: str, status: RunStatus, why: str) -> None:
    """A run that ended (failed, cancelled) before it had a state: name and status."""
    workflow.set_current_details(f"**{status.value}** · {agent} · {why}")
    workflow.upsert_search_attributes(
        [sa.AGENT_NAME.value_set(agent), sa.AGENT_STATUS.value_set(status.value)]
    )
    metrics.finished(agent, status.value)
