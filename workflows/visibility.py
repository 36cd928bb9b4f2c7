"""What operators see of a run in the Temporal UI: its current details (markdown,
`workflows.details`) and the contract's search attributes, kept current by the
workflow. Workflow code (deterministic)."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributePair, SearchAttributeUpdate, TypedSearchAttributes

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import details, handoffs, metrics, tree_approvals
    from durable_agents.workflows import search_attributes as sa
    from durable_agents.workflows.state import RunState, RunStatus

Values = tuple[str, str, int, int, int, float]
"""Search-attribute values: agent, status, pending approvals, turn, tokens, cost."""
Published = Values
"""The values last set."""


def set_at_start() -> Published | None:
    """The values the run's start set (`search_attributes.at_start`), or None: a run
    started with them upserts only once they change."""
    given = workflow.info().typed_search_attributes
    found = (
        given.get(sa.AGENT_NAME),
        given.get(sa.AGENT_STATUS),
        given.get(sa.AGENT_PENDING_APPROVALS),
        given.get(sa.AGENT_TURN),
        given.get(sa.AGENT_TOTAL_TOKENS),
    )
    if any(v is None for v in found):
        return None
    name, status, pending, turn, tokens = found
    cost = given.get(sa.AGENT_TOTAL_COST) or 0.0
    return str(name), str(status), int(pending or 0), int(turn or 0), int(tokens or 0), cost


def _values(state: RunState) -> Values:
    pending = tree_approvals.pending_count(state)  # with those of runs below it
    status = tree_approvals.shown_status(state).value
    name = handoffs.first_agent(state)  # after a handoff too: what saved searches find
    return name, status, pending, state.turn, state.usage.total_tokens, state.usage.cost


def _shows_cost(state: RunState) -> bool:
    """The run keeps `AgentTotalCost`: it has a price, or its start set one anyway (put
    right, not left standing)."""
    given = workflow.info().typed_search_attributes.get(sa.AGENT_TOTAL_COST)
    return state.agent.price is not None or given is not None


def publish(state: RunState, *, last: Published | None, exact: bool = False) -> Published:
    """Set the current details, and the search attributes when what operators search
    by (agent, status, pending approvals) changed since `last`, or with `exact` when
    any value differs from `last` (the values a start set, checked once); the counters
    (turn, tokens, cost) go with them. So a run upserts when it starts, waits, pauses,
    ends or continues as new, never on a clock: what a run writes depends on its state
    only, which replay reproduces (`get_status` is always current). An upsert is a
    history event and a billed action. Returns what was last set."""
    workflow.set_current_details(details.render(state))
    values = _values(state)
    if last is not None and (values == last or (not exact and values[:3] == last[:3])):
        return last
    name, status, pending, turn, tokens, cost = values
    updates: list[SearchAttributeUpdate[Any]] = [
        sa.AGENT_NAME.value_set(name),
        sa.AGENT_STATUS.value_set(status),
        sa.AGENT_PENDING_APPROVALS.value_set(pending),
        sa.AGENT_TURN.value_set(turn),
        sa.AGENT_TOTAL_TOKENS.value_set(tokens),
    ]
    if _shows_cost(state):
        updates.append(sa.AGENT_TOTAL_COST.value_set(cost))
    workflow.upsert_search_attributes(updates)
    return values


def carried(state: RunState) -> TypedSearchAttributes:
    """The search attributes the next workflow run starts with when this one continues
    as new: its current values (counters too), given with the continue-as-new command,
    so they cost no upsert of their own (an upsert is a billed action; attributes set
    at a start are not). The new run reads them back (`set_at_start`); attributes of
    other keys the run carries stay as they are."""
    name, status, pending, turn, tokens, cost = _values(state)
    pairs: list[SearchAttributePair[Any]] = [
        SearchAttributePair(sa.AGENT_NAME, name),
        SearchAttributePair(sa.AGENT_STATUS, status),
        SearchAttributePair(sa.AGENT_PENDING_APPROVALS, pending),
        SearchAttributePair(sa.AGENT_TURN, turn),
        SearchAttributePair(sa.AGENT_TOTAL_TOKENS, tokens),
    ]
    if _shows_cost(state):
        pairs.append(SearchAttributePair(sa.AGENT_TOTAL_COST, cost))
    return workflow.info().typed_search_attributes.updated(*pairs)


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
