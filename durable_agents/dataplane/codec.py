"""Payload encryption: an AES-256-GCM `PayloadCodec` with named keys that rotate.

Every payload the worker, `AgentClient` or `agentctl` sends to Temporal (workflow
input, activity arguments and results, signals, updates, query answers, the
summaries shown in the UI, failure messages) is encrypted before it leaves the
process, so Temporal's history holds no prompt, tool argument, tool output or
RunState in plain text. Configuration, read by `keys_from_env`:

- `AGENT_CODEC_KEYS="kid1:BASE64,kid2:BASE64"` (or a file named by
  `AGENT_CODEC_KEYS_FILE` holding the same entries, one per line or comma
  separated, `#` comments allowed): 32-byte keys in standard base64, each under
  a key id (`[A-Za-z0-9._-]`, at most 64 characters);
- `AGENT_CODEC_PRIMARY=kid2`: the key that encrypts; required when there are
  several keys. Every configured key decrypts, so a key rotates by adding a new
  one, making it primary, and removing the old one once no retained history
  needs it.

No keys configured: encryption is off (payloads stay plain JSON), and an
encrypted payload met on the way in raises `CodecKeyError` saying so.
`python -m durable_agents.dataplane.codec new-key KID` prints a fresh `KID:BASE64` entry.

`data_converter_from_env` builds the data converter every process uses (worker,
`AgentClient`, `agentctl`): pydantic JSON, this codec, and the payload store of
`dataplane.payload_store`. Payloads big enough for the store are encrypted in
deterministic chunks (`client.codec_chunks`) so that the store still keeps each
repeated part of a growing conversation once.
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import os
import re
import secrets
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    PayloadCodec,
    SerializationContext,
    WithSerializationContext,
)

from durable_agents.dataplane.chunks import (
    CHUNKED_ENCODING,
    ChunkCipher,
    ChunkFormatError,
    ChunkScopeError,
    can_chunk,
)
from durable_agents.dataplane.errors import DataPlaneError
from durable_agents.dataplane.failures import (
    CompactFailureConverter,
    CompactFailureConverterWithEncodedAttributes,
)
from durable_agents.dataplane.payload_store import external_storage, guarded
from durable_agents.dataplane.unreadable import (
    KEY_ID_METADATA,
    AgentPayloadConverter,
    unreadable,
)
from durable_agents.workflows.contract import ENCODING_UNDECODABLE

KEYS_ENV = "AGENT_CODEC_KEYS"
KEYS_FILE_ENV = "AGENT_CODEC_KEYS_FILE"
PRIMARY_ENV = "AGENT_CODEC_PRIMARY"

ENCODING = b"binary/encrypted"
"""The `encoding` metadata of an encrypted payload (the name Temporal's samples use)."""
WORKFLOW_METADATA = "encryption-workflow-id"
"""Metadata naming the workflow a payload was encrypted for; that id is the AES-GCM
associated data, so the ciphertext decrypts for that workflow only (a payload
without it was encrypted outside any workflow, or by an earlier build)."""
REFUSE_PLAINTEXT_ENV = "AGENT_CODEC_REFUSE_PLAINTEXT"
"""`1`: payloads a workflow receives (start input, signals, updates) must be
encrypted; plaintext ones are refused. For deployments where every sender has the
keys: it shuts out the `temporal` CLI and any sender without them."""
KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


class CodecError(DataPlaneError):
    """Base class of the codec's errors; messages name key ids, never key material."""


class CodecConfigError(CodecError):
    """The key configuration (env or file) is unusable."""


class CodecKeyError(CodecError):
    """A payload cannot be decrypted: its key is not configured, or the key is wrong."""

    def __init__(self, message: str, *, key_id: str | None) -> None:
        super().__init__(message)
        self.key_id = key_id
        """Id of the key the payload names (None when the payload names none)."""


class CodecDataError(CodecError):
    """An encrypted payload is malformed: truncated, or not something this codec wrote."""

    def __init__(self, message: str, *, key_id: str | None) -> None:
        super().__init__(message)
        self.key_id = key_id
        """Id of the key the payload names (None when the payload names none)."""


@dataclasses.dataclass(frozen=True)
class CodecKeys:
    """The named AES-256 keys of a process and the one that encrypts."""

    keys: Mapping[str, bytes] = dataclasses.field(repr=False)
    """Key id -> 32-byte key. Every key decrypts."""
    primary: str
    """Id of the key that encrypts new payloads."""

    def __post_init__(self) -> None:
        if not self.keys:
            raise CodecConfigError("no codec keys given")
        for key_id, key in self.keys.items():
            if not _KEY_ID.fullmatch(key_id):
                raise CodecConfigError(
                    f"bad codec key id {key_id!r}: use 1-64 of A-Z a-z 0-9 . _ -"
                )
            if len(key) != KEY_BYTES:
                raise CodecConfigError(
                    f"codec key {key_id!r} is {len(key)} bytes; AES-256 needs {KEY_BYTES}"
                )
        if self.primary not in self.keys:
            raise CodecConfigError(
                f"primary codec key {self.primary!r} is not among the configured keys "
                f"({', '.join(sorted(self.keys))})"
            )

    @classmethod
    def parse(cls, text: str, *, primary: str | None = None, source: str = KEYS_ENV) -> CodecKeys:
        """Keys from `kid:BASE64` entries separated by commas or newlines (`#` comments)."""
        keys = key_entries(text, source=source, what="codec key")
        if primary is None:
            if len(keys) > 1:
                raise CodecConfigError(
                    f"{len(keys)} codec keys configured ({', '.join(keys)}): "
                    f"set {PRIMARY_ENV} to the one that encrypts"
                )
            primary = next(iter(keys))
        return cls(keys=keys, primary=primary)

    def describe(self) -> str:
        """One line for start-up output: algorithm and key ids, no key material."""
        others = sorted(k for k in self.keys if k != self.primary)
        also = f"; also decrypts with {', '.join(others)}" if others else ""
        return f"AES-256-GCM, encrypting with key {self.primary!r}{also}"


def keys_from_env(env: Mapping[str, str] | None = None) -> CodecKeys | None:
    """The keys configured by AGENT_CODEC_KEYS or AGENT_CODEC_KEYS_FILE, or None (off)."""
    env = os.environ if env is None else env
    inline = env.get(KEYS_ENV, "").strip()
    file_name = env.get(KEYS_FILE_ENV, "").strip()
    primary = env.get(PRIMARY_ENV, "").strip() or None
    if inline and file_name:
        raise CodecConfigError(f"set {KEYS_ENV} or {KEYS_FILE_ENV}, not both")
    if file_name:
        try:
            text = Path(file_name).read_text()
        except OSError as err:
            raise CodecConfigError(
                f"{KEYS_FILE_ENV}: cannot read {file_name}: {err.strerror}"
            ) from None
        return CodecKeys.parse(text, primary=primary, source=f"{KEYS_FILE_ENV} {file_name}")
    if inline:
        return CodecKeys.parse(inline, primary=primary)
    if primary:
        raise CodecConfigError(f"{PRIMARY_ENV} is set but no keys: set {KEYS_ENV}")
    return None


class EncryptionCodec(PayloadCodec, WithSerializationContext):
    """AES-256-GCM over the whole serialized payload; the key id travels in the metadata.

    The format is that of Temporal's encryption samples (Go, TypeScript, Python),
    so services in other languages can share it: metadata `encoding:
    binary/encrypted` and `encryption-key-id`, data = 12-byte random nonce +
    ciphertext + 16-byte tag, no associated data.

    Payloads whose data has at least `chunk_threshold` bytes (when set: the
    payload store's threshold) are encrypted in deterministic chunks instead
    (`client.codec_chunks`, encoding `binary/encrypted-chunked`), so that the
    payload store can dedup what successive payloads share; their chunk key is the
    workflow's own (`with_context`: the SDK passes the workflow id it encodes for).

    With `keys=None` it encrypts nothing and refuses, with a clear error,
    encrypted payloads it cannot read. Payloads that are not encrypted always
    pass through on decode, so histories recorded before encryption stay readable.
    """

    def __init__(
        self,
        keys: CodecKeys | None,
        *,
        chunk_threshold: int | None = None,
        refuse_plaintext: bool = False,
    ) -> None:
        if refuse_plaintext and keys is None:
            raise CodecConfigError(f"{REFUSE_PLAINTEXT_ENV} needs codec keys: set {KEYS_ENV}")
        self.keys = keys
        self.refuse_plaintext = refuse_plaintext
        """Payloads decoded for a workflow must be encrypted (see REFUSE_PLAINTEXT_ENV)."""
        """The keys, or None when encryption is off."""
        self.chunk_threshold = chunk_threshold
        """Data size from which payloads are encrypted in chunks. Default None: never."""
        self._ciphers = {k: AESGCM(v) for k, v in keys.keys.items()} if keys else {}
        self._chunk_ciphers = {k: ChunkCipher(v) for k, v in keys.keys.items()} if keys else {}
        self._scope = ""
        """The workflow whose payloads this instance encodes ("" outside any)."""

    def with_context(self, context: SerializationContext) -> EncryptionCodec:
        """This codec for the payloads of one workflow (its chunks get that
        workflow's key); the ciphers are shared, not rebuilt."""
        workflow_id = getattr(context, "workflow_id", None) or ""
        if workflow_id == self._scope:
            return self
        scoped = copy.copy(self)
        scoped._scope = workflow_id
        return scoped

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypt every payload with the primary key (unchanged when encryption is off)."""
        return self.encode_sync(payloads)

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Decrypt encrypted payloads with the key they name; others pass through.

        For a workflow (`with_context`), a payload that cannot be decrypted for it
        (encrypted for another workflow, altered, a key not configured here), or a
        plaintext one where `refuse_plaintext`, becomes an unreadable payload
        carrying the reason, instead of raising: a signal anyone may send must not
        fail the run's workflow tasks forever."""
        if not self._scope:
            return self.decode_sync(payloads)
        return [self._decode_for_workflow(p) for p in payloads]

    def _decode_for_workflow(self, payload: Payload) -> Payload:
        if not is_encrypted(payload):
            if self.refuse_plaintext and payload.metadata.get("encoding") != ENCODING_UNDECODABLE:
                why = (
                    f"plaintext payload refused: this deployment takes only encrypted "
                    f"payloads ({REFUSE_PLAINTEXT_ENV})"
                )
                return unreadable(why, source="codec", refused=True)
            return payload
        try:
            return self._decrypt(payload)
        except (CodecKeyError, CodecDataError) as err:
            return unreadable(err.message, source="codec", key_id=err.key_id)

    def encode_sync(self, payloads: Sequence[Payload]) -> list[Payload]:
        """`encode` without an event loop (the codec server's threads)."""
        if self.keys is None:
            return list(payloads)
        return [self._encrypt(payload, self.keys.primary) for payload in payloads]

    def decode_sync(self, payloads: Sequence[Payload]) -> list[Payload]:
        """`decode` without an event loop (the codec server's threads)."""
        return [self._decrypt(p) if is_encrypted(p) else p for p in payloads]

    def _encrypt(self, payload: Payload, key_id: str) -> Payload:
        threshold = self.chunk_threshold
        if threshold is not None and len(payload.data) >= threshold and can_chunk(payload):
            sealed = self._chunk_ciphers[key_id].seal(payload, key_id=key_id, scope=self._scope)
            sealed.metadata[KEY_ID_METADATA] = key_id.encode()
            return sealed
        nonce = secrets.token_bytes(NONCE_BYTES)
        metadata = {"encoding": ENCODING, KEY_ID_METADATA: key_id.encode()}
        if self._scope:
            metadata[WORKFLOW_METADATA] = self._scope.encode()
        associated = _associated(self._scope) if self._scope else None
        sealed = self._ciphers[key_id].encrypt(nonce, payload.SerializeToString(), associated)
        return Payload(metadata=metadata, data=nonce + sealed)

    def _decrypt(self, payload: Payload) -> Payload:
        key_id = self._key_id_of(payload)
        data = payload.data
        chunked = payload.metadata["encoding"] == CHUNKED_ENCODING
        if not chunked and len(data) < NONCE_BYTES + TAG_BYTES:
            raise CodecDataError(
                f"malformed encrypted payload (codec key {key_id!r}): {len(data)} bytes, "
                "shorter than a nonce and a tag",
                key_id=key_id,
            )
        bound = payload.metadata.get(WORKFLOW_METADATA)
        bound_to = bound.decode(errors="replace") if bound is not None else None
        if bound_to is not None and self._scope and bound_to != self._scope:
            raise CodecKeyError(_elsewhere(bound_to, self._scope), key_id=key_id)
        try:
            if chunked:
                return self._chunk_ciphers[key_id].open(payload, key_id=key_id, scope=self._scope)
            associated = _associated(bound_to) if bound_to is not None else None
            plain = self._ciphers[key_id].decrypt(
                data[:NONCE_BYTES], data[NONCE_BYTES:], associated
            )
            decoded = Payload()
            decoded.ParseFromString(plain)
        except InvalidTag:
            raise CodecKeyError(
                f"cannot decrypt payload with codec key {key_id!r}: "
                "wrong key material for that id, or the payload was altered",
                key_id=key_id,
            ) from None
        except ChunkScopeError as err:
            raise CodecKeyError(_elsewhere(err.sealed_for, self._scope), key_id=key_id) from None
        except (ChunkFormatError, DecodeError, ValueError) as err:
            raise CodecDataError(
                f"malformed encrypted payload (codec key {key_id!r}): {err}", key_id=key_id
            ) from None
        return decoded

    def _key_id_of(self, payload: Payload) -> str:
        """The id of the configured key `payload` names; CodecKeyError if there is none."""
        key_id = payload.metadata.get(KEY_ID_METADATA, b"").decode(errors="replace")
        if not key_id:
            raise CodecKeyError("encrypted payload names no key id", key_id=None)
        if self.keys is None:
            raise CodecKeyError(
                f"payload is encrypted with codec key {key_id!r}, but no codec keys are "
                f"configured here: set {KEYS_ENV} or {KEYS_FILE_ENV}",
                key_id=key_id,
            )
        if key_id not in self._ciphers:
            raise CodecKeyError(
                f"payload is encrypted with codec key {key_id!r}, which is not configured "
                f"here (configured: {', '.join(sorted(self.keys.keys))})",
                key_id=key_id,
            )
        return key_id


def _associated(workflow_id: str) -> bytes:
    """The AES-GCM associated data binding a payload to the workflow it is for."""
    return b"temporal-workflow-id:" + workflow_id.encode()


def _elsewhere(sealed_for: str, here: str) -> str:
    return (
        f"payload was encrypted for workflow {sealed_for!r}, not {here!r} (copied from "
        "another run's history?)"
    )


def is_encrypted(payload: Payload) -> bool:
    """Whether `payload` was encrypted by an `EncryptionCodec`."""
    return payload.metadata.get("encoding") in (ENCODING, CHUNKED_ENCODING)


def codec_data_converter(
    keys: CodecKeys | None,
    *,
    base: DataConverter = pydantic_data_converter,
    chunk_threshold: int | None = None,
    refuse_plaintext: bool = False,
) -> DataConverter:
    """`base` with the encryption codec, and failures without stack traces
    (`dataplane.failures`); with keys, failure messages move into the failure's
    encoded attributes so that they are encrypted too.
    `chunk_threshold`, `refuse_plaintext`: see `EncryptionCodec`."""
    codec = EncryptionCodec(
        keys, chunk_threshold=chunk_threshold, refuse_plaintext=refuse_plaintext
    )
    converter = dataclasses.replace(base, payload_codec=codec)
    if converter.payload_converter_class is PydanticPayloadConverter:
        converter = dataclasses.replace(converter, payload_converter_class=AgentPayloadConverter)
    failures = (
        CompactFailureConverter if keys is None else CompactFailureConverterWithEncodedAttributes
    )
    return dataclasses.replace(converter, failure_converter_class=failures)


def data_converter_from_env(
    env: Mapping[str, str] | None = None, *, base: DataConverter = pydantic_data_converter
) -> DataConverter:
    """The data converter of every process of the project (worker, `AgentClient`,
    `agentctl`): `base` (pydantic JSON), the codec configured in the environment
    (encryption off when no keys are set) and the payload store (AGENT_PAYLOAD_STORE,
    AGENT_PAYLOAD_THRESHOLD: `dataplane.payload_store`). Payloads the store takes are
    encrypted in chunks it can dedup. Raises `CodecConfigError` or `PayloadStoreError`
    (both `DataPlaneError`s) for an unusable configuration."""
    env = os.environ if env is None else env
    refuse = env.get(REFUSE_PLAINTEXT_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return data_converter(
        keys_from_env(env), external_storage(env), base=base, refuse_plaintext=refuse
    )


def data_converter(
    keys: CodecKeys | None,
    storage: ExternalStorage | None,
    *,
    base: DataConverter = pydantic_data_converter,
    refuse_plaintext: bool = False,
) -> DataConverter:
    """`base` with the encryption codec (`keys`; None: no encryption) and the payload
    store (`storage`; None: none). Payloads the store takes are encrypted in chunks
    it can dedup. `refuse_plaintext`: see `EncryptionCodec`."""
    storage = guarded(storage) if storage is not None else None
    threshold = storage.payload_size_threshold if storage is not None else None
    converter = codec_data_converter(
        keys, base=base, chunk_threshold=threshold, refuse_plaintext=refuse_plaintext
    )
    if storage is None:
        return converter
    return dataclasses.replace(converter, external_storage=storage)


def key_entries(text: str, *, source: str, what: str) -> dict[str, bytes]:
    """`KEY_ID:BASE64` entries separated by commas or newlines (`#` comments), in order;
    `what` names a key in errors. Raises CodecConfigError."""
    keys: dict[str, bytes] = {}
    entries = (e.strip() for line in text.splitlines() for e in line.split("#")[0].split(","))
    for entry in filter(None, entries):
        key_id, sep, encoded = (part.strip() for part in entry.partition(":"))
        if not sep or not key_id or not encoded:
            raise CodecConfigError(f"{source}: each entry must be KEY_ID:BASE64_KEY")
        if key_id in keys:
            raise CodecConfigError(f"{source}: {what} {key_id!r} is given twice")
        try:
            keys[key_id] = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raise CodecConfigError(f"{source}: {what} {key_id!r} is not valid base64") from None
    if not keys:
        raise CodecConfigError(f"{source} holds no keys")
    return keys


def new_key_entry(key_id: str) -> str:
    """A fresh `KEY_ID:BASE64` entry for AGENT_CODEC_KEYS."""
    entry = f"{key_id}:{base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode()}"
    CodecKeys.parse(entry)  # validates the id
    return entry


def main(argv: list[str] | None = None) -> int:
    """`python -m durable_agents.dataplane.codec new-key KEY_ID`: print a fresh key entry."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "new-key":
        print("usage: python -m durable_agents.dataplane.codec new-key KEY_ID", file=sys.stderr)
        return 2
    try:
        print(new_key_entry(args[1]))
    except CodecConfigError as err:
        print(f"codec: error: {err.message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
