"""Where large payloads go instead of Temporal history: Temporal's ExternalStorage
(claim check) with a driver chosen by `AGENT_PAYLOAD_STORE`.

- unset or a path: `LocalDirectoryDriver`, files named by their SHA-256 in one
  directory (default `$XDG_CACHE_HOME/durable-agents/payloads`): for one machine,
  where the worker and `agentctl` share that directory; no setup.
- `s3://BUCKET`: the SDK's S3 driver (`pip install 'temporalio[aioboto3]'`; AWS
  credentials and region from the standard AWS configuration): for a fleet.
- `off`: no external storage; payloads over Temporal's limits then fail.

Payloads of at least `AGENT_PAYLOAD_THRESHOLD` bytes (default 16 KiB) are stored
there and history keeps a small reference, so a long conversation or a 5 MB tool
output never passes through history in full.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    DataConverter,
    ExternalStorage,
    StorageDriver,
    StorageDriverClaim,
    StorageDriverRetrieveContext,
    StorageDriverStoreContext,
)

from durable_agents.dataplane.errors import DataPlaneError
from durable_agents.dataplane.unreadable import unreadable

DEFAULT_THRESHOLD = 16 * 1024
"""Payloads of this many bytes or more go to the store. 16 KiB keeps a turn's
history flat from the first turns on (1 KB tool outputs, turn 100: 3.9 KB of
history against 129.8 KB at 128 KiB; same wall time: bench/RESULTS.md section 4)."""
CHUNK_SIZE = 64 * 1024


class PayloadStoreError(DataPlaneError):
    """The payload store is misconfigured or a stored payload cannot be read."""


class LocalDirectoryDriver(StorageDriver):
    """Payloads as content-addressed files in one directory.

    A payload's data is split into fixed-size chunks, each stored once under its
    SHA-256, behind a small manifest that history refers to. Successive model
    requests of a run share their prefix (the conversation only grows at the
    end), so each turn adds only its new chunks: storage grows with the
    conversation, not with the conversation times the number of turns.
    """

    def __init__(self, directory: Path, *, chunk_size: int = CHUNK_SIZE) -> None:
        self._directory = directory
        self._chunk_size = chunk_size

    @property
    def directory(self) -> Path:
        """Where the blobs are."""
        return self._directory

    def name(self) -> str:
        return "local.directory"

    def type(self) -> str:
        return "local.directory"

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        return await asyncio.to_thread(lambda: [self._store(p) for p in payloads])

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        return await asyncio.to_thread(lambda: [self._retrieve(c) for c in claims])

    def _store(self, payload: Payload) -> StorageDriverClaim:
        chunks = [self._put(chunk) for chunk in _split(payload.data, self._chunk_size)]
        digest = self._put(_manifest(payload, chunks))
        return StorageDriverClaim(claim_data={"manifest": digest})

    def _retrieve(self, claim: StorageDriverClaim) -> Payload:
        manifest = json.loads(self._get(claim.claim_data.get("manifest", "")))
        return _assemble(manifest, [self._get(digest) for digest in manifest["chunks"]])

    def _put(self, blob: bytes) -> str:
        digest = hashlib.sha256(blob).hexdigest()
        path = self._path(digest)
        # Content-addressed: an existing file of the right size holds these bytes (one
        # of another size was cut short, by a crash before this store synced: replace it).
        try:
            stored = path.stat().st_size == len(blob)
            if stored:  # re-used: fresh again for the store's collection (`store_gc`)
                with contextlib.suppress(PermissionError, OSError):
                    os.utime(path)
                stored = path.exists()  # a collection may have taken it meanwhile
        except FileNotFoundError:
            stored = False
        if not stored:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(path, blob)
        return digest

    def _get(self, digest: str) -> bytes:
        path = self._path(digest)
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            raise PayloadStoreError(
                f"stored payload part sha256:{digest} is not in {self._directory}; every "
                "worker and client must share the payload store (AGENT_PAYLOAD_STORE; "
                "s3://BUCKET for several machines)"
            ) from None
        if hashlib.sha256(blob).hexdigest() != digest:
            raise PayloadStoreError(f"stored payload part {path} is corrupt (digest mismatch)")
        return blob

    def _path(self, digest: str) -> Path:
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            raise PayloadStoreError(f"malformed payload claim: {digest!r}")
        return self._directory / digest[:2] / digest


class ChunkingDriver(StorageDriver):
    """Another driver (the SDK's S3 driver) with each payload cut into chunks stored
    one by one behind a stored manifest, as `LocalDirectoryDriver` does. The S3
    driver keys an object by the SHA-256 of its bytes (within a workflow run), so a
    conversation re-sent every turn stores only its new chunks: storage grows with
    the conversation, not with the conversation times the turns. History keeps the
    manifest's claim, whatever the payload's size."""

    def __init__(self, inner: StorageDriver, *, chunk_size: int = CHUNK_SIZE) -> None:
        self._inner = inner
        self._chunk_size = chunk_size

    @property
    def inner(self) -> StorageDriver:
        """The driver each chunk and manifest is stored with."""
        return self._inner

    def name(self) -> str:
        return f"chunked.{self._inner.name()}"

    def type(self) -> str:
        return f"chunked.{self._inner.type()}"

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        claims = []
        for payload in payloads:
            parts = [Payload(data=c) for c in _split(payload.data, self._chunk_size)]
            stored = await self._inner.store(context, parts)
            manifest = _manifest(payload, [c.claim_data for c in stored])
            claims += await self._inner.store(context, [Payload(data=manifest)])
        return claims

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        payloads = []
        for stored in await self._inner.retrieve(context, claims):
            manifest = json.loads(stored.data)
            chunk_claims = [StorageDriverClaim(claim_data=c) for c in manifest["chunks"]]
            chunks = await self._inner.retrieve(context, chunk_claims)
            payloads.append(_assemble(manifest, [c.data for c in chunks]))
        return payloads


def _split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def _manifest(payload: Payload, chunks: list[Any]) -> bytes:
    """What a stored payload's manifest holds: its metadata, the SHA-256 of its data,
    and where each chunk is (a digest, or another driver's claim)."""
    manifest = {
        "metadata": {k: base64.b64encode(v).decode() for k, v in payload.metadata.items()},
        "sha256": hashlib.sha256(payload.data).hexdigest(),
        "chunks": chunks,
    }
    return json.dumps(manifest, sort_keys=True).encode()


def _assemble(manifest: dict[str, Any], chunks: list[bytes]) -> Payload:
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        raise PayloadStoreError("stored payload is corrupt: its chunks do not add up")
    metadata = {k: base64.b64decode(v) for k, v in manifest["metadata"].items()}
    return Payload(metadata=metadata, data=data)


def _write_atomically(path: Path, blob: bytes) -> None:
    """Write `blob` to `path` through a temporary file of its own in the same directory,
    so that readers never see half a file and concurrent writers of the same content
    (threads of one process, several processes, several machines on a shared volume)
    never clash: each renames its complete copy over the same name."""
    handle, partial = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".partial"
    )
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(blob)
            file.flush()
            os.fsync(file.fileno())  # history will name this part: it must survive a crash
        os.replace(partial, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself must survive a crash too
        finally:
            os.close(directory)
    except OSError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        if not path.exists():  # another writer's copy of the same bytes is as good
            raise


def default_directory(env: Mapping[str, str]) -> Path:
    """Where the local store lives when AGENT_PAYLOAD_STORE is unset."""
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "durable-agents" / "payloads"


def external_storage(env: Mapping[str, str] | None = None) -> ExternalStorage | None:
    """The ExternalStorage configured by AGENT_PAYLOAD_STORE / AGENT_PAYLOAD_THRESHOLD."""
    env = os.environ if env is None else env
    where = env.get("AGENT_PAYLOAD_STORE", "").strip()
    threshold_text = env.get("AGENT_PAYLOAD_THRESHOLD", str(DEFAULT_THRESHOLD))
    try:
        threshold = int(threshold_text)
        if threshold < 1:
            raise ValueError
    except ValueError:
        raise PayloadStoreError(
            f"AGENT_PAYLOAD_THRESHOLD must be a positive number of bytes, not {threshold_text!r}"
        ) from None
    if where == "off":
        return None
    if where.startswith("s3://"):
        driver = _s3_driver(where.removeprefix("s3://"))
    else:
        driver = LocalDirectoryDriver(Path(where) if where else default_directory(env))
    return GuardedStorage(drivers=[driver], payload_size_threshold=threshold)


def guarded(storage: ExternalStorage) -> GuardedStorage:
    """`storage` (one a user built, e.g. for `AgentsPlugin(payload_store=...)`) as a
    GuardedStorage with the same drivers and settings."""
    if isinstance(storage, GuardedStorage):
        return storage
    fields = {f.name: getattr(storage, f.name) for f in dataclasses.fields(storage) if f.init}
    return GuardedStorage(**fields)


@dataclasses.dataclass(frozen=True)
class GuardedStorage(ExternalStorage):
    """Temporal's ExternalStorage, where a reference that cannot be resolved becomes an
    unreadable payload with the reason (`dataplane.unreadable`) instead of an error.

    References are resolved before any of the workflow's code runs, so anyone who may
    signal a run could otherwise send a reference to a missing object, an unknown
    driver or another bucket, and fail every workflow task of the run for good. The
    reason names no hash of what was fetched (the S3 driver's integrity error does).
    Overrides the SDK's two retrieval methods (private API, covered by
    tests/integration/test_payload_store_refs.py): it has no hook for this."""

    async def _retrieve_payload(self, payload: Payload) -> Payload:
        try:
            return await super()._retrieve_payload(payload)
        except PayloadStoreError as err:
            return unreadable(f"payload-store reference refused: {err.message}", source="store")
        except Exception as err:
            why = f"payload-store reference refused: cannot be resolved ({type(err).__name__})"
            return unreadable(why, source="store")

    async def _retrieve_payload_sequence(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [await self._retrieve_payload(p) for p in payloads]


def with_payload_store(
    converter: DataConverter, env: Mapping[str, str] | None = None
) -> DataConverter:
    """`converter` with the configured external storage (unchanged when `off`)."""
    storage = external_storage(env)
    if storage is None:
        return converter
    return dataclasses.replace(converter, external_storage=storage)


def _s3_driver(bucket: str) -> StorageDriver:
    if not bucket:
        raise PayloadStoreError("AGENT_PAYLOAD_STORE=s3:// needs a bucket name")
    try:
        import aioboto3
        from temporalio.contrib.aws.s3driver import S3StorageDriver
        from temporalio.contrib.aws.s3driver.aioboto3 import new_aioboto3_client
    except ImportError as err:
        raise PayloadStoreError(
            f"AGENT_PAYLOAD_STORE=s3://... needs `pip install 'temporalio[aioboto3]'` ({err})"
        ) from err
    s3 = LazyS3Driver(aioboto3.Session(), bucket, S3StorageDriver, new_aioboto3_client)
    return ChunkingDriver(s3)


class LazyS3Driver(StorageDriver):
    """The SDK's S3 driver, opening its aioboto3 client on first use in each event loop.

    The client (an aiohttp session) belongs to the loop that opened it: it is held by an
    async generator, which `asyncio.run` closes when its loop ends
    (`loop.shutdown_asyncgens`), so a worker, `agentctl` or a program of the user's
    exits without "Unclosed client session" and a later loop opens a client of its own.
    """

    def __init__(self, session: Any, bucket: str, driver_class: Any, make_client: Any) -> None:
        self._session, self._bucket = session, bucket
        self._driver_class, self._make_client = driver_class, make_client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._driver: StorageDriver | None = None
        self._holder: Any = None  # the async generator holding the client open
        self._opening = asyncio.Lock()  # two first calls at once open one client

    @property
    def bucket(self) -> str:
        return self._bucket

    def name(self) -> str:
        return "aws.s3driver"

    def type(self) -> str:
        return "aws.s3driver"

    async def _held_client(self) -> Any:
        async with self._session.client("s3") as s3:
            yield s3

    async def _inner(self) -> StorageDriver:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # the first call in this loop: the last loop's is gone
            self._loop, self._driver, self._opening = loop, None, asyncio.Lock()
        async with self._opening:
            if self._driver is None:
                self._holder = self._held_client()
                s3 = await anext(self._holder)
                self._driver = self._driver_class(client=self._make_client(s3), bucket=self._bucket)
        return self._driver

    async def store(
        self, context: StorageDriverStoreContext, payloads: Sequence[Payload]
    ) -> list[StorageDriverClaim]:
        return await (await self._inner()).store(context, payloads)

    async def retrieve(
        self, context: StorageDriverRetrieveContext, claims: Sequence[StorageDriverClaim]
    ) -> list[Payload]:
        for claim in claims:  # a reference anyone can write may name any bucket
            bucket = claim.claim_data.get("bucket")
            if bucket != self._bucket:
                raise PayloadStoreError(
                    f"a reference to bucket {str(bucket)[:64]!r} is refused: this store is "
                    f"s3://{self._bucket}"
                )
        return await (await self._inner()).retrieve(context, claims)
