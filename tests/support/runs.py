"""Helpers for tests that start and watch AgentWorkflow runs."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
import uuid

from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import agent_calls, contract
from durable_agents.workflows.payloads import AgentInput, AgentResult, StatusView
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunState, RunStatus
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import Client, WorkflowHandle

from durable_agents import gate
from durable_agents.testing import Reply, ScriptedModelServer


async def start(worker, text: str = "hi", *, agent: str = "assistant", **options) -> WorkflowHandle:
    return await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent=agent, input=text, **options),
        id=f"run-{uuid.uuid4().hex[:10]}",
        task_queue=worker.task_queue,
        result_type=AgentResult,
    )


async def state_of(handle: WorkflowHandle) -> RunState:
    return await read_state(querying(handle))


async def child_run(client: Client, run_id: str, call_id: str, timeout: float = 30) -> str:
    """The id of run `run_id`'s child for agent call `call_id`, as the run's state records
    it once the child started (`agent_calls.child_of`): its id has a part only the
    workers' gate keys make, so nobody computes it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = await state_of(client.get_workflow_handle(run_id))
            found = agent_calls.child_of(state, call_id)
        except Exception:  # the run may not have run its first workflow task yet
            found = None
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} started no child for call {call_id}")
        await asyncio.sleep(0.1)


def keyed_child_id(run_id: str, call_id: str, namespace: str = "default") -> str:
    """The id the workers start run `run_id`'s child for agent call `call_id` under,
    computed as they compute it: only with their gate key (this test process holds it,
    `AGENT_GATE_KEYS`), for a script that names the child before it starts."""
    keys = gate.required_keys()
    plain = agent_calls.child_id(run_id, call_id)
    part = gate.id_part(keys, keys.current, ["child", namespace, run_id, plain])
    return agent_calls.child_id(run_id, call_id, f"~{keys.current}.{part}")


def keyed_delivery_id(run_id: str, plain: str, namespace: str = "default") -> str:
    """The workflow id of a webhook delivery whose plain id is `plain`
    (`evt_<execution>_<seq>_<endpoint>`), as the workers make it for run `run_id`: only
    with their gate key (this test process holds it)."""
    keys = gate.required_keys()
    part = gate.id_part(keys, keys.current, ["delivery", namespace, run_id, plain])
    return f"{plain}~{keys.current}.{part}"


async def wait_for_status(
    handle: WorkflowHandle, status: RunStatus, timeout: float = 30
) -> StatusView:
    deadline = time.monotonic() + timeout
    while True:
        try:
            view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
            if view.status == status:
                return view
        except Exception:  # the first workflow task may not have run yet
            view = None
        if time.monotonic() > deadline:
            raise AssertionError(f"run did not reach {status.value}; last status: {view}")
        await asyncio.sleep(0.1)


def tool_results(state: RunState) -> dict[str, ToolResult]:
    return {i.call_id: i for i in state.items if isinstance(i, ToolResult)}


def free_port() -> int:
    """A TCP port nothing listens on right now (for servers a test starts)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def temporal_cli(worker, *args: str) -> str:
    """Run the `temporal` CLI against the worker's server; its stdout (fails on error)."""
    from durable_agents.worker import temporal_binary

    process = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *args,
        "--address",
        worker.address,
        "--namespace",
        worker.namespace,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode()


async def refused_start(worker, folder, start_input: dict, *, run_id: str | None = None) -> str:
    """Start AgentWorkflow (id `run_id`, default a fresh one) from the `temporal` CLI with
    `start_input` as its input file; the run must fail as invalid input: its message."""
    from temporalio.client import WorkflowFailureError

    run_id = run_id or f"cli-start-{uuid.uuid4().hex[:10]}"
    path = folder / f"{run_id}.json"
    path.write_text(json.dumps(start_input))
    await temporal_cli(
        worker, "workflow", "start", "--type", contract.WORKFLOW_TYPE,
        "--task-queue", worker.task_queue, "--workflow-id", run_id, "--input-file", str(path),
    )  # fmt: skip
    handle = worker.client.get_workflow_handle(run_id, result_type=AgentResult)
    try:
        async with asyncio.timeout(30):
            await handle.result()
    except WorkflowFailureError as failed:
        assert failed.cause.type == contract.ERROR_INVALID_INPUT, failed.cause
        return str(failed.cause)
    raise AssertionError(f"the run {run_id} started from {start_input} did not fail")


async def workflow_task_failures(handle: WorkflowHandle) -> int:
    """How many workflow tasks of the run failed (a run that fails them is wedged). Not
    counted: a completion the server turned down because a signal arrived while the run
    was completing it (`UNHANDLED_COMMAND`): Temporal's own way to hand the run that
    signal in a new task, seen when a child's last signal meets its caller's end."""
    events = [e async for e in handle.fetch_history_events()]
    failed = [
        e.workflow_task_failed_event_attributes
        for e in events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ]
    return sum(
        f.cause != WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
        for f in failed
    )


def held(model_server: ScriptedModelServer, first: Reply, *then: Reply) -> threading.Event:
    """The model server answers its next request with `first` only once the event
    returned is set (60 s at most), then `then` in turn: a test acts while a model call
    is under way, in that order, however slow the machine (no delay to outlast)."""
    release = threading.Event()
    replies = [first, *then]

    def answer(body: dict) -> Reply:
        reply = replies.pop(0)
        if reply is first:
            release.wait(60)
        return reply

    model_server.responder = answer
    return release


async def requested(model_server: ScriptedModelServer, count: int = 1) -> None:
    """Wait (30 s at most) until the model server has received `count` requests."""
    async with asyncio.timeout(30):
        while len(model_server.requests) < count:
            await asyncio.sleep(0.02)


async def activities_scheduled(handle: WorkflowHandle) -> list[str]:
    """The activity types the run has scheduled so far (its history), in order: what a
    test checks once the run has taken an input, instead of waiting to see that nothing
    ran within some time."""
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
