"""Erasure on request (`agentctl erase RUN_ID`): a run's Temporal executions, and every
payload-store blob only it used, removed, with a report of what went and what stayed.

A run is a workflow id: every execution Temporal keeps under it (the workflow runs of
one chain of continue-as-new, and earlier runs that reused the id) is erased, and
every one must have ended (a running one is refused: cancel it first). Its blobs are
the manifests its histories refer to and the chunks they list (`store_gc`); a blob is
kept when another execution of the namespace refers to it (content-addressed: two
runs that sent the same text share it), or when it was written or re-used after the
run ended (a run the scan has not seen yet may need it). Blobs go first, then the
executions, so an erasure that stops half-way can be run again.

A directory store or an S3 bucket (`dataplane.s3_gc`), as `store gc`; without a
payload store only the executions go. Temporal deletes an execution in the
background once asked (the dev server within about 30 s): its history and its
visibility entry go then.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.dataplane.payload_store import PayloadStoreError
from durable_agents.dataplane.s3_gc import needed_keys, remove, s3_client, s3_references
from durable_agents.dataplane.store_gc import GcReport, blob_path, needed_blobs, references


@dataclass
class EraseReport:
    """What an erasure removed and kept."""

    run_id: str
    dry_run: bool
    executions: list[str] = field(default_factory=list)
    """The run ids (Temporal's) of the executions erased."""
    removed_blobs: int = 0
    removed_bytes: int = 0
    shared_blobs: int = 0
    """Blobs of the run that another execution also refers to: kept."""
    newer_blobs: int = 0
    """Blobs of the run written or re-used after it ended: kept."""
    missing_blobs: int = 0
    """Blobs the run referred to that the store no longer has."""
    errors: list[str] = field(default_factory=list)


async def erase(
    client: Client,
    run_id: str,
    store: Path | str | None,
    *,
    dry_run: bool = False,
    session: Any = None,
) -> EraseReport:
    """Erase the run `run_id` (all its executions; each must have ended) and the blobs
    only it used of `store` (a directory, or an S3 bucket's name; `session`: its
    aioboto3 session). Raises `PayloadStoreError` with what stops it."""
    report = EraseReport(run_id=run_id, dry_run=dry_run)
    try:  # the newest execution, from the server itself (visibility may lag)
        latest = await client.get_workflow_handle(run_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise PayloadStoreError(
                f"no run with id {run_id!r} in namespace {client.namespace!r}"
            ) from None
        raise
    query = f"WorkflowId = '{_quoted(run_id)}'"
    listed = [e async for e in client.list_workflows(query)]
    executions = [latest, *(e for e in listed if e.run_id != latest.run_id)]
    if any(e.status in (None, WorkflowExecutionStatus.RUNNING) for e in executions):
        raise PayloadStoreError(
            f"run {run_id!r} is still running: cancel it first (agentctl cancel {run_id})"
        )
    ended = max((e.close_time for e in executions if e.close_time is not None), default=None)
    find = _finder(store)
    mine: set[str] = set()
    for execution in executions:
        handle = client.get_workflow_handle(run_id, run_id=execution.run_id)
        async for event in handle.fetch_history_events():
            mine |= find(event)
    if store is not None and mine:
        others = await _referenced_elsewhere(client, run_id, find)
        if isinstance(store, Path):
            await asyncio.to_thread(_remove_blobs, store, mine, others, ended, report)
        else:
            await _remove_objects(store, mine, others, ended, report, session)
    for execution in executions:
        if not dry_run:
            await _delete(client, run_id, execution.run_id)
        report.executions.append(execution.run_id)
    return report


def _finder(store: Path | str | None) -> Callable[[Any], set[str]]:
    """What names the store's manifests in a history event."""
    if isinstance(store, str):
        return lambda event: s3_references(event, store)
    return lambda event: set(references(event))


async def _referenced_elsewhere(
    client: Client, run_id: str, find: Callable[[Any], set[str]]
) -> set[str]:
    """The manifests every execution of another workflow id refers to."""
    found: set[str] = set()
    async for execution in client.list_workflows(""):
        if execution.id == run_id:
            continue
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        try:
            async for event in handle.fetch_history_events():
                found |= find(event)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
    return found


def _remove_blobs(
    directory: Path,
    mine: set[str],
    others: set[str],
    ended: datetime | None,
    report: EraseReport,
) -> None:
    scratch = GcReport(directory=str(directory), dry_run=True)
    theirs = needed_blobs(directory, others, scratch)
    ours = needed_blobs(directory, mine, scratch)
    report.missing_blobs = len(scratch.missing_manifests) + len(scratch.missing_chunks)
    cutoff = ended.timestamp() if ended is not None else None
    for digest in sorted(ours):
        path = blob_path(directory, digest)
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        if digest in theirs:
            report.shared_blobs += 1
        elif cutoff is not None and stat.st_mtime > cutoff:
            report.newer_blobs += 1
        else:
            if not report.dry_run:
                try:
                    path.unlink()
                except OSError as err:
                    report.errors.append(f"{path}: {err.strerror}")
                    continue
            report.removed_blobs += 1
            report.removed_bytes += stat.st_size


async def _remove_objects(
    bucket: str,
    mine: set[str],
    others: set[str],
    ended: datetime | None,
    report: EraseReport,
    session: Any,
) -> None:
    scratch = GcReport(directory=f"s3://{bucket}", dry_run=True)
    async with s3_client(session) as s3:
        theirs = await needed_keys(s3, bucket, others, scratch)
        ours = await needed_keys(s3, bucket, mine, scratch)
        report.missing_blobs = len(scratch.missing_manifests)
        doomed = []
        for key in sorted(ours - theirs):
            try:
                found = await s3.head_object(Bucket=bucket, Key=key)
            except s3.exceptions.ClientError:
                report.missing_blobs += 1
                continue
            if ended is not None and found["LastModified"] > ended:
                report.newer_blobs += 1
                continue
            doomed.append(key)
            report.removed_blobs += 1
            report.removed_bytes += found["ContentLength"]
        report.shared_blobs = len(ours & theirs)
        if not report.dry_run:
            errors = GcReport(directory=f"s3://{bucket}", dry_run=False)
            await remove(s3, bucket, doomed, errors)
            report.errors += errors.errors


async def _delete(client: Client, workflow_id: str, run_id: str) -> None:
    request = DeleteWorkflowExecutionRequest(
        namespace=client.namespace,
        workflow_execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
    )
    try:
        await client.workflow_service.delete_workflow_execution(request)
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:  # gone already: erased all the same
            raise


def _quoted(text: str) -> str:
    """`text` inside a visibility query's single quotes."""
    return text.replace("\\", "\\\\").replace("'", "\\'")
