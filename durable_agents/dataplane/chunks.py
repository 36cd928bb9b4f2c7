"""Encryption of large payloads in deterministic chunks, so that the payload store
can still keep each repeated chunk once.

Why: Temporal's SDK applies the payload codec *before* ExternalStorage, so the
payload store only ever sees ciphertext. With AES-GCM under a random nonce, the
conversation a run sends to the model every turn encrypts differently every
time and the store's content-addressed chunks never repeat: storage grows with
the square of the conversation (36.7 MB instead of 3 MB for 60 turns of 20 KB).

How: the payload's data is cut into fixed-size chunks from its start, and each
chunk is sealed with AES-SIV (RFC 5297, deterministic authenticated encryption)
under a key derived from the codec key with HKDF. Equal chunks give equal
ciphertext, so a request that repeats the previous turn's conversation repeats
its ciphertext too, chunk for chunk, and the store dedups it. A sealed chunk is
the chunk plus a 16-byte synthetic IV: `CHUNK_BYTES` is chosen so that it is
exactly the payload store's 64 KiB part. The payload's own metadata, its size
and the SHA-256 of its whole data (which binds the chunks' order and number)
travel in an `encryption-header` metadata entry sealed with AES-GCM under a
random nonce, as small payloads are.

The chunk key is derived per workflow (its id, the `scope`, is in the sealed
header, so a reader needs no other context): chunks repeat within one run's
history and its continue-as-new successors, never across runs.

What it gives away: to someone who can read history or the store but has no
key, which chunks of one workflow's payloads are equal (e.g. that turn 9's
request begins with turn 8's), and payload sizes (AES-GCM shows those too); not
the content. The chunk keys are secret (keyed deterministic encryption, not
convergent encryption with a key derived from the content), and per workflow,
so text an attacker gets into their own run cannot be matched against another
run's chunks. AES-SIV never reuses a nonce across different plaintexts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from temporalio.api.common.v1 import Payload

CHUNKED_ENCODING = b"binary/encrypted-chunked"
"""The `encoding` metadata of a payload encrypted in chunks."""
HEADER_METADATA = "encryption-header"
"""Metadata holding the sealed header: nonce + AES-GCM(original metadata, size, digest)."""
SIV_TAG_BYTES = 16
CHUNK_BYTES = 64 * 1024 - SIV_TAG_BYTES
"""Plaintext bytes per chunk: a sealed chunk is then one 64 KiB part of the payload store."""
FORMAT_VERSION = 1
NONCE_BYTES = 12
_SIV_INFO = b"durable-agents payload chunks AES-SIV v1"
_MAX_SCOPES = 4096
"""Derived chunk keys kept per cipher (one per workflow seen lately)."""


class ChunkFormatError(ValueError):
    """A chunked payload cannot be opened: altered, truncated, or not ours."""


class ChunkCipher:
    """Seals and opens chunked payloads for one codec key."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._header = AESGCM(key)
        self._chunk_ciphers: dict[str, AESSIV] = {}

    def _chunks(self, scope: str) -> AESSIV:
        """The AES-SIV cipher of one workflow's chunks (keys derived once, then kept)."""
        cipher = self._chunk_ciphers.get(scope)
        if cipher is None:
            if len(self._chunk_ciphers) >= _MAX_SCOPES:
                self._chunk_ciphers.clear()
            info = _SIV_INFO + b"|" + scope.encode()
            siv_key = HKDF(algorithm=SHA256(), length=64, salt=None, info=info).derive(self._key)
            cipher = self._chunk_ciphers[scope] = AESSIV(siv_key)
        return cipher

    def seal(self, payload: Payload, *, key_id: str, scope: str) -> Payload:
        """`payload` encrypted chunk by chunk (its data must not be empty) with the key
        of `scope` (the workflow id; "" outside any workflow); the caller adds the key
        id to the metadata, as for every encrypted payload."""
        data = payload.data
        chunks = self._chunks(scope)
        header = {
            "v": FORMAT_VERSION,
            "scope": scope,
            "metadata": {k: base64.b64encode(v).decode() for k, v in payload.metadata.items()},
            "chunk_bytes": CHUNK_BYTES,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed_header = self._header.encrypt(
            nonce, json.dumps(header).encode(), _header_aad(key_id)
        )
        parts = (data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES))
        return Payload(
            metadata={"encoding": CHUNKED_ENCODING, HEADER_METADATA: nonce + sealed_header},
            data=b"".join(chunks.encrypt(chunk, None) for chunk in parts),
        )

    def open(self, payload: Payload, *, key_id: str, scope: str = "") -> Payload:
        """The original payload; raises `InvalidTag` for a wrong key or altered
        ciphertext, `ChunkScopeError` when it was sealed for another workflow than
        `scope` (given: the workflow it is decoded for), `ChunkFormatError` for
        anything else that does not add up."""
        sealed = payload.metadata.get(HEADER_METADATA, b"")
        if len(sealed) <= NONCE_BYTES:
            raise ChunkFormatError("chunked payload has no encryption header")
        plain_header = self._header.decrypt(
            sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], _header_aad(key_id)
        )
        header = _parse_header(plain_header)
        if scope and header["scope"] and header["scope"] != scope:
            raise ChunkScopeError(header["scope"])
        step = header["chunk_bytes"] + SIV_TAG_BYTES
        data = payload.data
        chunks = self._chunks(header["scope"])
        parts = [chunks.decrypt(data[i : i + step], None) for i in range(0, len(data), step)]
        plain = b"".join(parts)
        if len(plain) != header["size"] or hashlib.sha256(plain).hexdigest() != header["sha256"]:
            raise ChunkFormatError("chunked payload's chunks do not add up to its header")
        metadata = {k: base64.b64decode(v) for k, v in header["metadata"].items()}
        return Payload(metadata=metadata, data=plain)


class ChunkScopeError(ChunkFormatError):
    """A chunked payload sealed for another workflow (copied from its history)."""

    def __init__(self, sealed_for: str) -> None:
        super().__init__(f"sealed for workflow {sealed_for!r}")
        self.sealed_for = sealed_for


def can_chunk(payload: Payload) -> bool:
    """Whether `payload` is plain data and metadata (nothing else to carry) with data."""
    return bool(payload.data) and not payload.external_payloads


def _header_aad(key_id: str) -> bytes:
    return CHUNKED_ENCODING + b"|" + key_id.encode()


def _parse_header(text: bytes) -> dict:
    try:
        header = json.loads(text)
        valid = (
            header["v"] == FORMAT_VERSION
            and isinstance(header["metadata"], dict)
            and isinstance(header["chunk_bytes"], int)
            and header["chunk_bytes"] > 0
            and isinstance(header["size"], int)
            and isinstance(header["sha256"], str)
            and isinstance(header["scope"], str)
        )
    except (ValueError, KeyError, TypeError):
        valid = False
    if not valid:
        raise ChunkFormatError("chunked payload's header is not one this codec writes")
    return header
