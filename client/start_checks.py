"""What `agentctl start` checks once a run has started (that a worker polls its task
queue), and what `agentctl result` says before it waits.

A run on a task queue no worker polls (a typo in `--task-queue`, a worker on another
queue, none running) waits in silence: Temporal accepts the start, and nothing fails.
Temporal lists the workers that polled a task queue lately (`DescribeTaskQueue`, as
`durable_agents.served_agents` reads it), so the sender is told at once instead.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from durable_agents.workflows import contract
from durable_agents.workflows.payloads import StatusView
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from durable_agents import served_agents

GRACE_SECONDS = 2.0
"""How long a queue without pollers is watched before the warning: a worker started
together with the run has not polled yet in its first second or so."""
EVERY_SECONDS = 0.25


async def unpolled_warning(
    client: Client, run_id: str, *, grace_seconds: float = GRACE_SECONDS
) -> str | None:
    """A one-line warning when no worker polls the workflow task queue of run `run_id`
    (none seen for `grace_seconds`); None when one does, or when this client may not
    describe the run or its queue (nothing is known then)."""
    try:
        queue = (await client.get_workflow_handle(run_id).describe()).task_queue
    except RPCError:
        return None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace_seconds
    while True:
        try:
            if await served_agents.pollers(client, queue):
                return None
        except RPCError:
            return None
        if loop.time() >= deadline:
            break
        await asyncio.sleep(EVERY_SECONDS)
    return (
        f"no worker polls task queue {queue!r} (none in the last "
        f"{served_agents.RECENT_SECONDS} s): run {run_id} waits until one does; start a "
        f"worker on that queue (worker.py --task-queue {queue}) or check --task-queue"
    )


QUERY_SECONDS = 3.0
"""How long `waiting_note` gives the run to answer its status query."""


async def waiting_note(client: Client, run_id: str) -> str | None:
    """One line saying what run `run_id` is doing while `agentctl result` waits for it to
    end (so a wait on a run blocked by an approval, or by a missing worker, says so); None
    when the run has ended or this client may not describe it."""
    try:
        described = await client.get_workflow_handle(run_id).describe()
    except RPCError:
        return None
    if described.status != WorkflowExecutionStatus.RUNNING:
        return None
    stop = "Ctrl-C stops the wait, not the run"
    unpolled = await unpolled_warning(client, run_id)
    if unpolled is not None:
        return f"{unpolled}; {stop}"
    try:
        view = await client.get_workflow_handle(run_id).query(
            contract.QUERY_GET_STATUS,
            result_type=StatusView,
            rpc_timeout=timedelta(seconds=QUERY_SECONDS),
        )
    except RPCError:
        return (
            f"waiting for run {run_id} to end; it answered no status query in "
            f"{QUERY_SECONDS:g} s (agentctl status {run_id}); {stop}"
        )
    doing = f"{view.status.value}, turn {view.turn}"
    if view.pending_approvals:
        calls = "call waits" if view.pending_approvals == 1 else "calls wait"
        doing += f"; {view.pending_approvals} {calls} for a decision: agentctl pending {run_id}"
    return f"waiting for run {run_id} to end ({doing}); {stop}"
