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
- that not every worker serves it: if workers poll the agent's own queue
  (`TASK_QUEUE@AGENT`, `worker.py --agent-queues`), the run starts there, where
  every worker serves it (its activities follow it: they run on the workflow's
  task queue); else a warning with the fix, and the run starts as asked (a worker
  that just stopped stays listed for up to two minutes: refusing would refuse
  good starts after every deploy that adds an agent).

A worker that announces nothing (an older build, a Worker without the plugin)
leaves the client unable to tell: it starts the run as asked, and the workflow's
own refusal stays for anything else.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from temporalio import activity
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

_log = logging.getLogger(__name__)
MARK = " agents:"
MAX_IDENTITY_BYTES = 1_000
CUT = "..."
RECENT_SECONDS = 120
"""A poller seen longer ago than this has stopped (a long poll lasts about a minute)."""


ANNOUNCE_SUFFIX = "#served-agents"


def announce_queue(task_queue: str) -> str:
    """Where the workers of `task_queue` announce the agents they serve."""
    return f"{task_queue}{ANNOUNCE_SUFFIX}"


def is_announce_queue(task_queue: str) -> bool:
    return task_queue.endswith(ANNOUNCE_SUFFIX)


def identity(worker_identity: str, agents: Iterable[str]) -> str | None:
    """The announcing identity of the worker `worker_identity`: its own and the agents
    it serves. Temporal takes at most 1,000 bytes: a longer list is cut and ends with
    `...` (then it says nothing of membership, only that it is there); None when the
    worker's own identity leaves no room."""
    listed = f"{worker_identity}{MARK}{','.join(sorted(agents))}"
    if len(listed.encode()) <= MAX_IDENTITY_BYTES:
        return listed
    if len(f"{worker_identity}{MARK}".encode()) > MAX_IDENTITY_BYTES - 100:
        return None
    cut = listed.encode()[: MAX_IDENTITY_BYTES - 100].decode("utf-8", errors="ignore")
    return cut + CUT


@activity.defn(name="served_agents")
async def announce() -> None:
    """Never scheduled: the announcing worker needs something to serve."""


def agents_of(announced: str) -> frozenset[str] | None:
    """The agents an announcing identity lists; None when it lists none in full."""
    _, found, names = announced.rpartition(MARK)
    if not found or names.endswith(CUT):
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
    """Where a run of `agent` starts: `task_queue` when its workers all serve the agent
    (or cannot tell); the agent's own queue when they do not all serve it and workers
    poll that one. Raises NotServed when none of them serves it (the message says what
    is served); logs a warning when only some do and no agent queue is polled (the run
    fails whenever a worker without its agent takes a task). A server that does not let
    this client describe task queues leaves the choice as asked."""
    try:
        found = await pollers(client, task_queue)
        declared = await announced(client, task_queue)
    except RPCError:
        return task_queue  # e.g. no permission to describe: the workflow still refuses
    said = {p.identity.rpartition(MARK)[0]: p for p in declared}
    if not found or any(p.identity not in said for p in found):
        return task_queue  # no worker yet, or one that does not say: cannot tell
    listing = [said[p.identity] for p in found if said[p.identity].agents is not None]
    if len(listing) < len(found):
        return task_queue
    serving = [p for p in listing if agent in (p.agents or ())]
    if len(serving) == len(listing):
        return task_queue
    own = agent_queue(task_queue, agent)
    try:
        if await pollers(client, own):
            return own
    except RPCError:
        pass
    if not serving:
        served = sorted(set().union(*(p.agents or () for p in listing)))
        raise NotServed(
            f"no worker on task queue {task_queue!r} serves agent {agent!r}; served there: "
            f"{', '.join(served) or 'none'} (workers seen in the last {RECENT_SECONDS} s)"
        )
    others = "; ".join(
        f"{p.identity.rpartition(MARK)[0]} serves {', '.join(sorted(p.agents or ())) or 'none'}"
        for p in listing
        if p not in serving
    )
    _log.warning(
        "not every worker on task queue %r serves agent %r (%s, seen in the last %s s): its "
        "run fails whenever one of those takes a task; serve the same agents on every "
        "worker of a queue, give each set its own --task-queue, or use --agent-queues",
        task_queue, agent, others, RECENT_SECONDS,
    )  # fmt: skip
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
