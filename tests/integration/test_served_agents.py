"""A run starts only where its agent is served (durable_agents.served_agents): `agentctl
start` of an agent no worker serves is refused with what is served; a task queue whose
workers serve different agents is refused with the fix, and routed around when the
workers poll each agent's own queue; `worker.py` warns when it joins such a queue."""

from __future__ import annotations

import asyncio
import logging
import sys
import uuid
from contextlib import AsyncExitStack, asynccontextmanager

from durable_agents.activities.registry import AgentRegistry
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows.state import RunStatus
from openai import AsyncOpenAI
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from durable_agents import served_agents
from durable_agents.testing import Reply
from durable_agents.worker import build_worker
from tests.integration.test_codec_worker import ROOT, served_env
from tests.support import agents
from tests.support.cli_support import bound_to


@asynccontextmanager
async def workers(client, model_server, task_queue: str, *served: tuple[list, bool]):
    """One worker per entry: (its agents, whether it also polls each agent's own queue)."""
    model = AsyncOpenAI(base_url=model_server.base_url, api_key="test", max_retries=0)
    polling: list[tuple[str, str]] = []
    async with AsyncExitStack() as stack:
        for number, (names, own_queues) in enumerate(served):
            # Its own connection, as another process has: one client takes one worker
            # per task queue.
            own = await Client.connect(
                client.service_client.config.target_host,
                namespace=client.namespace,
                data_converter=client.data_converter,
            )
            registry = AgentRegistry([getattr(agents, n) for n in names])
            queues = [task_queue]
            if own_queues:
                queues += [served_agents.agent_queue(task_queue, n) for n in names]
            for queue in queues:
                worker = build_worker(
                    own, registry=registry, model_client=model, task_queue=queue,
                    identity=f"worker{number}@test",  # one process: tell them apart
                )  # fmt: skip
                await stack.enter_async_context(worker)
                polling.append((queue, f"worker{number}@test"))
        for queue, identity in polling:  # the pollers reached the server: seen, not slept on
            await polled_by(client, queue, identity)
        # and each worker's announcement of its agents: a client that sees a poller not
        # announced yet cannot tell what it serves, and starts as asked (no warning)
        workers_seen = {identity for _, identity in polling}
        async with asyncio.timeout(30):
            while not workers_seen <= {
                p.identity.rpartition(served_agents.MARK)[0]
                for p in await served_agents.announced(client, task_queue)
            }:
                await asyncio.sleep(0.05)
        yield
    await model.close()


