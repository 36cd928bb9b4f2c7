"""Execution settings are the worker's, never the run's: a deploy that changes a timeout
never breaks a running run (Temporal compares an activity's type and id on replay, not
its options) and reaches it at its next continue-as-new; a start input or a snapshot
cannot set one. Against a real dev server, workers and the scripted model over HTTP."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

import pytest
from durable_agents.client.ask_worker import WorkerUnavailable, ask_worker
from durable_agents.workflows import contract
from durable_agents.workflows.execution_settings import EXECUTION_FIELDS
from durable_agents.workflows.payloads import DecisionSignal, DescribedAgent
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agents import Agent, tool
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.testing import Call, Reply
from tests.conftest import NO_DRAIN, serving
from tests.support.histories import replayed_workflows
from tests.support.runs import refused_start, start, wait_for_status, workflow_task_failures


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def send(to: str) -> str:
    """Send a note."""
    return f"sent to {to}"


def timed(seconds: int, *, turns: int = 3) -> Agent:
    """The same agent as two deploys declare it: its tools' and model calls' timeouts
    `seconds` + 1, + 2 and + 3. It continues as new after `turns` model calls."""
    return Agent(
        name="timed",
        instructions="Add, then send.",
        tools=[
            tool(add, timeout=timedelta(seconds=seconds + 1)),
            tool(send, needs_approval=True, timeout=timedelta(seconds=seconds + 2)),
        ],
        model_timeout=timedelta(seconds=seconds + 3),
        turns_per_workflow_run=turns,
    )


async def scheduled(handle: WorkflowHandle) -> list[tuple[str, int]]:
    """Each activity the workflow run scheduled, in order, with its start-to-close timeout."""
    found = []
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attributes = event.activity_task_scheduled_event_attributes
            found.append((attributes.activity_type.name, attributes.start_to_close_timeout.seconds))
    return found


async def test_a_deploy_that_changes_timeouts_never_breaks_a_run_and_reaches_it_at_its_next_continue_as_new(  # noqa: E501
    env, model_server
):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)),
        Reply(tool_calls=(Call("send", {"to": "ann"}, "s1"),)),
        Reply(tool_calls=(Call("add", {"a": 3, "b": 4}, "a2"),)),
        Reply(content="done"),
    )
    queue = f"test-{uuid.uuid4().hex[:8]}"
    old, new = timed(20), timed(40)
    async with serving(
        env.client, model_server, task_queue=queue, extra_agents=[old], drain=NO_DRAIN
    ) as first:
        handle = await start(first, agent="timed")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    # the worker is redeployed with other timeouts while the run waits
    async with serving(
        env.client, model_server, task_queue=queue, extra_agents=[new], drain=NO_DRAIN
    ) as second:
        await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="s1", approver="ann"))
        result = await handle.result()
        state = await env.client.get_workflow_handle(handle.id).query(contract.QUERY_GET_STATE)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "done")
    assert EXECUTION_FIELDS.isdisjoint(state["agent"])  # none of it is in the run's state
    assert all(EXECUTION_FIELDS.isdisjoint(t) for t in state["agent"]["tools"])

    first_run = env.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    latest = env.client.get_workflow_handle(handle.id)
    # The first workflow run goes on with the settings its describe_agent recorded, on the
    # new worker too (`send` and the calls after it were scheduled there): a run never
    # changes its options in the middle of a workflow run.
    assert await scheduled(first_run) == [
        ("describe_agent", 30),
        ("call_model", 23),
        ("run_tool", 21),
        ("call_model", 23),
        ("run_tool", 22),  # approved after the redeploy: still the old 22 s
        ("call_model", 23),
        ("run_tool", 21),
    ]
    # The next workflow run describes the agent again, once, before its first call.
    assert await scheduled(latest) == [("describe_agent", 30), ("call_model", 43)]
    assert latest.result_run_id != handle.first_execution_run_id
    assert await workflow_task_failures(first_run) == 0
    assert await workflow_task_failures(latest) == 0

    # Both workflow runs replay on today's code, whatever the worker's settings now.
    replayer = Replayer(
        interceptors=[GateInterceptor(None)],
        workflows=replayed_workflows(),
        data_converter=pydantic_data_converter,
        namespace=second.namespace,
    )
    for run in (first_run, latest):
        replayed = await replayer.replay_workflow(await run.fetch_history())
        assert replayed.replay_failure is None


async def test_calls_side_by_side_in_a_continued_run_describe_their_agent_once(env, model_server):
    """A workflow run continued as new while it waited for two decisions: both calls,
    approved while no worker ran, start in its first workflow task side by side, and ask
    for the settings they run with once (the new deploy's)."""
    model_server.script(
        Reply(tool_calls=(Call("send", {"to": "ann"}, "s1"), Call("send", {"to": "bob"}, "s2"))),
        Reply(content="done"),
    )
    queue = f"test-{uuid.uuid4().hex[:8]}"
    async with serving(
        env.client,
        model_server,
        task_queue=queue,
        extra_agents=[timed(20, turns=1)],
        drain=NO_DRAIN,
    ) as first:
        handle = await start(first, agent="timed")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        while (await env.client.get_workflow_handle(handle.id).describe()).run_id == (
            handle.first_execution_run_id
        ):  # it continues as new while it waits (its one model call is its budget)
            await asyncio.sleep(0.1)
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    for call_id in ("s1", "s2"):  # no worker runs: both wait in the history
        await handle.signal(
            contract.SIGNAL_APPROVE, DecisionSignal(call_id=call_id, approver="ann")
        )
    async with serving(
        env.client,
        model_server,
        task_queue=queue,
        extra_agents=[timed(40, turns=1)],
        drain=NO_DRAIN,
    ):
        result = await handle.result()
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "done")
    first_run = env.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    assert await scheduled(first_run) == [("describe_agent", 30), ("call_model", 23)]
    latest = env.client.get_workflow_handle(handle.id)
    assert await scheduled(latest) == [
        ("describe_agent", 30),  # once, for both calls
        ("run_tool", 42),
        ("run_tool", 42),
        ("call_model", 43),
    ]


