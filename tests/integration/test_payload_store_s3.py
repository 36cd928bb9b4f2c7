"""The payload store for a fleet (`AGENT_PAYLOAD_STORE=s3://BUCKET`): the SDK's S3
driver under our chunking, end to end against a real S3 API served locally by
moto's server (real HTTP, the real aioboto3 client; nothing leaves the machine)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator

import aioboto3
import boto3
import pytest
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunStatus
from moto.server import ThreadedMotoServer
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.aws.s3driver import S3StorageDriver
from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import ExternalStorage

from durable_agents import AgentClient
from durable_agents.dataplane.codec import data_converter
from durable_agents.dataplane.payload_store import (
    LazyS3Driver,
    external_storage,
    with_payload_store,
)
from durable_agents.dataplane.s3_gc import namespace_prefix
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.cli_support import agentctl
from tests.support.ops_support import fresh_namespace
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
    whole = LazyS3Driver(aioboto3.Session(), "whole", S3StorageDriver, new_aioboto3_client)
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


async def test_gc_and_erase_of_an_s3_store(env, model_server, s3, monkeypatch):
    """`store gc` and `erase` on an S3 store: what no run refers to goes once older than
    the grace, what runs need and other namespaces' objects stay; erasing a run removes
    its objects only."""
    s3.create_bucket(Bucket="gc-store")
    bare = await fresh_namespace(env)
    await AgentClient(bare).setup_search_attributes()
    store = {"AGENT_PAYLOAD_STORE": "s3://gc-store", "AGENT_PAYLOAD_THRESHOLD": str(THRESHOLD)}
    client = await Client.connect(
        env.client.service_client.config.target_host,
        namespace=bare.namespace,
        data_converter=data_converter(None, external_storage(store)),
    )
    prefix = namespace_prefix(bare.namespace)
    ghost = f"{prefix}wt/AgentWorkflow/wi/ghost/ri/r1/d/sha256/{'a' * 64}"
    elsewhere = f"v0/ns/another/wt/AgentWorkflow/wi/x/ri/r1/d/sha256/{'b' * 64}"
    for key in (ghost, elsewhere):
        s3.put_object(Bucket="gc-store", Key=key, Body=b"orphan")
    model_server.script(
        Reply(tool_calls=(Call("blob", {"size": OUTPUT}, "b1"),)),
        Reply("one"),
        Reply(tool_calls=(Call("blob", {"size": OUTPUT + 1}, "b2"),)),
        Reply("two"),
    )
    async with serving(client, model_server) as worker:
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        forgotten = await agents.start("assistant", "one")
        await forgotten.result()
        kept = await agents.start("assistant", "two")
        await kept.result()

        def keys() -> set[str]:
            return {o["Key"] for o in s3.list_objects_v2(Bucket="gc-store").get("Contents", [])}

        def of(run_id: str) -> set[str]:
            return {k for k in keys() if f"/wi/{run_id}/" in k}

        assert of(forgotten.id) and of(kept.id)
        monkeypatch.setenv("AGENT_PAYLOAD_STORE", "s3://gc-store")
        own = ("--address", worker.address, "--namespace", worker.namespace)
        gc = ("store", "gc", "--older-than", "0s", "--force", "--json")
        preview = await agentctl(*gc, "--dry-run", connection=own)
        assert preview.code == 0, preview.stderr
        assert preview.json()["removed_blobs"] == 1 and ghost in keys()
        young = await agentctl("store", "gc", "--json", connection=own)  # a day's grace
        assert young.json()["removed_blobs"] == 0 and young.json()["young_blobs"] == 1
        before = keys()
        done = await agentctl(*gc, connection=own)
        assert done.code == 0, done.stderr
        assert done.json()["removed_blobs"] == 1 and keys() == before - {ghost}
        assert elsewhere in keys()  # another namespace's: not this collection's to judge
        assert (await agents.state(kept.id)).final_output == "two"

        theirs, others = of(forgotten.id), of(kept.id)
        erased = await agentctl("erase", forgotten.id, "--yes", "--json", connection=own)
        assert erased.code == 0, erased.stderr
        assert erased.json()["removed_blobs"] == len(theirs)
        assert of(forgotten.id) == set() and of(kept.id) == others


ROUND_TRIPS = """
import asyncio
from temporalio.api.common.v1 import Payload
from durable_agents.dataplane.payload_store import external_storage

storage = external_storage({"AGENT_PAYLOAD_STORE": "s3://loops", "AGENT_PAYLOAD_THRESHOLD": "1024"})
big = Payload(metadata={"encoding": b"binary/plain"}, data=b"x" * 5000)

async def round_trip() -> None:
    stored = await storage._store_payload(big)
    assert stored.ByteSize() < 1000, stored
    assert await storage._retrieve_payload(stored) == big

asyncio.run(round_trip())
asyncio.run(round_trip())  # a second loop in the same process: a client of its own
print("round trips: 2")
"""


def test_a_program_using_the_s3_store_exits_with_its_client_closed(s3):
    """A worker, `agentctl` or a user's program that read or wrote the S3 store ends
    its event loop with the store's client closed (no "Unclosed client session" at
    exit), and a later event loop in the same process opens a client of its own."""
    s3.create_bucket(Bucket="loops")
    done = subprocess.run(
        [sys.executable, "-c", ROUND_TRIPS], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "round trips: 2"
    assert "Unclosed" not in done.stderr, done.stderr
    assert len(s3.list_objects_v2(Bucket="loops").get("Contents", [])) >= 1
