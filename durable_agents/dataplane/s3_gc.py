"""Payload-store retention for an S3 store (`AGENT_PAYLOAD_STORE=s3://BUCKET`): as
`store_gc` does for a directory, mark what every execution the namespace still has
refers to, then sweep the bucket's objects of the namespace that nothing refers to
and that are older than the grace.

The SDK's S3 driver keys each object by the namespace, the workflow run that stored
it and the SHA-256 of its bytes (`v0/ns/NS/wt/TYPE/wi/ID/ri/RUN/d/sha256/HASH`), under
our chunking (`payload_store.ChunkingDriver`): a reference in history names a
manifest object, and the manifest the chunk objects. Only the namespace's own prefix
is swept (`v0/ns/NS/`). An object is aged by its `LastModified`; the driver does not
write an object it finds already stored, so a payload stored again by a retried
activity keeps its first time: keep the grace longer than any activity's retries
last (the default, a day, is). For the same reason objects not keyed by one run are
left alone while they may be shared: a client's object for a workflow id (`ri/null`)
while an execution of that id exists, and an object keyed by its hash alone, always.
What `store_gc` says it does not scan holds here too.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import unquote

from google.protobuf.message import DecodeError
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.dataplane.payload_store import PayloadStoreError
from durable_agents.dataplane.store_gc import (
    DEFAULT_OLDER_THAN,
    MANIFEST_LIMIT,
    MIN_OLDER_THAN,
    GcReport,
    claims,
    scan_histories,
)

S3_DRIVER = "chunked.aws.s3driver"
DELETE_BATCH = 1000
"""Objects one DeleteObjects request removes at most (S3's own limit)."""


def s3_references(message: Any, bucket: str) -> set[str]:
    """The keys of the manifest objects in `bucket` that `message` refers to."""
    return {
        claim["key"]
        for driver, claim in claims(message)
        if driver == S3_DRIVER
        and claim.get("bucket") == bucket
        and isinstance(claim.get("key"), str)
    }


def namespace_prefix(namespace: str) -> str:
    """The key prefix of a namespace's objects, as the SDK's S3 driver writes it."""
    return f"v0/ns/{_encoded(namespace)}/"


def run_marker(workflow_id: str, run_id: str) -> str:
    """The part of a key that says which execution stored the object."""
    return f"/wi/{_encoded(workflow_id)}/ri/{_encoded(run_id)}/"


def _encoded(segment: str) -> str:
    from temporalio.contrib.aws.s3driver._driver import _percent_encode  # the driver's own

    return _percent_encode(segment) or "null"


_FALLBACK = re.compile(r"^v0/ns/[^/]+/d/")
"""An object keyed by its hash alone (a key past S3's 1,024 bytes): any run may share it,
and reusing it does not make it younger, so it is left alone."""
_CLIENT_SCOPED = re.compile(r"/wi/([^/]+)/ri/null/")
"""An object a client stored for a workflow id (its start input, a signal): no run's
own, so a later run of the same id may share it."""


async def referenced_keys(client: Client, bucket: str, report: GcReport) -> set[str]:
    """The manifest keys every execution of the client's namespace refers to."""
    return await scan_histories(client, lambda event: s3_references(event, bucket), report=report)


async def needed_keys(s3: Any, bucket: str, manifests: set[str], report: GcReport) -> set[str]:
    """The manifests and every chunk they list."""
    needed = set(manifests)
    for key in sorted(manifests):
        try:
            answer = await s3.get_object(Bucket=bucket, Key=key)
            body = await answer["Body"].read(MANIFEST_LIMIT)
        except s3.exceptions.NoSuchKey:
            report.missing_manifests.append(key)
            continue
        try:
            manifest = json.loads(Payload.FromString(body).data)
            chunks = manifest.get("chunks") if isinstance(manifest, dict) else None
        except (ValueError, DecodeError):  # not a payload, or not a manifest's
            chunks = None
        if not isinstance(chunks, list):
            report.unreadable_manifests.append(key)
            continue  # kept (it is referenced); what it lists cannot be known
        for chunk in chunks:
            if isinstance(chunk, dict) and chunk.get("bucket") == bucket:
                needed.add(str(chunk.get("key")))
    return needed


async def objects(s3: Any, bucket: str, prefix: str) -> AsyncIterator[dict[str, Any]]:
    """Every object under `prefix` (`Key`, `Size`, `LastModified`)."""
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    async for page in pages:
        for found in page.get("Contents", []):
            yield found


async def bucket_now(s3: Any, bucket: str) -> datetime:
    """The S3 server's own time (its `Date` header): objects are aged by its clock."""
    answer = await s3.head_bucket(Bucket=bucket)
    date = answer["ResponseMetadata"]["HTTPHeaders"].get("date")
    return parsedate_to_datetime(date) if date else datetime.now(UTC)


async def remove(s3: Any, bucket: str, keys: list[str], report: GcReport) -> set[str]:
    """Delete `keys`; those that could not be deleted (each also in `report.errors`)."""
    failed: set[str] = set()
    for start in range(0, len(keys), DELETE_BATCH):
        batch = [{"Key": k} for k in keys[start : start + DELETE_BATCH]]
        answer = await s3.delete_objects(Bucket=bucket, Delete={"Objects": batch, "Quiet": True})
        for error in answer.get("Errors", []):
            failed.add(str(error.get("Key")))
            report.errors.append(f"{error.get('Key')}: {error.get('Message')}")
    return failed


async def collect_s3_garbage(
    client: Client,
    bucket: str,
    *,
    older_than: timedelta = DEFAULT_OLDER_THAN,
    dry_run: bool = False,
    force: bool = False,
    session: Any = None,
) -> GcReport:
    """Mark what the client's namespace refers to in `bucket`, then sweep its prefix.
    Refused without `force` as `store_gc.collect_garbage` refuses. `session`: an
    aioboto3 session (default: one from the environment, as the workers' store)."""
    if older_than < timedelta(0):
        raise PayloadStoreError(f"older_than cannot be negative ({older_than})")
    if older_than < MIN_OLDER_THAN and not force:
        raise PayloadStoreError(
            f"a grace of {older_than} could remove payloads a worker stored a moment ago; "
            f"at least {MIN_OLDER_THAN} (or force)"
        )
    report = GcReport(directory=f"s3://{bucket}", dry_run=dry_run)
    manifests = await referenced_keys(client, bucket, report)
    prefix = namespace_prefix(client.namespace)
    async with s3_client(session) as s3:
        now = await bucket_now(s3, bucket)
        listed = [o async for o in objects(s3, bucket, prefix)]
        if not manifests and listed and not force:
            raise PayloadStoreError(
                f"no run of namespace {client.namespace!r} refers to s3://{bucket}/{prefix}, "
                "which holds payloads: nothing removed (force to collect anyway)"
            )
        needed = await needed_keys(s3, bucket, manifests, report)
        present = {o["Key"] for o in listed}
        report.missing_chunks = sorted(needed - present - set(report.missing_manifests))
        cutoff = now - older_than
        doomed: dict[str, int] = {}
        for found in listed:
            key = found["Key"]
            if key in needed:
                report.kept_blobs += 1
                report.kept_bytes += found["Size"]
            elif found["LastModified"] > cutoff:
                report.young_blobs += 1
                report.young_bytes += found["Size"]
            elif _FALLBACK.match(key) or await _id_in_use(client, key):
                report.other_files += 1  # shared by key, not by run: left alone
            else:
                doomed[key] = found["Size"]
        failed = await remove(s3, bucket, sorted(doomed), report) if not dry_run else set()
        report.removed_blobs = len(doomed) - len(failed)
        report.removed_bytes = sum(size for k, size in doomed.items() if k not in failed)
    return report


async def _id_in_use(client: Client, key: str) -> bool:
    """Whether `key` is a client's object for a workflow id that has an execution now:
    the driver does not rewrite an object it finds stored, so its age says nothing of
    a run of that id started since the scan."""
    match = _CLIENT_SCOPED.search(key)
    if match is None:
        return False
    try:
        await client.get_workflow_handle(unquote(match.group(1))).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


def s3_client(session: Any) -> Any:
    """An aioboto3 S3 client (an async context manager)."""
    if session is None:
        try:
            import aioboto3
        except ImportError as err:
            raise PayloadStoreError(
                f"an s3:// store needs `pip install 'temporalio[aioboto3]'` ({err})"
            ) from None
        session = aioboto3.Session()
    return session.client("s3")