async def test_a_snapshot_cannot_set_how_the_worker_runs_its_calls(worker, model_server, tmp_path):
    """Anyone who may start a workflow can write a snapshot: one that carries a timeout of a
    millisecond or a retry policy of its own is refused, with the field named, and the run
    never starts a call."""
    model_server.script(Reply(content="hello"))
    done = await start(worker)
    await done.result()
    state = await done.query(contract.QUERY_GET_STATE)
    asked = len(model_server.requests)
    for where, field, value in [
        (state["agent"], "model_timeout_seconds", 0.001),
        (state["agent"]["tools"][0], "retry", {"maximum_attempts": 1000}),
        (state["agent"]["tools"][0], "heartbeat_timeout_seconds", 0.001),
    ]:
        where[field] = value
        message = await refused_start(
            worker, tmp_path, {"agent": "assistant", "input": "", "resume_from": state}
        )
        assert field in message and "an execution setting, not part of a run" in message
        del where[field]
    assert len(model_server.requests) == asked  # no model call was made for any of them


async def test_a_start_input_cannot_set_how_the_worker_runs_its_calls(worker, tmp_path):
    for given in (
        {"model_timeout_seconds": 0.001},
        {"settings": {"model": {"timeout_seconds": 0.001, "retry": {}}}},
        {"execution": {"tools": {"add": {"timeout_seconds": 0.001}}}},
    ):
        message = await refused_start(
            worker, tmp_path, {"agent": "assistant", "input": "hi", **given}
        )
        assert next(iter(given)) in message, message


async def test_describe_agent_asked_from_outside_takes_no_hostile_input(worker):
    """Anyone who may run an activity on the worker's queue can ask `describe_agent`
    (`agentctl tools` does, as a standalone activity): a settings-only question gets the
    settings alone, and an input it does not know is refused, never half-read."""
    only = await ask_worker(
        worker.client,
        worker.task_queue,
        contract.ACTIVITY_DESCRIBE_AGENT,
        {"agent": "assistant", "settings_only": True},
        DescribedAgent,
        "the worker",
    )
    assert only.spec is None and only.settings.model.timeout_seconds == 120
    for hostile, said in [
        ({"agent": "assistant", "settings_only": "maybe"}, "settings_only"),
        ({"agent": "assistant", "settings": {"model": {"timeout_seconds": 0.001}}}, "settings"),
        ({"agent": "nobody\x1b[2J", "settings_only": True}, "unknown agent"),
    ]:
        with pytest.raises(WorkerUnavailable) as refused:
            await ask_worker(
                worker.client,
                worker.task_queue,
                contract.ACTIVITY_DESCRIBE_AGENT,
                hostile,
                DescribedAgent,
                "the worker",
            )
        assert said in str(refused.value), refused.value
