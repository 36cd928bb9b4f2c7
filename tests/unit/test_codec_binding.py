"""Ciphertext bound to its workflow, and payloads a workflow cannot read answered, not
raised (`dataplane.codec`), without Temporal."""

from __future__ import annotations

import base64

import pytest
from durable_agents.workflows.contract import ENCODING_UNDECODABLE
from temporalio.api.common.v1 import Payload
from temporalio.converter import WorkflowSerializationContext

from durable_agents.dataplane.chunks import CHUNKED_ENCODING
from durable_agents.dataplane.codec import (
    CodecConfigError,
    CodecError,
    CodecKeyError,
    CodecKeys,
    EncryptionCodec,
    codec_data_converter,
)

KEYS = CodecKeys.parse("k1:" + base64.b64encode(b"k" * 32).decode())


def plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=text.encode())


def for_workflow(workflow_id: str, **options) -> EncryptionCodec:
    context = WorkflowSerializationContext(namespace="default", workflow_id=workflow_id)
    return EncryptionCodec(KEYS, **options).with_context(context)


async def test_a_payload_is_bound_to_the_workflow_it_was_encrypted_for():
    [sealed] = await for_workflow("run-a").encode([plain('{"call_id": "c1"}')])
    assert sealed.metadata["encryption-workflow-id"] == b"run-a"
    assert await for_workflow("run-a").decode([sealed]) == [plain('{"call_id": "c1"}')]
    [elsewhere] = await for_workflow("run-b").decode([sealed])
    assert elsewhere.metadata["encoding"] == ENCODING_UNDECODABLE
    assert elsewhere.data.decode() == (
        "payload was encrypted for workflow 'run-a', not 'run-b' (copied from another run's "
        "history?)"
    )


async def test_relabelling_the_workflow_id_breaks_the_ciphertext():
    [sealed] = await for_workflow("run-a").encode([plain("1")])
    sealed.metadata["encryption-workflow-id"] = b"run-b"
    [relabelled] = await for_workflow("run-b").decode([sealed])
    assert relabelled.metadata["encoding"] == ENCODING_UNDECODABLE
    assert "wrong key material for that id, or the payload was altered" in relabelled.data.decode()


async def test_the_codec_server_reads_bound_payloads_without_a_workflow():
    [sealed] = await for_workflow("run-a").encode([plain("1")])
    assert EncryptionCodec(KEYS).decode_sync([sealed]) == [plain("1")]
    sealed.metadata["encryption-workflow-id"] = b"run-b"
    with pytest.raises(CodecKeyError, match="altered"):
        EncryptionCodec(KEYS).decode_sync([sealed])


async def test_payloads_encrypted_outside_a_workflow_or_by_earlier_builds_still_decode():
    [unbound] = await EncryptionCodec(KEYS).encode([plain("1")])
    assert "encryption-workflow-id" not in unbound.metadata
    assert await for_workflow("run-a").decode([unbound]) == [plain("1")]


async def test_chunked_payloads_are_bound_too():
    codec = for_workflow("run-a", chunk_threshold=10)
    [sealed] = await codec.encode([plain('"' + "x" * 100 + '"')])
    assert sealed.metadata["encoding"] == CHUNKED_ENCODING
    [elsewhere] = await for_workflow("run-b").decode([sealed])
    assert elsewhere.metadata["encoding"] == ENCODING_UNDECODABLE
    assert "encrypted for workflow 'run-a', not 'run-b'" in elsewhere.data.decode()


@pytest.mark.parametrize(
    "garbage",
    [
        Payload(
            metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"k1"}, data=b"x" * 64
        ),
        Payload(metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"k9"}, data=b"x"),
        Payload(metadata={"encoding": b"binary/encrypted"}, data=b""),
        Payload(metadata={"encoding": b"binary/encrypted-chunked", "encryption-key-id": b"k1"}),
    ],
    ids=["bad-tag", "unknown-key", "no-key-id", "chunked-no-header"],
)
async def test_garbage_ciphertext_for_a_workflow_becomes_a_reason_not_an_exception(garbage):
    [answer] = await for_workflow("run-a").decode([garbage])
    assert answer.metadata["encoding"] == ENCODING_UNDECODABLE and answer.data
    with pytest.raises(CodecError):  # outside a workflow (the codec server): an error
        EncryptionCodec(KEYS).decode_sync([garbage])


async def test_typed_readers_get_the_reason_as_an_error():
    converter = codec_data_converter(KEYS)
    reason = Payload(
        metadata={"encoding": ENCODING_UNDECODABLE}, data=b"payload was encrypted for ..."
    )
    with pytest.raises(CodecKeyError, match="payload was encrypted for"):
        converter.payload_converter.from_payload(reason, dict)


async def test_plaintext_can_be_refused_for_workflows():
    codec = for_workflow("run-a", refuse_plaintext=True)
    [refused] = await codec.decode([plain('{"call_id": "c1"}')])
    assert refused.metadata["encoding"] == ENCODING_UNDECODABLE
    assert refused.metadata["undecodable-refused"] == b"1"
    assert "plaintext payload refused" in refused.data.decode()
    [sealed] = await codec.encode([plain("1")])
    assert await codec.decode([sealed]) == [plain("1")]
    with pytest.raises(CodecConfigError, match="needs codec keys"):
        EncryptionCodec(None, refuse_plaintext=True)
