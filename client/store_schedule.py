"""Payload-store retention on a schedule: one Temporal Schedule per namespace
(`contract.STORE_GC_SCHEDULE`) that starts an `AgentStoreGC` workflow every so often
on a task queue whose workers hold the store (`agentctl store gc --schedule`).
Overlapping collections are skipped; each one's report is its workflow's result,
in the Temporal UI."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from durable_agents.workflows import contract
from durable_agents.workflows.payloads import StoreGCInput
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
)
from temporalio.service import RPCError, RPCStatusCode

SHORTEST_INTERVAL = timedelta(minutes=10)


async def schedule(
    client: Client, task_queue: str, *, every: timedelta, request: StoreGCInput
) -> str:
    """Create (or replace) the namespace's collection schedule; its id."""
    if every < SHORTEST_INTERVAL:
        raise ValueError(f"collect at most every {SHORTEST_INTERVAL}, not every {every}")
    plan = Schedule(
        action=ScheduleActionStartWorkflow(
            contract.WORKFLOW_STORE_GC,
            request,
            id=contract.STORE_GC_SCHEDULE,
            task_queue=task_queue,
            static_summary="payload-store retention",
        ),
        spec=ScheduleSpec(intervals=[ScheduleIntervalSpec(every=every)]),
        policy=SchedulePolicy(overlap=ScheduleOverlapPolicy.SKIP),
    )
    try:  # the first collection at once (an interval counts from the epoch)
        await client.create_schedule(contract.STORE_GC_SCHEDULE, plan, trigger_immediately=True)
    except ScheduleAlreadyRunningError:  # changed; paused or not, and its note, as it was
        await client.get_schedule_handle(contract.STORE_GC_SCHEDULE).update(
            lambda old: ScheduleUpdate(
                schedule=dataclasses.replace(plan, state=old.description.schedule.state)
            )
        )
    return contract.STORE_GC_SCHEDULE


async def unschedule(client: Client) -> bool:
    """Delete the collection schedule; False when there was none."""
    try:
        await client.get_schedule_handle(contract.STORE_GC_SCHEDULE).delete()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True
