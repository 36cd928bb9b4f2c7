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

The directory store only (`AGENT_PAYLOAD_STORE` a path); an S3 store is not
collected yet. One namespace per store: what runs of another namespace refer to is
not seen, and would be removed. Known limit: a blob re-used by a worker in the instant between the
sweep's look at it and its removal is lost (the grace period makes that a blob not
re-used for `older_than` before it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.dataplane.payload_store import PayloadStoreError

REFERENCE_TYPE = b"temporal.api.sdk.v1.ExternalStorageReference"
DIRECTORY_DRIVER = "local.directory"
DEFAULT_OLDER_THAN = timedelta(days=1)
"""The default grace: blobs written or re-used within it are always kept."""


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


def references(message: Message) -> Iterator[str]:
    """The manifest digests of the directory store's references anywhere in `message`
    (a history event, or a whole history)."""
    for payload in _payloads(message):
        if payload.metadata.get("messageType") != REFERENCE_TYPE:
            continue
        try:
            body = json.loads(payload.data)
        except ValueError:
            continue
        claim = body.get("claimData") if isinstance(body, dict) else None
        digest = claim.get("manifest") if isinstance(claim, dict) else None
        if body.get("driverName") == DIRECTORY_DRIVER and isinstance(digest, str):
            yield digest


async def referenced(client: Client, report: GcReport) -> set[str]:
    """The manifest digests every execution of the client's namespace refers to."""
    found: set[str] = set()
    async for execution in client.list_workflows(""):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        try:
            async for event in handle.fetch_history_events():
                found.update(references(event))
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            continue  # deleted since it was listed: it needs nothing any more
        report.runs_scanned += 1
    report.referenced_manifests = len(found)
    return found


def needed_blobs(directory: Path, manifests: set[str], report: GcReport) -> set[str]:
    """The manifests and every chunk they list."""
    needed = set(manifests)
    for digest in manifests:
        path = _path(directory, digest)
        try:
            manifest = json.loads(path.read_bytes())
        except FileNotFoundError:
            report.missing_manifests.append(digest)
            continue
        except ValueError:
            continue  # not a manifest we wrote: keep it, look no further
        needed.update(c for c in manifest.get("chunks", []) if isinstance(c, str))
    return needed


def sweep(directory: Path, needed: set[str], *, older_than: timedelta, report: GcReport) -> None:
    """Remove (unless `report.dry_run`) the blobs not `needed` older than `older_than`."""
    cutoff = time.time() - older_than.total_seconds()
    for path in sorted(directory.glob("*/*")):
        name = path.name
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        partial = name.startswith(".") and name.endswith(".partial")
        if name in needed and not partial:
            report.kept_blobs += 1
            report.kept_bytes += stat.st_size
        elif stat.st_mtime > cutoff:
            report.young_blobs += 1
            report.young_bytes += stat.st_size
        elif _is_blob(name) or partial:
            report.removed_blobs += 1
            report.removed_bytes += stat.st_size
            if not report.dry_run:
                path.unlink(missing_ok=True)


async def collect_garbage(
    client: Client,
    directory: Path,
    *,
    older_than: timedelta = DEFAULT_OLDER_THAN,
    dry_run: bool = False,
) -> GcReport:
    """Mark what the client's namespace still refers to, then sweep `directory`."""
    if not directory.is_dir():
        raise PayloadStoreError(f"no payload store at {directory}")
    if older_than < timedelta(0):
        raise PayloadStoreError(f"older_than cannot be negative ({older_than})")
    report = GcReport(directory=str(directory), dry_run=dry_run)
    manifests = await referenced(client, report)
    needed = needed_blobs(directory, manifests, report)
    sweep(directory, needed, older_than=older_than, report=report)
    return report


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


def _path(directory: Path, digest: str) -> Path:
    return directory / digest[:2] / digest
