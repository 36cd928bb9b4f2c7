"""Starting and watching chaos runs."""

from __future__ import annotations

import uuid

from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult, DecisionSignal, StatusView
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType, TimeoutType
from temporalio.client import Client, WorkflowHandle

from tests.support.runs import workflow_task_failures


async def start(
    client: Client, task_queue: str, text: str, prefix: str = "chaos", agent: str = "chaos"
) -> WorkflowHandle:
    return await client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent=agent, input=text),
        id=f"{prefix}-{uuid.uuid4().hex[:10]}",
        task_queue=task_queue,
        result_type=AgentResult,
    )


async def status(handle: WorkflowHandle) -> StatusView | None:
    try:
        return await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
    except Exception:  # not started yet, or the server is away
        return None


async def approve_pending(handle: WorkflowHandle) -> int:
    """Approve every call the run waits on; how many."""
    try:
        pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    except Exception:
        return 0
    for item in pending:
        await handle.signal(
            contract.SIGNAL_APPROVE, DecisionSignal(call_id=item["call_id"], approver="chaos")
        )
    return len(pending)


async def task_failures(handle: WorkflowHandle) -> int:
    """Workflow task failures in the run's history (a kill only times tasks out), as
    `tests.support.runs.workflow_task_failures` counts them."""
    return await workflow_task_failures(handle)


async def retry_causes(handle: WorkflowHandle, activity_type: str | None = None) -> list[str]:
    """What ended the attempt before each retried activity attempt of the run (of
    `activity_type` only, if given), in history order: the timeout's type
    (`TIMEOUT_TYPE_HEARTBEAT`, `TIMEOUT_TYPE_START_TO_CLOSE`, ...) or the failure's
    message. A kill -9 shows as the timeout that noticed it."""
    causes = []
    types: dict[int, str] = {}  # scheduled event id -> activity type
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            scheduled = event.activity_task_scheduled_event_attributes
            types[event.event_id] = scheduled.activity_type.name
        started = event.activity_task_started_event_attributes
        if event.event_type != EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED or started.attempt < 2:
            continue
        if activity_type is not None and types.get(started.scheduled_event_id) != activity_type:
            continue
        failure = started.last_failure
        if failure.HasField("timeout_failure_info"):
            causes.append(TimeoutType.Name(failure.timeout_failure_info.timeout_type))
        else:
            causes.append(failure.message)
    return causes


async def is_final(handle: WorkflowHandle) -> bool:
    view = await status(handle)
    return view is not None and view.status.is_final


FINAL_OK = RunStatus.COMPLETED


async def approve(handle: WorkflowHandle, call_id: str, approver: str = "ann") -> None:
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id=call_id, approver=approver))


async def diagnosis(handle: WorkflowHandle) -> str:
    """One line on a run that has not ended when a test expected it to: what the server
    says (status, pending activities and workflow task), what a query answers, and the
    last events of its history — what a test's timeout message needs to say why."""
    parts = [handle.id]
    try:
        described = await handle.describe()
        raw = described.raw_description
        parts.append(f"server: {described.status.name if described.status else '?'}")
        parts += [
            f"pending {a.activity_type.name} attempt {a.attempt} state {a.state}"
            for a in raw.pending_activities
        ]
        if raw.HasField("pending_workflow_task"):
            task = raw.pending_workflow_task
            parts.append(f"workflow task {task.state} attempt {task.attempt}")
    except Exception as err:  # a diagnosis says what it could not read
        parts.append(f"describe failed: {err}")
    try:
        view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
        parts.append(f"query: {view.status.value}")
    except Exception as err:
        parts.append(f"query failed: {str(err)[:300]}")
    try:
        events = [e async for e in handle.fetch_history_events()]
        parts.append("last events: " + ", ".join(EventType.Name(e.event_type) for e in events[-6:]))
    except Exception as err:
        parts.append(f"history failed: {err}")
    return "; ".join(parts)
