"""Erasure on request (`agentctl erase RUN_ID`): a run's Temporal executions, and every
payload-store blob only it used, removed, with a report of what went and what stayed.

A run is a workflow id: every execution Temporal keeps under it (the workflow runs of
one chain of continue-as-new, and earlier runs that reused the id), and the webhook
deliveries it started (child workflows that carry its events), are erased; every one
must have ended (a running one is refused). Its blobs are the manifests its histories
refer to and the chunks they list (`store_gc`); a blob is kept when another execution
of the namespace refers to it (the directory store is content-addressed: two runs
that sent the same text share it), or when it was written or re-used after the run
ended or within `RECENT` (a run the scan has not seen yet may need it; this margin
also covers clocks that disagree). In an S3 store (`dataplane.s3_gc`) the objects the
SDK's driver keyed by one of the erased executions (`.../wi/ID/ri/RUN/...`) go whether
history names them or not (a state query's answer is stored there too), and objects
keyed by no execution (`ri/null`: what a client stored, which another execution of
the same id may share) only when the run's history names them and no other does.
Blobs go first, then the executions, so an erasure that stops half-way can be run
again. Temporal deletes an execution in the background once asked (the dev server
within about 30 s).

Not reached: what the run sent elsewhere (webhook receivers, the model provider, logs),
archived histories, a directory store's blobs that only a state query stored (`store
gc` removes them once unreferenced), and schedules' stored inputs (not scanned:
erase no run a schedule starts from a stored input).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.dataplane.payload_store import PayloadStoreError
from durable_agents.dataplane.s3_gc import (
    bucket_now,
    namespace_prefix,
    needed_keys,
    objects,
    remove,
    run_marker,
    s3_client,
    s3_references,
)
from durable_agents.dataplane.store_gc import (
    GcReport,
    blob_path,
    needed_blobs,
    references,
    scan_histories,
    store_now,
)
from durable_agents.workflows.contract import WORKFLOW_TYPE

RECENT = timedelta(hours=1)
"""Blobs written or re-used this recently are kept, whenever the run ended."""


@dataclass
class EraseReport:
    """What an erasure removed (or asked Temporal to delete) and kept."""

    run_id: str
    dry_run: bool
    executions: list[str] = field(default_factory=list)
    """The executions whose deletion was asked (`workflow id/run id`): the run's, and
    its webhook deliveries'."""
    removed_blobs: int = 0
    removed_bytes: int = 0
    shared_blobs: int = 0
    """Blobs of the run that another execution also refers to: kept."""
    newer_blobs: int = 0
    """Blobs of the run written or re-used after it ended, or within `RECENT`: kept."""
    missing_blobs: int = 0
    """Blobs the run referred to that the store no longer has."""
    errors: list[str] = field(default_factory=list)
    """What could not be removed or deleted, and why."""
    runs: list[str] = field(default_factory=list)
    """The runs erased: the one asked for, and its copies (`with_copies`)."""


async def erase(
    client: Client,
    run_id: str,
    store: Path | str | None,
    *,
    dry_run: bool = False,
    session: Any = None,
    with_copies: bool = False,
) -> EraseReport:
    """Erase the run `run_id` and the blobs only it used of `store` (a directory, or an
    S3 bucket's name; `session`: its aioboto3 session); `with_copies`: and every run
    resumed or forked from it, and from those (`copies_of`), as one. Raises
    `PayloadStoreError` with what stops it; what fails half-way is in the report's
    `errors`."""
    report = EraseReport(run_id=run_id, dry_run=dry_run)
    runs = [run_id, *(await copies_of(client, run_id) if with_copies else [])]
    report.runs = runs
    executions = [e for one in runs for e in await _executions(client, one)]
    ended = max((e.close_time for e in executions if e.close_time is not None), default=None)
    erased = {(e.id, e.run_id) for e in executions}
    find = _finder(store)
    mine: set[str] = set()
    for workflow_id, execution_run in sorted(erased):
        handle = client.get_workflow_handle(workflow_id, run_id=execution_run)
        async for event in handle.fetch_history_events():
            mine |= find(event)
    if store is not None:
        others = await scan_histories(client, find, skip=erased)
        if isinstance(store, Path):
            if mine:
                await asyncio.to_thread(_remove_blobs, store, mine, others, ended, report)
        else:
            await _remove_objects(client, store, erased, mine, others, ended, report, session)
    # Copies before the run they came from, so that an erasure that stops here can be
    # run again: the run is still there to find its copies by.
    order = {run: position for position, run in enumerate(runs)}
    for workflow_id, execution_run in sorted(
        erased,
        key=lambda e: (-order.get(e[0], len(runs)), e[0], e[1]),  # deliveries first
    ):
        if not dry_run:
            try:
                await _delete(client, workflow_id, execution_run)
            except RPCError as err:
                report.errors.append(f"execution {workflow_id}/{execution_run}: {err.message}")
                break
        report.executions.append(f"{workflow_id}/{execution_run}")
    return report


