"""Payload-store retention: remove the stored blobs that no run Temporal still keeps
can need, and say what was removed and kept.

Mark: every execution the namespace still has (open runs, and closed ones inside its
retention period) is read from its history; each payload-store reference in it
(`ExternalStorageReference` payloads, wherever they sit in an event) names a
manifest, and each manifest its chunks. Sweep: every blob of the store directory
that no reference reaches and that was last written or re-used (`_put` refreshes
the time of a blob it finds already stored) longer ago than `older_than` is
removed; younger ones are kept, since a worker may have stored a payload whose
event is not in history yet. Stale partial writes older than that go too.

This module collects a directory store (`AGENT_PAYLOAD_STORE` a path); an S3 store
is collected by `dataplane.s3_gc` the same way. One namespace per store: what runs
of another namespace refer to is not seen, and would be removed (a namespace with no
reference at all is refused).
Not scanned: schedules (a schedule's stored start input), a running activity's
heartbeat details and last failure, updates not yet accepted: keep the grace longer
than any of those live, or do not collect a store that schedules use. Known limit:
a blob re-used by a worker in the instant between the sweep's look at it and its
removal is lost (the grace period makes that a blob not re-used for `older_than`
before it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from google.protobuf.message import Message
from temporalio import activity
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.dataplane.payload_store import (
    ChunkingDriver,
    LazyS3Driver,
    LocalDirectoryDriver,
    PayloadStoreError,
)
from durable_agents.workflows.contract import ACTIVITY_COLLECT_STORE_GARBAGE
from durable_agents.workflows.payloads import StoreGCInput

REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"
LEGACY_ENCODING = b"json/external-storage-reference"
ENCODED_MARKER = "__temporal_external_storage_reference"
"""Set on a reference a later SDK writes codec-encoded: this scan cannot read it."""
DIRECTORY_DRIVER = "local.directory"
DEFAULT_OLDER_THAN = timedelta(days=1)
"""The default grace: blobs written or re-used within it are always kept."""
MIN_OLDER_THAN = timedelta(hours=1)
"""The shortest grace without `force`: a worker's freshly stored payload has an event
in history within it."""
MANIFEST_LIMIT = 16 * 1024 * 1024
"""Bytes of a manifest read at most (a manifest lists chunk digests: a few KB)."""


class UnreadableReference(PayloadStoreError):
    """A reference this scan cannot read (codec-encoded by a later SDK): nothing is
    removed, since what it names cannot be known."""


@dataclass
class GcReport:
    """What a collection found and did."""

    directory: str
    dry_run: bool
    runs_scanned: int = 0
    referenced_manifests: int = 0
    kept_blobs: int = 0
    kept_bytes: int = 0
    young_blobs: int = 0
    """Not referenced, but written or re-used within the grace period: kept."""
    young_bytes: int = 0
    removed_blobs: int = 0
    removed_bytes: int = 0
    missing_manifests: list[str] = field(default_factory=list)
    """Referenced by a run, but not in the store (already lost: such a run cannot read it)."""
    missing_chunks: list[str] = field(default_factory=list)
    """Listed by a referenced manifest, but not in the store (lost likewise)."""
    unreadable_manifests: list[str] = field(default_factory=list)
    """Referenced, but not a manifest this store wrote: kept, its chunks unknown."""
    other_files: int = 0
    """Files in the store that are no blob of it: left alone."""
    errors: list[str] = field(default_factory=list)
    """Blobs that could not be removed, and why."""


def references(message: Message) -> Iterator[str]:
    """The manifest digests of the directory store's references anywhere in `message`
    (a history event, or a whole history). A reference it cannot read (codec-encoded)
    raises `UnreadableReference`; a claim that is no digest is no reference of ours."""
    for driver, claim in claims(message):
        digest = claim.get("manifest")
        if driver == DIRECTORY_DRIVER and isinstance(digest, str) and _is_blob(digest):
            yield digest


def claims(message: Message) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every payload-store reference anywhere in `message`: its driver's name and its
    claim (`{"manifest": digest}` for the directory store, `{"bucket", "key", ...}` for
    S3). A reference it cannot read (codec-encoded) raises `UnreadableReference`."""
    for payload in _payloads(message):
        if ENCODED_MARKER in payload.metadata:
            raise UnreadableReference(
                "history holds a codec-encoded payload-store reference (a later SDK): this "
                "collector cannot read it, so it removes nothing"
            )
        legacy = payload.metadata.get("encoding") == LEGACY_ENCODING
        if payload.metadata.get("messageType") != REFERENCE_TYPE and not legacy:
            continue
        try:
            body = json.loads(payload.data)
        except ValueError:
            continue
        if not isinstance(body, dict):
            continue
        if legacy:
            driver, claim = body.get("driver_name"), body.get("driver_claim")
            claim = claim.get("claim_data") if isinstance(claim, dict) else None
        else:
            driver, claim = body.get("driverName"), body.get("claimData")
        if isinstance(driver, str) and isinstance(claim, dict):
            yield driver, claim


