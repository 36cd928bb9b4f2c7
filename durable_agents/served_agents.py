"""Which agents the workers of a task queue serve, and where a run of an agent starts.

Every worker serves AgentWorkflow, but only the agents of its own registry: a run
whose workflow task reaches a worker that does not serve its agent fails
("unknown agent"), and a task cannot be declined. So every worker with
`AgentsPlugin` announces what it serves: beside itself it runs a small worker on
`TASK_QUEUE#served-agents` whose Temporal identity is its own followed by the
list (`4242@host agents:a,b,c`; the identity of the worker that runs the tasks
stays as it was, so no history grows). Temporal lists the pollers of a task queue
with their identities (`DescribeTaskQueue`; the UI's task queue page too), so a
client can tell, before it starts a run:

- that no worker of the queue serves the agent: refused, with the agents served;
- that the queue's workers serve different agents: a run would fail whenever a
  worker without its agent takes a task; refused, with the fix;
- that workers poll the agent's own queue (`TASK_QUEUE@AGENT`, `worker.py
  --agent-queues`): the run starts there, where every worker serves it, and its
  activities follow it (they run on the workflow's task queue).

A worker that announces nothing (an older build, a Worker without the plugin)
leaves the client unable to tell: it starts the run as asked, and the workflow's
own refusal stays for anything else.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

MARK = " agents:"
MAX_IDENTITY_CHARS = 1_000
RECENT_SECONDS = 120
"""A poller seen longer ago than this has stopped (a long poll lasts about a minute)."""


ANNOUNCE_SUFFIX = "#served-agents"


def announce_queue(task_queue: str) -> str:
    """Where the workers of `task_queue` announce the agents they serve."""
    return f"{task_queue}{ANNOUNCE_SUFFIX}"


def is_announce_queue(task_queue: str) -> bool:
    return task_queue.endswith(ANNOUNCE_SUFFIX)


def identity(worker_identity: str, agents: Iterable[str]) -> str:
    """The announcing identity of the worker `worker_identity`: its own and the agents
    it serves (the list cut, with `…`, when it would be too long: then it says nothing
    of membership, only that it differs)."""
    listed = f"{worker_identity}{MARK}{','.join(sorted(agents))}"
    if len(listed) <= MAX_IDENTITY_CHARS:
        return listed
    return listed[: MAX_IDENTITY_CHARS - 1] + "…"


@activity.defn(name="served_agents")
async def announce() -> None:
    """Never scheduled: the announcing worker needs something to serve."""


def agents_of(announced: str) -> frozenset[str] | None:
    """The agents an announcing identity lists; None when it lists none in full."""
    _, found, names = announced.rpartition(MARK)
    if not found or names.endswith("…"):
        return None
    return frozenset(n for n in names.split(",") if n)


def agent_queue(task_queue: str, agent: str) -> str:
    """The task queue of one agent's runs on workers started with `--agent-queues`."""
    return f"{task_queue}@{agent}"


@dataclass(frozen=True)
class Poller:
    identity: str
    seen_seconds_ago: float

    @property
    def agents(self) -> frozenset[str] | None:
        return agents_of(self.identity)


async def pollers(
    client: Client,
    task_queue: str,
    kind: TaskQueueType.ValueType = TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
) -> list[Poller]:
    """The workers that polled `task_queue` (for workflow tasks, or `kind`) lately."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=kind
    )
    answer = await client.workflow_service.describe_task_queue(request)
    now = time.time()
    found = []
    for poller in answer.pollers:
        ago = now - poller.last_access_time.ToMicroseconds() / 1e6
        if ago <= RECENT_SECONDS:
            found.append(Poller(poller.identity, max(ago, 0.0)))
    return found


class NotServed(Exception):
    """No worker of the task queue serves the agent, or not all of them do."""


async def task_queue_for(client: Client, task_queue: str, agent: str) -> str:
    """Where a run of `agent` starts: its own queue if workers poll it, else
    `task_queue`, once its workers are known to serve it. Raises NotServed (the
    message says what is served and what to do); a server that does not let this
    client describe task queues leaves the choice as asked."""
    try:
        if await pollers(client, agent_queue(task_queue, agent)):
            return agent_queue(task_queue, agent)
        found = await pollers(client, task_queue)
        declared = await announced(client, task_queue)
    except RPCError:
        return task_queue  # e.g. no permission to describe: the workflow still refuses
    said = {p.identity.rpartition(MARK)[0] for p in declared}
    if not found or any(p.identity not in said for p in found):
        return task_queue  # no worker yet, or one that does not say: cannot tell
    declared = [p for p in declared if p.agents is not None]
    if not declared:
        return task_queue
    serving = [p for p in declared if agent in (p.agents or ())]
    if not serving:
        served = sorted(set().union(*(p.agents or () for p in declared)))
        raise NotServed(
            f"no worker on task queue {task_queue!r} serves agent {agent!r}; served there: "
            f"{', '.join(served) or 'none'}"
        )
    if len(serving) < len(declared):
        others = "; ".join(
            f"{p.identity.split(MARK)[0]} serves {', '.join(sorted(p.agents or ())) or 'none'}"
            for p in declared
            if p not in serving
        )
        raise NotServed(
            f"not every worker on task queue {task_queue!r} serves agent {agent!r} ({others}), "
            "so its run would fail whenever one of those takes a task: serve the same agents "
            "on every worker of a queue, give each set its own --task-queue, or start the "
            f"workers with --agent-queues (runs of {agent!r} then go to "
            f"{agent_queue(task_queue, agent)!r})"
        )
    return task_queue


async def announced(client: Client, task_queue: str) -> list[Poller]:
    """The announcing identities of the workers of `task_queue` (seen lately)."""
    kind = TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
    return await pollers(client, announce_queue(task_queue), kind)


def mixed(own: frozenset[str], found: Iterable[Poller], own_identity: str) -> str | None:
    """A warning when other workers of the queue serve other agents (None: none do);
    `found`: the queue's announcing identities."""
    others = [
        p
        for p in found
        if p.identity.rpartition(MARK)[0] != own_identity and p.agents not in (None, own)
    ]
    if not others:
        return None
    listed = "; ".join(
        f"{p.identity.split(MARK)[0]} serves {', '.join(sorted(p.agents or ())) or 'none'}"
        for p in others
    )
    return (
        f"other workers of this task queue serve other agents ({listed}): a run fails "
        "whenever a worker without its agent takes one of its tasks; serve the same agents on "
        "every worker of a queue, give each set its own --task-queue, or use --agent-queues"
    )
