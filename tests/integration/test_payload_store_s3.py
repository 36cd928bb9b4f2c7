"""The payload store for a fleet (`AGENT_PAYLOAD_STORE=s3://BUCKET`): the SDK's S3
driver under our chunking, end to end against a real S3 API served locally by
moto's server (real HTTP, the real aioboto3 client; nothing leaves the machine)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator

import aioboto3
import boto3
import pytest
from durable_agents.workflows.state import RunStatus, ToolResult
from moto.server import ThreadedMotoServer
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.aws.s3driver import S3StorageDriver
from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import ExternalStorage

from durable_agents.dataplane.payload_store import (
    _LazyS3Driver,
    external_storage,
    with_payload_store,
)
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.runs import free_port, start, state_of

THRESHOLD = 4096
TURNS = 30
OUTPUT = 20_000


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield f"http://127.0.0.1:{port}"
    server.stop()


@pytest.fixture
def s3(s3_endpoint, monkeypatch) -> boto3.client:
    for name, value in {
        "AWS_ENDPOINT_URL": s3_endpoint,
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)  # what aioboto3's session reads, as in production
    return boto3.client("s3", endpoint_url=s3_endpoint)


def bucket_bytes(s3, bucket: str) -> int:
    objects = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    return sum(o["Size"] for o in objects)


async def run_with(env, model_server, converter) -> None:
    """A run of TURNS tool turns, each returning OUTPUT characters, on a client whose
    data converter is `converter`; checks it completes with every output whole."""
    client = await Client.connect(
        env.client.service_client.config.target_host, data_converter=converter
    )
    model_server.script(
        *(Reply(tool_calls=(Call("blob", {"size": OUTPUT}),)) for _ in range(TURNS)),
        Reply(content="done"),
    )
    async with serving(client, model_server) as worker:
        handle = await start(worker, agent="marathon")
        assert (await handle.result()).status is RunStatus.COMPLETED
        state = await state_of(handle)
        history = await handle.fetch_history()
    outputs = [i.content for i in state.items if isinstance(i, ToolResult)]
    assert outputs == ["B" * OUTPUT] * TURNS
    assert max(e.ByteSize() for e in history.events) < 4 * THRESHOLD


@pytest.mark.soak  # 45 s on the 2-core machine: `make soak`; the other S3 tests stay in make test
async def test_s3_store_keeps_history_small_and_storage_linear(env, model_server, s3):
    s3.create_bucket(Bucket="chunked")
    s3.create_bucket(Bucket="whole")
    env_vars = {"AGENT_PAYLOAD_STORE": "s3://chunked", "AGENT_PAYLOAD_THRESHOLD": str(THRESHOLD)}
    await run_with(env, model_server, with_payload_store(pydantic_data_converter, env_vars))

    # The control: the SDK's S3 driver alone, whole payloads.
    whole = _LazyS3Driver(aioboto3.Session(), "whole", S3StorageDriver, new_aioboto3_client)
    storage = ExternalStorage(drivers=[whole], payload_size_threshold=THRESHOLD)
    control = dataclasses.replace(pydantic_data_converter, external_storage=storage)
    await run_with(env, model_server, control)

    chunked, plain = bucket_bytes(s3, "chunked"), bucket_bytes(s3, "whole")
    conversation = TURNS * OUTPUT
    # Whole payloads store the conversation again every turn (~TURNS/2 times over);
    # chunks store it about once, plus each turn's last partial chunk (up to 64 KiB)
    # and manifest, plus the tool outputs themselves.
    # (Both also hold each tool output and the RunState the test's query answered.)
    assert plain > TURNS / 3 * conversation, (plain, conversation)
    assert chunked < 5 * conversation < plain / 3, (chunked, conversation, plain)


async def test_a_reference_to_another_bucket_or_object_is_refused_naming_no_hash(s3):
    """Anyone who may signal can write a reference: the worker must not fetch from any
    bucket its role can read, nor put the hash of what it fetched into history."""
    s3.create_bucket(Bucket="agents")
    s3.create_bucket(Bucket="payroll")
    s3.put_object(Bucket="payroll", Key="salaries.csv", Body=b"alice,100000")
    s3.put_object(Bucket="agents", Key="v0/other", Body=b"not a payload")
    storage = external_storage({"AGENT_PAYLOAD_STORE": "s3://agents"})
    assert storage is not None
    [driver] = storage.drivers
    reads = {"bucket": "payroll", "key": "salaries.csv", "hash_algorithm": "sha256"}
    foreign = {**reads, "hash_value": "0" * 64}
    mismatched = {**foreign, "bucket": "agents", "key": "v0/other"}
    for claim, why in (
        (foreign, "a reference to bucket 'payroll' is refused: this store is s3://agents"),
        (mismatched, "cannot be resolved"),
    ):
        body = {"driverName": driver.name(), "claimData": claim}
        metadata = {
            "encoding": b"json/protobuf",
            "messageType": b"temporal.api.sdk.v1.ExternalStorageReference",
        }
        ref = Payload(metadata=metadata, data=json.dumps(body).encode())
        [answer] = await storage._retrieve_payload_sequence([ref])
        reason = answer.data.decode()
        assert answer.metadata["encoding"] == b"binary/undecodable", reason
        assert why in reason
        actual = hashlib.sha256(b"not a payload").hexdigest()
        assert actual not in reason and "sha256:" not in reason