async def polled_by(client: Client, queue: str, identity: str) -> None:
    """Wait (30 s at most) until the server lists a workflow poller of `queue` whose
    identity begins with `identity`."""
    request = DescribeTaskQueueRequest(
        namespace=client.namespace,
        task_queue=TaskQueue(name=queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    )
    async with asyncio.timeout(30):
        while True:
            described = await client.workflow_service.describe_task_queue(request)
            if any(p.identity.startswith(identity) for p in described.pollers):
                return
            await asyncio.sleep(0.05)


def test_an_identity_says_which_agents_and_only_when_it_fits():
    said = served_agents.identity("4242@host", ["b", "a"])
    assert said == "4242@host agents:a,b" and served_agents.agents_of(said) == {"a", "b"}
    assert served_agents.agents_of("4242@host") is None  # another worker says nothing
    assert served_agents.agents_of("4242@host agents:") == frozenset()
    long = served_agents.identity("4242@hôst", [f"agent_number_{n}" for n in range(80)])
    assert len(long.encode()) <= served_agents.MAX_IDENTITY_BYTES and long.endswith("...")
    assert served_agents.agents_of(long) is None  # cut: says nothing of membership
    assert served_agents.identity("x" * 995, ["a", "b"]) is None  # no room left: no announcement


async def test_the_workers_own_identity_stays_short_in_every_history(worker, model_server):
    model_server.script(Reply(content="done"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    run = await client.start("assistant", "hi")
    await run.result()
    events = (await worker.client.get_workflow_handle(run.id).fetch_history()).events
    identities = {
        getattr(e, e.WhichOneof("attributes")).identity
        for e in events
        if hasattr(getattr(e, e.WhichOneof("attributes")), "identity")
    } - {""}
    assert identities and all(served_agents.MARK not in i for i in identities), identities


async def test_agentctl_start_of_an_agent_nobody_serves_is_refused_with_what_is_served(
    worker, model_server
):
    ctl = bound_to(worker)
    # The worker's announcement is seen once it has polled (agentctl in this process
    # can ask before that; until then a client cannot tell, and starts as asked).
    async with asyncio.timeout(20):
        while not await served_agents.announced(worker.client, worker.task_queue):
            await asyncio.sleep(0.1)
    out = await ctl("start", "nosuch", "hi")
    assert out.code == 1 and out.stdout == ""
    assert out.stderr.strip() == (
        f"agentctl: error: no worker on task queue {worker.task_queue!r} serves agent "
        "'nosuch'; served there: asker, assistant, concierge, custodian, decider, digester, "
        "forgetful, frugal, guarded, marathon, quick, sleepy, spender, support, tally, thinker, "
        "treasurer, tuned (workers seen in the last 120 s)"
    )
    assert [r async for r in worker.client.list_workflows('WorkflowId STARTS_WITH "nosuch"')] == []


async def test_a_queue_whose_workers_serve_different_agents_is_warned_then_routed(
    env, model_server, caplog
):
    queue = f"mixed-{uuid.uuid4().hex[:8]}"
    client = AgentClient(env.client, task_queue=queue)
    model_server.script(
        Reply(content="first"), Reply(content="from assistant"), Reply(content="from support")
    )
    async with workers(
        env.client, model_server, queue, (["assistant"], False), (["support"], False)
    ):
        with caplog.at_level(logging.WARNING, logger="durable_agents.served_agents"):
            mixed = await client.start("assistant", "hi")  # started: a worker may have stopped
        [warning] = [r.getMessage() for r in caplog.records if "not every worker" in r.message]
        assert f"not every worker on task queue {queue!r} serves agent 'assistant'" in warning
        assert "serves support" in warning and "--agent-queues" in warning
        await env.client.get_workflow_handle(mixed.id).terminate("mixed queue")
    async with workers(env.client, model_server, queue, (["assistant"], True), (["support"], True)):
        first = await client.start("assistant", "hi")
        assert (await first.result()).final_output in ("first", "from assistant")
        second = await client.start("support", "hi")
        assert (await second.result()).status is RunStatus.COMPLETED
        described = await env.client.get_workflow_handle(first.id).describe()
        assert described.task_queue == f"{queue}@assistant"


async def test_a_queue_whose_workers_all_serve_the_agent_is_not_routed_elsewhere(env, model_server):
    queue = f"same-{uuid.uuid4().hex[:8]}"
    model_server.script(Reply(content="done"))
    async with workers(env.client, model_server, queue, (["assistant"], True)):
        pass  # its own queue was polled: a stale poller now
    async with workers(env.client, model_server, queue, (["assistant", "support"], False)):
        run = await AgentClient(env.client, task_queue=queue).start("assistant", "hi")
        assert (await env.client.get_workflow_handle(run.id).describe()).task_queue == queue
        assert (await run.result()).status is RunStatus.COMPLETED


async def test_a_run_starts_when_no_worker_has_polled_yet(env):
    queue = f"empty-{uuid.uuid4().hex[:8]}"
    run = await AgentClient(env.client, task_queue=queue).start("assistant", "hi")
    assert (await env.client.get_workflow_handle(run.id).describe()).task_queue == queue
    await env.client.get_workflow_handle(run.id).terminate("no worker: none needed")


async def test_worker_py_warns_when_it_joins_a_queue_serving_other_agents(env, model_server):
    queue = f"join-{uuid.uuid4().hex[:8]}"
    settings = served_env(env, model_server)
    async with workers(env.client, model_server, queue, (["assistant"], False)):
        process = await asyncio.create_subprocess_exec(
            sys.executable, "worker.py", "--agents", "examples.support_agent",
            "--task-queue", queue, cwd=ROOT, env=settings,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            lines: list[str] = []
            while len(lines) < 6 and not lines[-1:] == ["worker: warning"]:
                line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
                assert line, lines  # the worker ended
                lines.append(line.strip())
                if line.startswith("worker: warning"):
                    break
        finally:
            process.terminate()
            await process.communicate()
    [warning] = [line for line in lines if line.startswith("worker: warning:")]
    assert "other workers of this task queue serve other agents (" in warning
    assert "serves assistant)" in warning and "--agent-queues" in warning
