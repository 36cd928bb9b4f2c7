"""Encrypted runs against senders without keys: ciphertext copied from another run, and
garbage ciphertext, sent with a raw Temporal client (no codec). Each is refused and
recorded; the run keeps working, with no failed workflow task."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from durable_agents.client.errors import RunFailed
from durable_agents.workflows import contract
from durable_agents.workflows.state import RunStatus
from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.common import RawValue

from durable_agents.testing import Call, Reply
from tests.integration.test_codec_e2e import KEYS, _worker, codec_worker  # noqa: F401
from tests.support.runs import wait_for_status, workflow_task_failures

GARBAGE = Payload(
    metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"k-2026"}, data=b"x" * 64
)


async def raw_client(env) -> Client:
    """A client with no codec: what someone without the keys has."""
    target = env.client.service_client.config.target_host
    return await Client.connect(target, namespace=env.client.namespace)


async def failed_tasks(client: Client, run_id: str) -> int:
    return await workflow_task_failures(client.get_workflow_handle(run_id))


ASK = Reply(tool_calls=(Call("disclose", {"topic": "plans"}, "d1"),))


async def waiting_for_approval(codec_worker, model_server, *, script: bool = True):  # noqa: F811
    if script:
        model_server.script(ASK, Reply(content="ok"))
    run = await codec_worker.agents.start("keeper", "tell me", run_id=f"enc-{uuid.uuid4().hex[:8]}")
    await wait_for_status(
        codec_worker.client.get_workflow_handle(run.id), RunStatus.AWAITING_APPROVAL
    )
    return run


async def test_garbage_ciphertext_signals_are_recorded_not_wedging_the_run(
    env,
    codec_worker,  # noqa: F811
    model_server,
):
    run = await waiting_for_approval(codec_worker, model_server)
    raw = await raw_client(env)
    handle = raw.get_workflow_handle(run.id)
    await handle.signal(contract.SIGNAL_APPROVE, RawValue(GARBAGE))
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, RawValue(GARBAGE))
    state = await run.state()
    assert (
        "cannot decrypt payload with codec key 'k-2026'"
        in state.refused_decisions[-1].refused_because
    )
    assert "cannot decrypt payload" in state.refused_signals[-1].refused_because
    await run.approve("d1", approver="ann")
    assert (await run.result()).status is RunStatus.COMPLETED
    assert await failed_tasks(raw, run.id) == 0


async def test_an_encrypted_approval_copied_into_another_run_is_refused(
    env,
    codec_worker,  # noqa: F811
    model_server,
):
    """Attack 5: alice's encrypted approval, copied byte for byte from one run's history
    into another run with the same call id by someone without keys."""
    model_server.script(ASK, ASK, Reply(content="ok"), Reply(content="ok"))
    first = await waiting_for_approval(codec_worker, model_server, script=False)
    second = await waiting_for_approval(codec_worker, model_server, script=False)
    await first.approve("d1", approver="alice")
    assert (await first.result()).status is RunStatus.COMPLETED
    raw = await raw_client(env)
    history = await raw.get_workflow_handle(first.id).fetch_history()
    [signalled] = [
        e.workflow_execution_signaled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    [copied] = signalled.input.payloads
    assert copied.metadata["encryption-workflow-id"] == first.id.encode()

    await raw.get_workflow_handle(second.id).signal(contract.SIGNAL_APPROVE, RawValue(copied))

    state = await second.state()
    assert (
        f"payload was encrypted for workflow {first.id!r}, not {second.id!r}"
        in state.refused_decisions[-1].refused_because
    )
    assert state.status is RunStatus.AWAITING_APPROVAL
    assert await failed_tasks(raw, second.id) == 0
    await second.reject("d1", approver="ann")
    assert (await second.result()).status is RunStatus.COMPLETED


async def test_a_worker_can_refuse_plaintext_from_senders_without_keys(env, model_server):
    async with _worker(env, model_server, KEYS, refuse_plaintext=True) as running:
        run = await waiting_for_approval(running, model_server)
        raw = await raw_client(env)
        plain = {"call_id": "d1", "approver": "ann"}
        await raw.get_workflow_handle(run.id).signal(contract.SIGNAL_APPROVE, plain)
        state = await run.state()
        assert "plaintext payload refused" in state.refused_decisions[-1].refused_because
        started = await raw.start_workflow(
            contract.WORKFLOW_TYPE,
            {"agent": "keeper", "input": "hi"},
            id=f"plain-{uuid.uuid4().hex[:8]}",
            task_queue=running.task_queue,
        )
        with pytest.raises(RunFailed, match="plaintext payload refused"):
            async with asyncio.timeout(30):
                await running.agents.result(started.id)
        await run.approve("d1", approver="ann")
        assert (await run.result()).status is RunStatus.COMPLETED