async def copies_of(client: Client, run_id: str) -> list[str]:
    """The runs (workflow ids) resumed or forked from `run_id`, and from those: each
    one's start input names the run its snapshot came from (`resume_from.run_id`)."""
    sources: dict[str, set[str]] = {}
    unreadable: list[str] = []
    async for execution in client.list_workflows(f"WorkflowType = '{WORKFLOW_TYPE}'"):
        handle = client.get_workflow_handle(execution.id, run_id=execution.run_id)
        try:
            async for event in handle.fetch_history_events(page_size=1):
                started = event.workflow_execution_started_event_attributes
                break
            else:
                continue
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND:
                continue
            raise
        if started.continued_execution_run_id:  # a continue-as-new: the same run
            continue
        source = await _snapshot_source(client, list(started.input.payloads))
        if source is _UNREADABLE:
            unreadable.append(execution.id)
        elif isinstance(source, str) and source != execution.id:
            sources.setdefault(source, set()).add(execution.id)
    if unreadable:
        raise PayloadStoreError(
            f"the start input of {len(unreadable)} runs ({unreadable[0]}, ...) cannot be "
            "read here (payload store or codec keys): which of them copy this run cannot "
            "be known, nothing erased"
        )
    found: list[str] = []
    frontier = [run_id]
    while frontier:
        for copy in sorted(sources.get(frontier.pop(), set())):
            if copy != run_id and copy not in found:
                found.append(copy)
                frontier.append(copy)
    return found


_UNREADABLE = object()


async def _snapshot_source(client: Client, payloads: list[Any]) -> object:
    """The run a start input's snapshot came from; None without a snapshot;
    `_UNREADABLE` when this client cannot read it (store or codec keys missing)."""
    if len(payloads) != 1:
        return None
    try:
        [value] = await client.data_converter.decode(payloads)
    except Exception:  # a store or codec failure
        return _UNREADABLE
    resumed = value.get("resume_from") if isinstance(value, dict) else None
    source = resumed.get("run_id") if isinstance(resumed, dict) else None
    return source if isinstance(source, str) else None


async def _executions(client: Client, run_id: str) -> list[Any]:
    """Every execution of the run and of its webhook deliveries; refused if any is
    still running."""
    try:  # the newest execution, from the server itself (visibility may lag)
        latest = await client.get_workflow_handle(run_id).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise PayloadStoreError(
                f"no run with id {run_id!r} in namespace {client.namespace!r}"
            ) from None
        raise
    quoted = _quoted(run_id)
    listed = [e async for e in client.list_workflows(f"WorkflowId = '{quoted}'")]
    children = [e async for e in client.list_workflows(f"ParentWorkflowId = '{quoted}'")]
    executions = [latest, *(e for e in listed if e.id == run_id and e.run_id != latest.run_id)]
    running = [e for e in executions if e.status in (None, WorkflowExecutionStatus.RUNNING)]
    if running:
        raise PayloadStoreError(
            f"run {run_id!r} is still running: cancel it first (agentctl cancel {run_id})"
        )
    busy = [e.id for e in children if e.status == WorkflowExecutionStatus.RUNNING]
    if busy:
        raise PayloadStoreError(
            f"{len(busy)} webhook deliveries of run {run_id!r} still run ({busy[0]}...): "
            "erase it once they have delivered or given up (or terminate them)"
        )
    return [*executions, *children]


