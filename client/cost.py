"""What a run costs in Temporal actions, counted from its history (`agentctl cost`).

Temporal Cloud bills per action, and a self-hosted server does the same work. The
kinds counted here, as Temporal Cloud's pricing page lists them:

- `workflow_started`: a workflow run starts (a continue-as-new starts the next one):
  WorkflowExecutionStarted;
- `activities`: each activity attempt, first and retries: ActivityTaskScheduled and
  the attempt its ActivityTaskStarted names;
- `local_activities`: all local activities of one workflow task together: the tasks
  with a local activity's MarkerRecorded;
- `search_attribute_upserts`: an upsert after the start: UpsertWorkflowSearchAttributes;
- `timers`: TimerStarted; `signals`: WorkflowExecutionSignaled; `updates`:
  WorkflowExecutionUpdateAccepted; `external_signals`:
  SignalExternalWorkflowExecutionInitiated;
- `child_workflows`: two a child started (its start and its first task):
  StartChildWorkflowExecutionInitiated.

Not in history, so not counted here though billed: queries, activity heartbeats
that reach the server, and updates refused by a validator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pydantic import BaseModel
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

LOCAL_ACTIVITY_MARKER = "core_local_activity"
MAX_RUNS = 10_000
"""Workflow runs of one chain read at most (a chain continues as new for good)."""

_ONE_EACH = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: "workflow_started",
    EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES: "search_attribute_upserts",
    EventType.EVENT_TYPE_TIMER_STARTED: "timers",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: "signals",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: "updates",
    EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED: "external_signals",
}


class RunCost(BaseModel):
    """`agentctl cost --json`: a run's actions by kind across its workflow runs."""

    actions_total: int
    actions_by_kind: dict[str, int]
    history_bytes: int
    """The history of every workflow run of the chain, as the server counts it."""
    workflow_runs: int


def actions(events: Iterable[HistoryEvent]) -> Counter[str]:
    """The billed actions one workflow run's history shows, by kind."""
    found: Counter[str] = Counter()
    attempts: dict[int, int] = {}  # scheduled event id -> attempts started
    local_tasks: set[int] = set()
    for event in events:
        kind = _ONE_EACH.get(event.event_type)
        if kind is not None:
            found[kind] += 1
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attempts[event.event_id] = 1
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started = event.activity_task_started_event_attributes
            attempts[started.scheduled_event_id] = max(started.attempt, 1)
        elif event.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            found["child_workflows"] += 2
        elif event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
            marker = event.marker_recorded_event_attributes
            if marker.marker_name == LOCAL_ACTIVITY_MARKER:
                local_tasks.add(marker.workflow_task_completed_event_id)
    if attempts:
        found["activities"] = sum(attempts.values())
    if local_tasks:
        found["local_activities"] = len(local_tasks)
    return found


async def run_cost(client: Client, workflow_id: str) -> RunCost:
    """The actions and history of the run `workflow_id` (its latest execution and the
    workflow runs it continued from)."""
    described = await client.get_workflow_handle(workflow_id).describe()
    run_id: str | None = described.run_id
    found: Counter[str] = Counter()
    size = runs = 0
    while run_id and runs < MAX_RUNS:
        handle = client.get_workflow_handle(workflow_id, run_id=run_id)
        events = [e async for e in handle.fetch_history_events()]
        info = (await handle.describe()).raw_description.workflow_execution_info
        size += info.history_size_bytes
        runs += 1
        found.update(actions(events))
        first = events[0].workflow_execution_started_event_attributes if events else None
        run_id = first.continued_execution_run_id if first is not None else None
    return RunCost(
        actions_total=sum(found.values()),
        actions_by_kind=dict(sorted(found.items())),
        history_bytes=size,
        workflow_runs=runs,
    )


def render(cost: RunCost) -> str:
    """`agentctl cost` for people."""
    lines = [
        f"{cost.actions_total} actions in {cost.workflow_runs} workflow run"
        f"{'s' if cost.workflow_runs != 1 else ''}, {cost.history_bytes:,} bytes of history"
    ]
    lines += [f"  {kind:<26} {n}" for kind, n in cost.actions_by_kind.items()]
    lines.append(
        "(queries, heartbeats and refused updates are billed too; history does not show them)"
    )
    return "\n".join(lines)
