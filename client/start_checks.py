"""What `agentctl start` checks once a run has started: that a worker polls its task queue.

A run on a task queue no worker polls (a typo in `--task-queue`, a worker on another
queue, none running) waits in silence: Temporal accepts the start, and nothing fails.
Temporal lists the workers that polled a task queue lately (`DescribeTaskQueue`, as
`durable_agents.served_agents` reads it), so the sender is told at once instead.
"""

from __future__ import annotations

import asyncio

from temporalio.client import Client
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