async def referenced(client: Client, report: GcReport) -> set[str]:
    """The manifest digests every execution of the client's namespace refers to."""
    return await scan_histories(client, lambda event: set(references(event)), report=report)


async def scan_histories(
    client: Client,
    find: Callable[[Message], set[str]],
    *,
    report: GcReport | None = None,
    skip: Collection[tuple[str, str]] = (),
) -> set[str]:
    """What `find` names in every event of every execution the client's namespace keeps
    (but those in `skip`, as `(workflow id, run id)`); an execution deleted since it
    was listed needs nothing any more. With `report`: counted in it."""
    found: set[str] = set()
    scanned = 0
    async for execution in client.list_workflows(""):
        if (execution.id, execution.run_id) in skip:
            continue
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        try:
            async for event in handle.fetch_history_events():
                found |= find(event)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            continue
        scanned += 1
    if report is not None:
        report.runs_scanned += scanned
        report.referenced_manifests = len(found)
    return found


def needed_blobs(directory: Path, manifests: set[str], report: GcReport) -> set[str]:
    """The manifests and every chunk they list."""
    needed = set(manifests)
    for digest in sorted(manifests):
        path = blob_path(directory, digest)
        try:
            with path.open("rb") as file:
                manifest = json.loads(file.read(MANIFEST_LIMIT))
        except FileNotFoundError:
            report.missing_manifests.append(digest)
            continue
        except (OSError, ValueError):
            report.unreadable_manifests.append(digest)
            continue  # kept (it is referenced); what it lists cannot be known
        chunks = manifest.get("chunks") if isinstance(manifest, dict) else None
        if not isinstance(chunks, list):
            report.unreadable_manifests.append(digest)
            continue
        for chunk in chunks:
            if isinstance(chunk, str) and _is_blob(chunk):
                needed.add(chunk)
                if not blob_path(directory, chunk).is_file():
                    report.missing_chunks.append(chunk)
    return needed


def sweep(
    directory: Path,
    needed: set[str],
    *,
    older_than: timedelta,
    report: GcReport,
    now: float | None = None,
) -> None:
    """Remove (unless `report.dry_run`) the blobs not `needed` older than `older_than`,
    and partial writes as old. `now`: the store's own time (`store_now`), so that a
    collector whose clock differs from the writers' does not misjudge ages."""
    cutoff = (time.time() if now is None else now) - older_than.total_seconds()
    for path in sorted(directory.glob("*/*")):
        name = path.name
        partial = name.startswith(".") and name.endswith(".partial")
        try:
            stat = path.lstat()
        except FileNotFoundError:
            continue
        if not path.is_file() or path.is_symlink() or not (_is_blob(name) or partial):
            report.other_files += 1
            continue
        if name in needed and not partial:
            report.kept_blobs += 1
            report.kept_bytes += stat.st_size
        elif stat.st_mtime > cutoff:
            report.young_blobs += 1
            report.young_bytes += stat.st_size
        elif report.dry_run:
            report.removed_blobs += 1
            report.removed_bytes += stat.st_size
        else:
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as err:
                report.errors.append(f"{path}: {err.strerror}")
                continue
            report.removed_blobs += 1
            report.removed_bytes += stat.st_size


def store_now(directory: Path) -> float:
    """The store's own clock: the time of a file written there now (a shared volume's
    server stamps it, as it stamps the writers' blobs)."""
    probe = directory / ".gc-clock"
    probe.write_bytes(b"")
    return probe.stat().st_mtime


