"""Steering where it meets its limits (the review of issue 48), against the real dev
server, worker and scripted model: the `interrupt` update ends a single run though a
message was queued before it; updates reaching a run as it continues as new are taken,
never refused as "still starting"; an agent that takes no interrupts refuses them from
any sender (the `temporal` CLI included), its waiting calls untouched."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import uuid
from collections.abc import Sequence
from typing import NoReturn

import pytest
from durable_agents.client import InterruptRefused, MessageRefused
from durable_agents.workflows import contract
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunStatus
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.converter import PayloadCodec
from temporalio.plugin import SimplePlugin
from temporalio.worker import (
    ContinueAsNewInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support import steer_agents
from tests.support.cli_support import bound_to
from tests.support.runs import start, state_of, wait_for_status, workflow_task_failures
from tests.support.updates import admitted, recording
from tests.support.worker_shutdown import shutdown_began

HOLD = Call("hold", {"key": "k1"}, call_id="h1")
EMAIL = Call("send_email", {"to": "ann", "body": "hi"}, call_id="e1")


@pytest.fixture
async def steering(env, model_server):
    """A worker serving the steering agents (`tests.support.steer_agents`)."""
    steer_agents.reset()
    async with serving(env.client, model_server, extra_agents=steer_agents.STEER_AGENTS) as running:
        yield running
    steer_agents.RELEASED.add("*")
    steer_agents.RELEASED.update(steer_agents.STARTED)


def agents_of(worker) -> AgentClient:
    return AgentClient(worker.client, task_queue=worker.task_queue)


async def cli(worker, *args: str) -> tuple[int, str]:
    """The `temporal` CLI against the worker's server: its exit code and its output."""
    from durable_agents.worker import temporal_binary

    process = await asyncio.create_subprocess_exec(
        temporal_binary(), *args, "--address", worker.address, "--namespace", worker.namespace,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode()


async def test_the_interrupt_update_ends_a_single_run_though_a_message_was_queued_before(
    steering, model_server
):
    model_server.script(Reply(tool_calls=(HOLD,)), Reply("answered the queued message"))
    agents = agents_of(steering)
    handle = await start(steering, "slow", agent="steerable")  # a single run, no session
    await steer_agents.started("k1")
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "also this"})  # queued
    done = await agents.interrupt(handle.id, by="oncall", reason="stop now")
    assert done.interruption is not None
    assert [(c.call_id, c.was) for c in done.interruption.calls] == [("h1", "running")]
    result = await handle.result()
    assert result.status is RunStatus.INTERRUPTED
    assert len(model_server.requests) == 1  # the model was not asked again
    state = await state_of(handle)
    assert [i.content for i in state.items if i.type == "user_message"] == ["slow", "also this"]
    assert state.queued_messages == [] and steer_agents.STOPPED == ["h1"]


ARMED = threading.Event()
"""The test wants the next continue-as-new held open."""
SWITCHING = threading.Event()
"""Set by a workflow run as it continues as new (its last workflow task, held open)."""
STOPPING = threading.Event()
"""Set once the first worker's shutdown began (its pollers told to stop:
`tests.support.worker_shutdown`): the held task may complete."""
HOLDS: list[str] = []
"""When the held task's completion was encoded: AFTER_STOP, or why it was let go
without that cue (the test fails with it)."""
AFTER_STOP = "after the worker began to stop"
HOLD_BOUND = 8.0
"""How long the task is held at most: under the server's 10-s workflow task timeout."""


class _Outbound(WorkflowOutboundInterceptor):
    def continue_as_new(self, input: ContinueAsNewInput) -> NoReturn:
        # Marks the workflow task that continues as new; the worker's codec holds its
        # completion (`_HoldTheSwitch`), outside the activation the SDK times.
        if ARMED.is_set() and not workflow.unsafe.is_replaying():
            ARMED.clear()
            SWITCHING.set()
        super().continue_as_new(input)


class _Inbound(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_Outbound(outbound))


class _MarkTheSwitch(Interceptor):
    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _Inbound


