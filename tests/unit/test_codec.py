"""The payload codec on its own: keys, round trips, rotation, and its errors."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from durable_agents.workflows.payloads import AgentInput
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.exceptions import ApplicationError

from durable_agents.dataplane import codec
from durable_agents.dataplane.codec import (
    CodecConfigError,
    CodecDataError,
    CodecKeyError,
    CodecKeys,
    EncryptionCodec,
    codec_data_converter,
    keys_from_env,
)
from durable_agents.dataplane.failures import (
    CompactFailureConverter,
    CompactFailureConverterWithEncodedAttributes,
)

RAW_A = b"a" * 32
RAW_B = b"b" * 32
B64_A = base64.b64encode(RAW_A).decode()
B64_B = base64.b64encode(RAW_B).decode()


def keys(text: str, primary: str | None = None) -> CodecKeys:
    return CodecKeys.parse(text, primary=primary)


def plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=text.encode())


async def test_round_trip_restores_data_and_metadata():
    codec_ = EncryptionCodec(keys(f"k1:{B64_A}"))
    original = [plain('"secret prompt"'), Payload(metadata={"encoding": b"binary/null"})]
    encoded = await codec_.encode(original)
    assert [p.metadata["encoding"] for p in encoded] == [b"binary/encrypted"] * 2
    assert [p.metadata["encryption-key-id"] for p in encoded] == [b"k1", b"k1"]
    assert b"secret prompt" not in encoded[0].SerializeToString()
    assert await codec_.decode(encoded) == original


async def test_same_plaintext_encrypts_differently_each_time():
    codec_ = EncryptionCodec(keys(f"k1:{B64_A}"))
    first, second = await codec_.encode([plain("x"), plain("x")])
    assert first.data != second.data


async def test_old_payloads_decode_after_a_new_primary_key():
    old = EncryptionCodec(keys(f"k1:{B64_A}"))
    encoded_old = await old.encode([plain("from last year")])
    rotated = EncryptionCodec(keys(f"k1:{B64_A},k2:{B64_B}", primary="k2"))
    encoded_new = await rotated.encode([plain("from today")])
    assert encoded_new[0].metadata["encryption-key-id"] == b"k2"
    assert await rotated.decode(encoded_old + encoded_new) == [
        plain("from last year"),
        plain("from today"),
    ]
    with pytest.raises(CodecKeyError, match=r"key 'k2', which is not configured"):
        await old.decode(encoded_new)  # a process not yet given the new key


async def test_unencrypted_payloads_pass_through_decode():
    # Histories written before encryption was turned on stay readable.
    codec_ = EncryptionCodec(keys(f"k1:{B64_A}"))
    assert await codec_.decode([plain("old")]) == [plain("old")]
    assert await EncryptionCodec(None).decode([plain("old")]) == [plain("old")]


async def test_without_keys_nothing_is_encrypted_and_encrypted_input_is_refused():
    off = EncryptionCodec(None)
    assert await off.encode([plain("x")]) == [plain("x")]
    encrypted = await EncryptionCodec(keys(f"k1:{B64_A}")).encode([plain("x")])
    with pytest.raises(CodecKeyError) as raised:
        await off.decode(encrypted)
    assert raised.value.key_id == "k1"
    assert "no codec keys are configured here: set AGENT_CODEC_KEYS" in raised.value.message


async def test_wrong_key_material_or_tampering_is_refused_by_key_id():
    encrypted = await EncryptionCodec(keys(f"k1:{B64_A}")).encode([plain("x")])
    impostor = EncryptionCodec(keys(f"k1:{B64_B}"))
    with pytest.raises(CodecKeyError, match=r"cannot decrypt payload with codec key 'k1'") as err:
        await impostor.decode(encrypted)
    assert B64_A not in str(err.value) and B64_B not in str(err.value)
    tampered = Payload()
    tampered.CopyFrom(encrypted[0])
    tampered.data = tampered.data[:-1] + bytes([tampered.data[-1] ^ 1])
    with pytest.raises(CodecKeyError, match="altered"):
        await EncryptionCodec(keys(f"k1:{B64_A}")).decode([tampered])
    relabelled = Payload()
    relabelled.CopyFrom(encrypted[0])
    relabelled.metadata["encryption-key-id"] = b"k2"
    two = EncryptionCodec(keys(f"k1:{B64_A},k2:{B64_B}", primary="k1"))
    with pytest.raises(CodecKeyError, match="'k2'"):
        await two.decode([relabelled])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "0 bytes, shorter than a nonce and a tag"),
        (b"n" * 20, "20 bytes, shorter than a nonce and a tag"),
        (b"n" * 12 + AESGCM(RAW_A).encrypt(b"n" * 12, b"\xff\xff\xff", None), "Error parsing"),
    ],
    ids=["empty", "truncated", "not-a-payload-inside"],
)
async def test_malformed_encrypted_payload_is_a_codec_error(data, message):
    bad = Payload(metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"k1"}, data=data)
    with pytest.raises(CodecDataError, match=message) as raised:
        await EncryptionCodec(keys(f"k1:{B64_A}")).decode([bad])
    assert raised.value.key_id == "k1"
    assert raised.value.message.startswith("malformed encrypted payload (codec key 'k1'): ")


def test_format_is_that_of_temporals_encryption_samples():
    # nonce (12) + AES-GCM(serialized Payload) with no associated data: what the
    # Go, TypeScript and Python samples write, so other services can share it.
    [sealed] = EncryptionCodec(keys(f"k1:{B64_A}")).encode_sync([plain("x")])
    opened = AESGCM(RAW_A).decrypt(sealed.data[:12], sealed.data[12:], None)
    assert Payload.FromString(opened) == plain("x")
    nonce = b"n" * 12
    theirs = Payload(
        metadata={"encoding": b"binary/encrypted", "encryption-key-id": b"k1"},
        data=nonce + AESGCM(RAW_A).encrypt(nonce, plain("y").SerializeToString(), None),
    )
    assert EncryptionCodec(keys(f"k1:{B64_A}")).decode_sync([theirs]) == [plain("y")]


async def test_converter_encrypts_values_and_failure_messages():
    converter = codec_data_converter(keys(f"k1:{B64_A}"))
    assert converter.failure_converter_class is CompactFailureConverterWithEncodedAttributes
    [payload] = await converter.encode([AgentInput(agent="a", input="my secret")])
    assert b"my secret" not in payload.SerializeToString()
    [back] = await converter.decode([payload], [AgentInput])
    assert back.input == "my secret"
    failure = Failure()
    await converter.encode_failure(ApplicationError("card 4111 declined", type="Declined"), failure)
    assert b"4111" not in failure.SerializeToString()
    assert failure.message == "Encoded failure"
    decoded = await converter.decode_failure(failure)
    assert isinstance(decoded, ApplicationError) and decoded.message == "card 4111 declined"


def test_converter_without_keys_keeps_plain_failures():
    converter = codec_data_converter(None)
    assert converter.failure_converter_class is CompactFailureConverter
    assert isinstance(converter.payload_codec, EncryptionCodec)


# --- configuration -------------------------------------------------------------------


def test_keys_from_env_inline_and_primary():
    found = keys_from_env(
        {"AGENT_CODEC_KEYS": f"k1:{B64_A}, k2:{B64_B}", "AGENT_CODEC_PRIMARY": "k2"}
    )
    assert found is not None
    assert (found.primary, sorted(found.keys)) == ("k2", ["k1", "k2"])
    assert found.keys["k1"] == RAW_A


def test_keys_from_env_file(tmp_path):
    file = tmp_path / "keys"
    file.write_text(f"# rotated 2026-01\nk1:{B64_A}\nk2:{B64_B}  # current\n")
    found = keys_from_env({"AGENT_CODEC_KEYS_FILE": str(file), "AGENT_CODEC_PRIMARY": "k2"})
    assert found is not None and found.primary == "k2" and len(found.keys) == 2


def test_no_keys_means_encryption_off():
    assert keys_from_env({}) is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AGENT_CODEC_KEYS": f"k1:{B64_A},k2:{B64_B}"}, "set AGENT_CODEC_PRIMARY"),
        ({"AGENT_CODEC_KEYS": f"k1:{B64_A}", "AGENT_CODEC_PRIMARY": "k9"}, "'k9' is not among"),
        ({"AGENT_CODEC_KEYS": "k1:not-base64!"}, "'k1' is not valid base64"),
        ({"AGENT_CODEC_KEYS": "k1:" + base64.b64encode(b"short").decode()}, "5 bytes"),
        ({"AGENT_CODEC_KEYS": f"k1:{B64_A},k1:{B64_B}"}, "'k1' is given twice"),
        ({"AGENT_CODEC_KEYS": B64_A}, "KEY_ID:BASE64_KEY"),
        ({"AGENT_CODEC_KEYS": f"bad id:{B64_A}"}, "bad codec key id"),
        ({"AGENT_CODEC_KEYS": " , "}, "holds no keys"),
        ({"AGENT_CODEC_PRIMARY": "k1"}, "no keys"),
        ({"AGENT_CODEC_KEYS": f"k1:{B64_A}", "AGENT_CODEC_KEYS_FILE": "/x"}, "not both"),
        ({"AGENT_CODEC_KEYS_FILE": "/nonexistent/keys"}, "cannot read /nonexistent/keys"),
    ],
)
def test_bad_configuration_is_refused_without_echoing_keys(env, message):
    with pytest.raises(CodecConfigError, match=message) as raised:
        keys_from_env(env)
    assert B64_A not in raised.value.message and B64_B not in raised.value.message


def test_key_material_never_shows_in_repr_or_description():
    found = keys(f"k1:{B64_A},k2:{B64_B}", primary="k2")
    for text in (repr(found), str(found), found.describe()):
        assert B64_A not in text and B64_B not in text and "aaaa" not in text
    assert found.describe() == "AES-256-GCM, encrypting with key 'k2'; also decrypts with k1"


def test_new_key_command_prints_a_usable_entry(capsys):
    assert codec.main(["new-key", "k-2026"]) == 0
    entry = capsys.readouterr().out.strip()
    assert keys(entry).primary == "k-2026"
    assert codec.main(["new-key", "bad id"]) == 1
    assert codec.main([]) == 2


async def test_payload_converters_share_one_process_state_and_still_read_everything() -> None:
    """The SDK makes a payload converter for every serialization context (the codec's
    data converter builds one each time it takes a context): each takes the converters
    of the process's first one instead of being built in full, in a map of its own."""
    from temporalio.converter import WorkflowSerializationContext

    from durable_agents.dataplane.unreadable import (
        AgentPayloadConverter,
        UnreadablePayloadConverter,
        UnreadablePayloadError,
        unreadable,
    )

    converter = codec_data_converter(keys(f"k1:{B64_A}"))
    contextual = converter.with_context(
        WorkflowSerializationContext(namespace="default", workflow_id="w-1")
    )
    assert contextual is not converter  # the codec takes the context: a new data converter
    first, second = AgentPayloadConverter(), AgentPayloadConverter()
    assert first.converters is not second.converters
    assert all(
        a is b for a, b in zip(first.converters.values(), second.converters.values(), strict=True)
    )
    first.converters.pop(UnreadablePayloadConverter().encoding.encode())  # one instance's edit
    assert any(isinstance(c, UnreadablePayloadConverter) for c in second.converters.values())
    value = AgentInput(agent="support", input="hi")
    payloads = await contextual.encode([value])
    assert b"hi" not in payloads[0].SerializeToString()  # sealed by the bound codec
    assert await contextual.decode(payloads, [AgentInput]) == [value]
    with pytest.raises(UnreadablePayloadError):
        AgentPayloadConverter().from_payloads([unreadable("gone", source="store")])


def test_inside_a_workflow_sandbox_a_payload_converter_is_built_in_full() -> None:
    """A sandboxed run has its own copies of its types: a converter shared with the
    process would keep them (and the run's modules) alive after the run."""
    from temporalio import workflow

    from durable_agents.dataplane.unreadable import (
        AgentPayloadConverter,
        UnreadablePayloadConverter,
    )

    shared = AgentPayloadConverter().converters[b"json/plain"]
    workflow.unsafe._set_in_sandbox(True)  # what the SDK's sandbox sets while it runs
    try:
        own = AgentPayloadConverter()
    finally:
        workflow.unsafe._set_in_sandbox(False)
    assert own.converters[b"json/plain"] is not shared
    assert any(isinstance(c, UnreadablePayloadConverter) for c in own.converters.values())