async def collect_garbage(
    client: Client,
    directory: Path,
    *,
    older_than: timedelta = DEFAULT_OLDER_THAN,
    dry_run: bool = False,
    force: bool = False,
) -> GcReport:
    """Mark what the client's namespace still refers to, then sweep `directory`.

    Refused without `force`: a grace shorter than `MIN_OLDER_THAN`, and a namespace
    in which no run refers to the store while the store holds blobs (the wrong
    namespace, or a store shared with another one, would lose everything)."""
    if not directory.is_dir():
        raise PayloadStoreError(f"no payload store at {directory}")
    if older_than < timedelta(0):
        raise PayloadStoreError(f"older_than cannot be negative ({older_than})")
    if older_than < MIN_OLDER_THAN and not force:
        raise PayloadStoreError(
            f"a grace of {older_than} could remove payloads a worker stored a moment ago; "
            f"at least {MIN_OLDER_THAN} (or force)"
        )
    report = GcReport(directory=str(directory), dry_run=dry_run)
    manifests = await referenced(client, report)
    # The file-system work runs in a thread: on a worker, the event loop serves its
    # model and tool activities (and their heartbeats) meanwhile.
    holds_blobs = await asyncio.to_thread(
        lambda: any(_is_blob(p.name) for p in directory.glob("*/*"))
    )
    if not manifests and not force and holds_blobs:
        raise PayloadStoreError(
            f"no run of namespace {client.namespace!r} refers to the store at {directory}, "
            "which holds payloads: the wrong namespace, or a store another namespace uses? "
            "Nothing removed (force to collect anyway)"
        )
    needed = await asyncio.to_thread(needed_blobs, directory, manifests, report)
    now = await asyncio.to_thread(store_now, directory)
    await asyncio.to_thread(
        lambda: sweep(directory, needed, older_than=older_than, report=report, now=now)
    )
    return report


@activity.defn(name=ACTIVITY_COLLECT_STORE_GARBAGE)
async def collect_store_garbage(request: StoreGCInput) -> dict[str, Any]:
    """One collection of this worker's payload store (the directory its converter writes
    to), for `AgentStoreGC`; the report as JSON. A worker without a directory store
    cannot collect (`NoStore`, not retried)."""
    client = activity.client()
    storage = client.data_converter.external_storage
    drivers = storage.drivers if storage is not None else []
    directory = next((d.directory for d in drivers if isinstance(d, LocalDirectoryDriver)), None)
    bucket = next((b for b in map(s3_bucket, drivers) if b is not None), None)
    if directory is None and bucket is None:
        raise ApplicationError(
            "this worker has no payload store (AGENT_PAYLOAD_STORE=off): there is nothing "
            "it can collect",
            type="NoStore",
            non_retryable=True,
        )
    if directory is not None and not directory.is_dir():  # nothing stored yet
        return dataclasses.asdict(GcReport(directory=str(directory), dry_run=request.dry_run))
    from durable_agents.activities.heartbeat import heartbeating
    from durable_agents.dataplane.s3_gc import collect_s3_garbage

    older_than = timedelta(seconds=request.older_than_seconds)
    try:
        async with heartbeating():  # a worker that dies mid-scan is noticed in minutes
            if bucket is not None:
                report = await collect_s3_garbage(
                    client, bucket, older_than=older_than, dry_run=request.dry_run
                )
            else:
                assert directory is not None
                report = await collect_garbage(
                    client, directory, older_than=older_than, dry_run=request.dry_run
                )
    except PayloadStoreError as err:  # refused (no run uses the store, ...): said, not retried
        raise ApplicationError(err.message, type="StoreGCRefused", non_retryable=True) from None
    return dataclasses.asdict(report)


def s3_bucket(driver: object) -> str | None:
    """The bucket of a worker's S3 store driver (`payload_store.ChunkingDriver` over the
    SDK's S3 driver), or None for any other driver."""
    inner = driver.inner if isinstance(driver, ChunkingDriver) else None
    return inner.bucket if isinstance(inner, LazyS3Driver) else None


def _payloads(message: Message) -> Iterator[Payload]:
    if isinstance(message, Payload):
        yield message
        return
    for descriptor, value in message.ListFields():
        if descriptor.type != descriptor.TYPE_MESSAGE:
            continue
        if descriptor.is_repeated:  # a list, or a map (`Header.fields`, `Memo.fields`)
            values = value.values() if callable(getattr(value, "values", None)) else value
            for item in values:
                if isinstance(item, Message):
                    yield from _payloads(item)
        else:
            yield from _payloads(value)


def _is_blob(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def blob_path(directory: Path, digest: str) -> Path:
    return directory / digest[:2] / digest