class _HoldTheSwitch(PayloadCodec):
    """The first worker's codec: it encodes the completion of the task that continues
    as new (SWITCHING set in it) only once that worker's shutdown began, so the new
    workflow run's first task waits for the next worker. An await on the worker's event
    loop, not a wait in the workflow activation (which the SDK fails after 2 s).
    Payloads pass unchanged."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        if SWITCHING.is_set():
            began = STOPPING.is_set() or await asyncio.to_thread(STOPPING.wait, HOLD_BOUND)
            HOLDS.append(AFTER_STOP if began else f"the worker did not stop in {HOLD_BOUND} s")
        return list(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return list(payloads)


async def _first_task_of(client, run_id: str, workflow_run: str) -> list[str]:
    """What the first workflow task of one workflow run of run `run_id` answered: the
    events after its completion up to the next task (its commands and updates)."""
    handle = client.get_workflow_handle(run_id, run_id=workflow_run)
    kinds = [EventType.Name(e.event_type)[11:] async for e in handle.fetch_history_events()]
    after = kinds[kinds.index("WORKFLOW_TASK_COMPLETED") + 1 :]
    return (
        after[: after.index("WORKFLOW_TASK_SCHEDULED")]
        if "WORKFLOW_TASK_SCHEDULED" in after
        else after
    )


@pytest.mark.parametrize("update", ["interrupt", "decide", "send_message"])
async def test_an_update_that_reaches_a_run_as_it_continues_as_new_is_taken(
    env, model_server, update
):
    """`switching` continues as new after each turn. The worker stops while it does (the
    task that continues is held open until the worker's pollers are told to stop): the
    new workflow run's first task waits, and an update sent meanwhile comes with it,
    validated before the run's code runs. It is taken there as in any task, never
    refused as "still starting" (the history shows it accepted by that first task)."""
    steer_agents.reset()
    for event in (ARMED, SWITCHING, STOPPING):
        event.clear()
    HOLDS.clear()
    model_server.script(Reply("hello"), Reply(tool_calls=(EMAIL,)), Reply("done"))
    queue = f"steer-switch-{uuid.uuid4().hex[:8]}"
    mark = SimplePlugin("mark-the-switch", interceptors=[_MarkTheSwitch()])
    converter = dataclasses.replace(env.client.data_converter, payload_codec=_HoldTheSwitch())
    holding = Client(
        env.client.service_client, namespace=env.client.namespace, data_converter=converter
    )
    extra = steer_agents.STEER_AGENTS
    try:
        with shutdown_began(STOPPING):
            async with serving(
                holding, model_server, task_queue=queue, extra_agents=extra, plugins=[mark]
            ) as first:
                handle = await start(first, "go", agent="switching", session=True)
                await wait_for_status(handle, RunStatus.AWAITING_INPUT)
                async with asyncio.timeout(30):  # the first turn; it switched while it waited
                    while len((await state_of(handle)).workflow_runs) < 2:
                        await asyncio.sleep(0.05)
                held = (await state_of(handle)).workflow_runs[-1]
                ARMED.set()  # the next switch: after the turn this message starts
                await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "mail ann"})
                assert await asyncio.to_thread(SWITCHING.wait, 30)
        assert HOLDS and set(HOLDS) == {AFTER_STOP}, HOLDS  # it went out once the worker stopped
        # the worker has stopped: the new workflow run's first task waits for a worker
        client, sent = recording(env.client)
        agents = AgentClient(client, task_queue=queue)
        sending = {
            "interrupt": lambda: agents.interrupt(handle.id, by="oncall"),
            "decide": lambda: agents.decide(handle.id, "e1", "approve", approver="ann"),
            "send_message": lambda: agents.message(handle.id, "and bob", while_busy="queue"),
        }[update]
        answer = asyncio.create_task(sending())
        await admitted(env.client, handle.id, sent)  # the server holds it for that task
        assert not answer.done()  # no worker: it waits for one
        async with serving(
            env.client, model_server, task_queue=queue, extra_agents=extra
        ) as second:
            taken = await answer  # not refused
            state = await state_of(handle)
            new = state.workflow_runs[state.workflow_runs.index(held) + 1]
            first_task = await _first_task_of(second.client, handle.id, new)
            assert first_task[0] == "WORKFLOW_EXECUTION_UPDATE_ACCEPTED", first_task
            if update == "interrupt":
                assert [(c.call_id, c.was) for c in taken.interruption.calls] == [
                    ("e1", "awaiting_approval")
                ]
            elif update == "decide":
                assert (taken.call_id, taken.decision) == ("e1", "approve")
            else:
                assert "and bob" in [*state.queued_messages, *(
                    i.content for i in state.items if i.type == "user_message")]  # fmt: skip
            assert await workflow_task_failures(handle) == 0
            await agents.end_session(handle.id)
    finally:
        STOPPING.set()


async def test_an_agent_that_takes_no_interrupts_refuses_them_from_any_sender(
    steering, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply("sent"))
    agents = agents_of(steering)
    handle = await start(steering, "mail ann", agent="unstoppable", session=True)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    why = "agent unstoppable takes no interrupts (allow_interrupt=False)"
    hostile = json.dumps({"content": "never mind", "while_busy": "interrupt"})
    code, _ = await cli(
        steering, "workflow", "signal", "--workflow-id", handle.id,
        "--name", "send_message", "--input", hostile,
    )  # fmt: skip
    assert code == 0  # a signal gets no answer: the run records why it refused it
    code, said = await cli(
        steering, "workflow", "update", "execute", "--workflow-id", handle.id,
        "--name", "interrupt", "--input", '{"by": "mallory", "reason": "withdraw it"}',
    )  # fmt: skip
    assert code != 0 and why in said
    code, said = await cli(
        steering, "workflow", "update", "execute", "--workflow-id", handle.id,
        "--name", "send_message", "--input", hostile,
    )  # fmt: skip
    assert code != 0 and why in said
    with pytest.raises(InterruptRefused, match=r"allow_interrupt=False"):
        await agents.interrupt(handle.id, by="mallory")
    with pytest.raises(MessageRefused, match=r"allow_interrupt=False"):
        await agents.message(handle.id, "drop it", while_busy="interrupt")
    state = await state_of(handle)
    [refused] = [r for r in state.refused_signals if r.signal == "send_message"]
    assert why in refused.refused_because
    assert state.interrupt is None and state.interruptions == []
    assert state.queued_messages == [] and not any(isinstance(i, ToolResult) for i in state.items)
    assert [p.call_id for p in await agents.pending(handle.id)] == ["e1"]  # still waiting
    assert await agents.message(handle.id, "and then?", while_busy="queue")  # queued: fine
    await agents.approve(handle.id, "e1", approver="ann")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    state = await state_of(handle)
    assert [i.content for i in state.items if i.type == "user_message"] == ["mail ann", "and then?"]
    await agents.end_session(handle.id)


async def test_an_interrupt_withdraws_an_external_call_as_one_that_waited_for_an_answer(
    env, model_server
):
    from tests.support.answer_agents import ANSWER_AGENTS

    ask = Call("ask_refund", {"order_id": "A1"}, call_id="q1")
    model_server.script(Reply(tool_calls=(ask,)))
    async with serving(env.client, model_server, extra_agents=ANSWER_AGENTS) as asking:
        handle = await start(asking, "refund A1", agent="questioner")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        done = await agents_of(asking).interrupt(handle.id, by="oncall")
        assert done.interruption is not None
        [call] = done.interruption.calls
        assert (call.call_id, call.was) == ("q1", "awaiting_answer")
        assert call.note == (
            "Interrupted by oncall: the call was waiting for an answer and is withdrawn; "
            "it got none."
        )
        assert (await handle.result()).status is RunStatus.INTERRUPTED
        shown = await bound_to(asking)("state", handle.id)
        assert "q1 withdrawn (waited for an answer)" in shown.stdout
        events = [e async for e in agents_of(asking).events(handle.id, follow=False)]
        [event] = [e for e in events if e["type"] == "interrupted"]
        assert event["calls"][0]["was"] == "awaiting_answer"
