"""The local payload store: what ExternalStorage writes instead of history."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from durable_agents.dataplane.payload_store import (
    LocalDirectoryDriver,
    PayloadStoreError,
    external_storage,
)

STORE, RETRIEVE = StorageDriverStoreContext(), StorageDriverRetrieveContext()


def payload(data: bytes) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


def stored_bytes(directory) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


async def test_payload_round_trips_with_its_metadata(tmp_path):
    driver = LocalDirectoryDriver(tmp_path, chunk_size=1024)
    original = payload(b"x" * 5000 + b"end")
    [claim] = await driver.store(STORE, [original])
    assert list(claim.claim_data) == ["manifest"]
    [back] = await driver.retrieve(RETRIEVE, [claim])
    assert back == original


async def test_growing_payloads_share_their_chunks(tmp_path):
    """Each turn's request repeats the conversation; only new chunks are written."""
    driver = LocalDirectoryDriver(tmp_path, chunk_size=1024)
    conversation = b""
    for turn in range(50):
        conversation += bytes([65 + turn % 26]) * 2000
        await driver.store(STORE, [payload(conversation)])
    total_sent = sum(2000 * (t + 1) for t in range(50))  # what a plain store would keep
    # 2.55 MB sent; kept: the 100 KB conversation once, plus per step one partial
    # chunk and one small manifest
    assert stored_bytes(tmp_path) < total_sent / 8


async def test_missing_part_is_a_clear_error(tmp_path):
    driver = LocalDirectoryDriver(tmp_path)
    [claim] = await driver.store(STORE, [payload(b"abc")])
    other = LocalDirectoryDriver(tmp_path / "elsewhere")
    with pytest.raises(PayloadStoreError, match="must share the payload store"):
        await other.retrieve(RETRIEVE, [claim])


async def test_corrupt_part_is_refused(tmp_path):
    driver = LocalDirectoryDriver(tmp_path)
    [claim] = await driver.store(STORE, [payload(b"abc" * 100)])
    for path in tmp_path.rglob("*"):
        if path.is_file() and b"abc" in path.read_bytes():
            path.write_bytes(b"tampered")
    with pytest.raises(PayloadStoreError, match="corrupt"):
        await driver.retrieve(RETRIEVE, [claim])


async def test_malformed_claim_is_refused(tmp_path):
    driver = LocalDirectoryDriver(tmp_path)
    with pytest.raises(PayloadStoreError, match="malformed payload claim"):
        await driver.retrieve(RETRIEVE, [StorageDriverClaim(claim_data={"manifest": "../x"})])


def test_configuration_from_the_environment(tmp_path):
    storage = external_storage(
        {"AGENT_PAYLOAD_STORE": str(tmp_path), "AGENT_PAYLOAD_THRESHOLD": "1000"}
    )
    assert storage.payload_size_threshold == 1000
    assert isinstance(storage.drivers[0], LocalDirectoryDriver)
    assert external_storage({"AGENT_PAYLOAD_STORE": "off"}) is None
    with pytest.raises(PayloadStoreError, match="must be a positive number of bytes"):
        external_storage({"AGENT_PAYLOAD_THRESHOLD": "lots"})
    with pytest.raises(PayloadStoreError, match="positive number of bytes, not '-5'"):
        external_storage({"AGENT_PAYLOAD_THRESHOLD": "-5"})
    with pytest.raises(PayloadStoreError, match="needs a bucket name"):
        external_storage({"AGENT_PAYLOAD_STORE": "s3://"})


async def test_concurrent_stores_of_the_same_payload_all_succeed(tmp_path):
    """Workers store the same conversation at once (retries, parallel activities of
    one run): every writer of a part must succeed and leave one whole file."""
    driver = LocalDirectoryDriver(tmp_path, chunk_size=1024)
    same = payload(bytes(range(256)) * 40)
    claims = await asyncio.gather(*(driver.store(STORE, [same]) for _ in range(240)))
    assert len({c[0].claim_data["manifest"] for c in claims}) == 1
    [back] = await driver.retrieve(RETRIEVE, claims[0])
    assert back == same
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.endswith(".partial")]
    assert leftovers == []


def test_a_part_cut_short_by_a_crash_is_written_again(tmp_path):
    driver = LocalDirectoryDriver(tmp_path)
    blob = b"x" * 1000
    digest = driver._put(blob)
    part = driver._path(digest)
    part.write_bytes(blob[:10])  # what an unsynced write could leave after a crash
    assert driver._put(blob) == digest
    assert part.read_bytes() == blob
