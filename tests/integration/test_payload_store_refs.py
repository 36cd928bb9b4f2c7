"""Payload-store references in inbound signals, written by someone who may signal a run
(a raw Temporal client, as the `temporal` CLI with --input-meta would send them): a
reference that cannot be resolved is recorded as refused, never a failed workflow task,
and names no hash of anything fetched. A real stored payload still arrives."""

from __future__ import annotations

import json

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import DecisionSignal
from durable_agents.workflows.state import RunStatus
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.common import RawValue

from durable_agents.dataplane.codec import data_converter
from durable_agents.dataplane.payload_store import external_storage
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.runs import start, state_of, wait_for_status, workflow_task_failures


def reference(driver: str, claim: dict) -> RawValue:
    body = {"driverName": driver, "claimData": claim}
    metadata = {
        "encoding": b"json/protobuf",
        "messageType": b"temporal.api.sdk.v1.ExternalStorageReference",
    }
    return RawValue(Payload(metadata=metadata, data=json.dumps(body).encode()))


@pytest.fixture
async def store_worker(env, model_server):
    """A worker (and client) with the session's payload store, as `worker.py` has."""
    target = env.client.service_client.config.target_host
    converter = data_converter(None, external_storage())
    client = await Client.connect(target, namespace=env.client.namespace, data_converter=converter)
    async with serving(client, model_server) as running:
        yield running


async def failed_tasks(client: Client, run_id: str) -> int:
    return await workflow_task_failures(client.get_workflow_handle(run_id))


@pytest.mark.parametrize(
    "signal, ref, why",
    [
        (
            contract.SIGNAL_REJECT,
            reference("local.directory", {"manifest": "0" * 64}),
            "stored payload part sha256:" + "0" * 64 + " is not in",
        ),
        (
            contract.SIGNAL_APPROVE,
            reference("aws.s3driver", {"bucket": "payroll", "key": "v0/secrets"}),
            "cannot be resolved",
        ),
        (
            contract.SIGNAL_SEND_MESSAGE,
            reference("local.directory", {"manifest": "../../etc/passwd"}),
            "malformed payload claim",
        ),
        (
            contract.SIGNAL_APPROVE,
            RawValue(
                Payload(
                    metadata={
                        "encoding": b"json/protobuf",
                        "messageType": b"temporal.api.sdk.v1.ExternalStorageReference",
                    },
                    data=b"{not json",
                )
            ),
            "cannot be resolved",
        ),
    ],
    ids=["missing-manifest", "unknown-driver", "path-escape", "malformed"],
)
async def test_a_reference_that_cannot_be_resolved_is_refused_and_the_run_goes_on(
    env, store_worker, model_server, signal, ref, why
):
    model_server.script(Reply(tool_calls=(Call("send_email", {"to": "a", "body": "b"}, "e1"),)))
    model_server.script(Reply(content="sent"))
    handle = await start(store_worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    raw = await Client.connect(
        env.client.service_client.config.target_host, namespace=env.client.namespace
    )
    await raw.get_workflow_handle(handle.id).signal(signal, ref)
    state = await state_of(handle)
    refused = [*state.refused_decisions, *state.refused_signals]
    [entry] = refused
    assert "payload-store reference refused" in entry.refused_because
    assert why in entry.refused_because
    assert await failed_tasks(raw, handle.id) == 0
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    assert (await handle.result()).status is RunStatus.COMPLETED


async def test_a_large_message_through_the_store_still_arrives(store_worker, model_server):
    model_server.script(Reply(content="first"), Reply(content="second"))
    handle = await start(store_worker, session=True)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    large = "x" * 20_000  # over the store's 16 KiB threshold: sent as a reference
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": large})
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    state = await state_of(handle)
    assert state.items[-2].content == large and state.refused_signals == []
    await handle.signal(contract.SIGNAL_END_SESSION, {})
    assert (await handle.result()).status is RunStatus.COMPLETED
