"""Large payloads under encryption: deterministic chunks the payload store can dedup,
and the production converter (`data_converter_from_env`) that puts codec and store
together."""

from __future__ import annotations

import base64
import itertools
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from durable_agents.workflows.payloads import ModelRequest
from durable_agents.workflows.run_items import AssistantMessage, ToolCall, ToolResult, UserMessage
from temporalio.api.common.v1 import Payload
from temporalio.converter import WorkflowSerializationContext

from durable_agents.dataplane.chunks import CHUNK_BYTES
from durable_agents.dataplane.codec import (
    CodecDataError,
    CodecKeyError,
    CodecKeys,
    EncryptionCodec,
    data_converter_from_env,
)
from durable_agents.dataplane.payload_store import (
    CHUNK_SIZE,
    LocalDirectoryDriver,
    PayloadStoreError,
)

KEY_ENTRY = "k1:" + base64.b64encode(b"c" * 32).decode()
KEYS = CodecKeys.parse(KEY_ENTRY)
SEALED_CHUNK = CHUNK_BYTES + 16
TURN_BYTES = 20_000


def big(text: str, size: int) -> Payload:
    """`size` bytes of `text` and a counter: no two chunks alike."""
    data = "".join(f"{text}{i} " for i in range(size // len(text) + 1))[:size].encode()
    return Payload(metadata={"encoding": b"json/plain"}, data=data)


def chunking(keys: CodecKeys = KEYS) -> EncryptionCodec:
    return EncryptionCodec(keys, chunk_threshold=1000)


def test_large_payload_round_trips_in_chunks_small_ones_as_before():
    codec = chunking()
    original = [big("secret conversation ", 300_000), big("short", 100)]
    sealed = codec.encode_sync(original)
    assert sealed[0].metadata["encoding"] == b"binary/encrypted-chunked"
    assert sealed[1].metadata["encoding"] == b"binary/encrypted"  # Temporal samples' format
    assert all(s.metadata["encryption-key-id"] == b"k1" for s in sealed)
    assert b"secret" not in sealed[0].SerializeToString()
    assert codec.decode_sync(sealed) == original
    # Any process with the key reads it, chunking on or off (worker, codec server).
    assert EncryptionCodec(KEYS).decode_sync(sealed) == original


def test_shared_prefix_encrypts_to_the_same_ciphertext_chunk_for_chunk():
    codec = chunking()
    turn_8 = big("turn after turn ", 3 * CHUNK_BYTES + 500)
    turn_9 = Payload(metadata=turn_8.metadata, data=turn_8.data + b"and one more turn")
    [first, second] = codec.encode_sync([turn_8, turn_9])
    whole = 3 * SEALED_CHUNK
    assert first.data[:whole] == second.data[:whole]  # what the store keeps once
    assert first.data[whole:] != second.data[whole:]
    # Each sealed chunk is exactly one part of the payload store.
    assert SEALED_CHUNK == CHUNK_SIZE
    # The header (metadata, size, digest) is sealed with a fresh nonce each time.
    assert first.metadata["encryption-header"] != second.metadata["encryption-header"]
    other_key = chunking(CodecKeys.parse("k1:" + base64.b64encode(b"d" * 32).decode()))
    assert other_key.encode_sync([turn_8])[0].data[:whole] != first.data[:whole]


def test_each_workflow_seals_its_chunks_with_its_own_key():
    """Chunks repeat within one workflow (the store dedups them), never across
    workflows: text an attacker puts into their own run cannot be matched against
    another run's chunks. A reader needs no context: the header names the workflow."""
    payload = big("the same text in two runs ", 2 * CHUNK_BYTES)
    whole = 2 * SEALED_CHUNK

    def sealed_in(workflow_id: str) -> Payload:
        context = WorkflowSerializationContext(namespace="default", workflow_id=workflow_id)
        return chunking().with_context(context).encode_sync([payload])[0]

    mine, again, theirs = sealed_in("run-a"), sealed_in("run-a"), sealed_in("run-b")
    assert mine.data[:whole] == again.data[:whole]
    assert mine.data[:whole] != theirs.data[:whole]
    assert chunking().decode_sync([mine, theirs]) == [payload, payload]


def _sealed(text: str = "order matters ") -> Payload:
    return chunking().encode_sync([big(text, 3 * CHUNK_BYTES + 10)])[0]


def _with_data(payload: Payload, data: bytes) -> Payload:
    changed = Payload()
    changed.CopyFrom(payload)
    changed.data = data
    return changed


def test_reordered_dropped_or_foreign_chunks_are_refused():
    sealed = _sealed()
    data = sealed.data
    chunks = [data[i : i + SEALED_CHUNK] for i in range(0, len(data), SEALED_CHUNK)]
    swapped = _with_data(sealed, chunks[1] + chunks[0] + b"".join(chunks[2:]))
    dropped = _with_data(sealed, b"".join(chunks[:-1]))
    other = _sealed("another payload ")  # valid chunks, under the same key
    foreign = _with_data(sealed, other.data[:SEALED_CHUNK] + b"".join(chunks[1:]))
    for altered in (swapped, dropped, foreign):
        with pytest.raises(CodecDataError, match="chunks do not add up to its header") as err:
            chunking().decode_sync([altered])
        assert err.value.key_id == "k1"


def test_altered_chunk_or_header_and_wrong_key_are_refused():
    sealed = _sealed()
    flipped = _with_data(sealed, bytes([sealed.data[0] ^ 1]) + sealed.data[1:])
    with pytest.raises(CodecKeyError, match="wrong key material for that id, or the payload"):
        chunking().decode_sync([flipped])
    header = Payload()
    header.CopyFrom(sealed)
    header.metadata["encryption-header"] = sealed.metadata["encryption-header"][:-1] + b"x"
    with pytest.raises(CodecKeyError, match="altered"):
        chunking().decode_sync([header])
    impostor = chunking(CodecKeys.parse("k1:" + base64.b64encode(b"e" * 32).decode()))
    with pytest.raises(CodecKeyError, match="codec key 'k1'"):
        impostor.decode_sync([sealed])
    del header.metadata["encryption-header"]
    with pytest.raises(CodecDataError, match="has no encryption header"):
        chunking().decode_sync([header])


def test_production_converter_has_codec_and_store_and_chunks_what_the_store_takes(tmp_path):
    env = {"AGENT_CODEC_KEYS": KEY_ENTRY, "AGENT_PAYLOAD_STORE": str(tmp_path)}
    converter = data_converter_from_env({**env, "AGENT_PAYLOAD_THRESHOLD": "5000"})
    assert converter.external_storage is not None
    assert isinstance(converter.external_storage.drivers[0], LocalDirectoryDriver)
    assert converter.payload_codec.chunk_threshold == 5000
    off = data_converter_from_env({**env, "AGENT_PAYLOAD_STORE": "off"})
    assert off.external_storage is None and off.payload_codec.chunk_threshold is None
    with pytest.raises(PayloadStoreError, match="must be a positive number of bytes"):
        data_converter_from_env({**env, "AGENT_PAYLOAD_THRESHOLD": "lots"})


def _request(turns: int, rng: random.Random, items: list) -> ModelRequest:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    call = ToolCall(call_id=f"c{turns}", tool="report", arguments="{}")
    items.append(AssistantMessage(turn=turns, tool_calls=[call], at=at))
    text = "".join(rng.choice("abcdefghij ") for _ in range(TURN_BYTES))
    items.append(ToolResult(call_id=f"c{turns}", content=text))
    return ModelRequest(model="m", instructions="i", items=items, tools=[], turn=turns)


async def _stored_per_turn(directory: Path, env: dict[str, str], turns: int) -> list[int]:
    """Bytes the store holds after each turn's model request (the whole conversation)."""
    converter = data_converter_from_env({**env, "AGENT_PAYLOAD_STORE": str(directory)})
    run = WorkflowSerializationContext(namespace="default", workflow_id="run-1")
    in_workflow = converter.with_context(run)  # as the worker encodes a run's requests
    rng, items, totals = random.Random(7), [UserMessage(content="go")], []
    for turn in range(1, turns + 1):
        [payload] = await in_workflow.encode([_request(turn, rng, items)])
        totals.append(sum(p.stat().st_size for p in directory.rglob("*") if p.is_file()))
    assert payload.ByteSize() < 1024  # history would keep a reference to the store
    [back] = await converter.decode([payload], [ModelRequest])
    assert len(back.items) == 2 * turns + 1
    return totals


async def test_storage_grows_linearly_under_encryption_as_without(tmp_path):
    """60 turns of 20 KB, each model request carrying the whole conversation: each
    turn adds about one turn's bytes to the store (plus the part still filling up
    and a manifest), encrypted or not. With a random nonce over the whole payload
    each turn added the whole conversation again (36.7 MB in all instead of 3 MB)."""
    turns = 60
    plain = await _stored_per_turn(tmp_path / "plain", {}, turns)
    encrypted = await _stored_per_turn(tmp_path / "enc", {"AGENT_CODEC_KEYS": KEY_ENTRY}, turns)
    conversation = turns * TURN_BYTES
    assert plain[-1] < 3 * conversation
    assert encrypted[-1] < 1.05 * plain[-1]
    added = [after - before for before, after in itertools.pairwise(encrypted)]
    assert max(added[-20:]) < TURN_BYTES + CHUNK_SIZE + 4096  # not the conversation again
    assert sum(added[-20:]) / 20 < 3 * TURN_BYTES