def _finder(store: Path | str | None) -> Callable[[Any], set[str]]:
    """What names the store's manifests in a history event."""
    if isinstance(store, str):
        return lambda event: s3_references(event, store)
    return lambda event: set(references(event))


def _remove_blobs(
    directory: Path,
    mine: set[str],
    others: set[str],
    ended: datetime | None,
    report: EraseReport,
) -> None:
    theirs_seen = GcReport(directory=str(directory), dry_run=True)
    theirs = needed_blobs(directory, others, theirs_seen)
    if theirs_seen.unreadable_manifests:  # what they list cannot be known: keep it all
        raise PayloadStoreError(
            f"{len(theirs_seen.unreadable_manifests)} blobs other runs refer to are no "
            "manifest this store wrote: what they share with this run cannot be known, "
            "nothing removed"
        )
    ours_seen = GcReport(directory=str(directory), dry_run=True)
    ours = needed_blobs(directory, mine, ours_seen)
    report.missing_blobs = len(ours_seen.missing_manifests) + len(ours_seen.missing_chunks)
    cutoff = _cutoff(ended, store_now(directory))
    for digest in sorted(ours):
        path = blob_path(directory, digest)
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        if digest in theirs:
            report.shared_blobs += 1
        elif stat.st_mtime > cutoff:
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
    client: Client,
    bucket: str,
    erased: set[tuple[str, str]],
    mine: set[str],
    others: set[str],
    ended: datetime | None,
    report: EraseReport,
    session: Any,
) -> None:
    prefix = namespace_prefix(client.namespace)
    own = [run_marker(w, r) for w, r in erased]
    async with s3_client(session) as s3:
        versioning = await s3.get_bucket_versioning(Bucket=bucket)
        if versioning.get("Status") in ("Enabled", "Suspended"):
            raise PayloadStoreError(
                f"s3://{bucket} keeps object versions: deleting an object there leaves its "
                "data in an older version, so erase refuses (delete the versions with the "
                "bucket's own tools, or a lifecycle rule)"
            )
        theirs_seen = GcReport(directory=f"s3://{bucket}", dry_run=True)
        theirs = await needed_keys(s3, bucket, others, theirs_seen)
        ours_seen = GcReport(directory=f"s3://{bucket}", dry_run=True)
        ours = await needed_keys(s3, bucket, mine, ours_seen)
        report.missing_blobs = len(ours_seen.missing_manifests)
        cutoff = _cutoff(ended, (await bucket_now(s3, bucket)).timestamp())
        doomed: dict[str, int] = {}
        for found in [o async for o in objects(s3, bucket, prefix)]:
            key = found["Key"]
            scoped = any(marker in key for marker in own)
            if not scoped and key not in ours:
                continue  # not this run's
            if key in theirs:
                report.shared_blobs += 1
            elif not scoped and found["LastModified"].timestamp() > cutoff:
                report.newer_blobs += 1  # shared by key (`ri/null`): maybe by a new run
            else:
                doomed[key] = found["Size"]
        failed = GcReport(directory=f"s3://{bucket}", dry_run=report.dry_run)
        if not report.dry_run:
            await remove(s3, bucket, sorted(doomed), failed)
        gone = {k: size for k, size in doomed.items() if not _failed(k, failed.errors)}
        report.removed_blobs += len(gone)
        report.removed_bytes += sum(gone.values())
        report.errors += failed.errors


def _failed(key: str, errors: list[str]) -> bool:
    return any(e.startswith(f"{key}: ") for e in errors)


def _cutoff(ended: datetime | None, now: float) -> float:
    """Blobs modified after this (the store's clock) are kept: after the run ended, or
    within `RECENT` of now, whichever is earlier."""
    recent = now - RECENT.total_seconds()
    return recent if ended is None else min(ended.timestamp(), recent)


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
