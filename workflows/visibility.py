"""What operators see of a run in the Temporal UI: its current details (markdown,
`workflows.details`) and the contract's search attributes, kept current by the
workflow. Workflow code (deterministic)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeUpdate

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import details, handoffs, metrics, patches, tree_approvals
    from durable_agents.workflows import search_attributes as sa
    from durable_agents.workflows.state import RunState, RunStatus

Values = tuple[str, str, int, int, int, float]
"""Search-attribute values: agent, status, pending approvals, turn, tokens, cost."""
Published = tuple[Values, datetime]
"""The values last set, and when (workflow time)."""
COUNTERS_INTERVAL = timedelta(seconds=1)
"""A change of the counters alone (turn, tokens, cost) within this long of the last
upsert waits for the next publish that is due: fast turns cost one upsert a second, not
one each. Agent, status and pending approvals, what operators search by, are upserted
when they change, with the counters of that moment; a run that continues as new sets
its waiting counters first (`catch_up`); `get_status` is always current."""


def _values(state: RunState) -> Values:
    pending = tree_approvals.pending_count(state)  # with those of runs below it
    status = tree_approvals.shown_status(state).value
    name = handoffs.first_agent(state)  # after a handoff too: what saved searches find
    return name, status, pending, state.turn, state.usage.total_tokens, state.usage.cost


def publish(state: RunState, *, last: Published | None, force: bool = False) -> Published:
    """Set the current details, and the search attributes if they changed since
    `last` (an upsert is a history event and a visibility write) and are due (or
    `force`); returns what was last set."""
    workflow.set_current_details(details.render(state))
    values = _values(state)
    name, status, pending, _, tokens, cost = values
    now = workflow.now()
    if last is not None and (
        values == last[0] or (not force and _counters_wait(values, last, now))
    ):
        return last
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
    return values, now


def catch_up(state: RunState, last: Published | None) -> Published | None:
    """Before the run closes itself (continue-as-new): set the counters still waiting.
    Asked only of a run whose counters differ from those set, and only where this
    build's rule (the patch) holds, so a run replayed from before it adds nothing."""
    if last is None or _values(state) == last[0]:
        return last
    if not patches.patched(patches.PATCH_COALESCED_COUNTERS):
        return last
    return publish(state, last=last, force=True)


def _counters_wait(values: Values, last: Published, now: datetime) -> bool:
    """Only the counters changed, within COUNTERS_INTERVAL of the last upsert."""
    recent = values[:3] == last[0][:3] and now - last[1] < COUNTERS_INTERVAL
    return recent and patches.patched(patches.PATCH_COALESCED_COUNTERS)


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
