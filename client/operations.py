"""Operating runs: find them by search attribute, watch, cancel, and register the
contract's search attributes on a namespace.

`RunOperations` is mixed into `AgentClient`; the models here are what its
methods return and what `agentctl list / watch / setup --json` print.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from durable_agents.client.errors import AgentClientError
from durable_agents.client.retries import ActivityRetry, retrying
from durable_agents.workflows import contract
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.payloads import PendingApproval, StatusView
from durable_agents.workflows.state import RunStatus
from pydantic import BaseModel
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
    ListSearchAttributesResponse,
)
from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.common import SearchAttributeKey
from temporalio.service import RPCError, RPCStatusCode

WATCH_INTERVAL = timedelta(seconds=0.5)
"""How often `watch` asks a run for its status."""
LIST_LIMIT = 100
"""Most runs `list_runs` returns unless told otherwise."""

_FINAL_VALUES = {s.value for s in RunStatus if s.is_final}
_WAITING = {RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_INPUT, RunStatus.PAUSED}


if TYPE_CHECKING:
    from durable_agents.client.agent_client import AgentClient


class SearchAttributeConflict(AgentClientError):
    """The namespace already has one of the contract's search attributes, with another type."""

    def __init__(self, namespace: str, name: str, found: str, wanted: str) -> None:
        super().__init__(
            f"namespace {namespace!r} already has search attribute {name} of type {found}; "
            f"the contract needs {wanted}. A search attribute's type cannot be changed: "
            f"remove it (temporal operator search-attribute remove --name {name}) "
            "if nothing else uses it, or use another namespace"
        )
        self.namespace = namespace
        self.name = name
        self.found = found
        self.wanted = wanted


class RunSummary(BaseModel):
    """One run as the visibility store sees it (`list_runs`, `agentctl list`)."""

    run_id: str
    """The workflow id."""
    agent: str | None = None
    """`AgentName`; None until the run's first workflow task has published it."""
    status: str
    """`AgentStatus`, or Temporal's own status (lower case) when the run ended without
    setting a final one (terminated, timed out) or has not set one yet."""
    turn: int | None = None
    """`AgentTurn`."""
    pending_approvals: int | None = None
    """`AgentPendingApprovals`."""
    started_at: datetime
    closed_at: datetime | None = None
    execution_status: str | None = None
    """Temporal's execution status (`RUNNING`, `COMPLETED`, `CANCELED`, `TERMINATED`...)."""


class SetupReport(BaseModel):
    """What `setup_search_attributes` did on a namespace."""

    namespace: str
    created: list[str] = []
    """Search attributes registered now."""
    existing: list[str] = []
    """Search attributes that were already there, with the right type."""


class WatchEvent(BaseModel):
    """One change seen by `watch` (`agentctl watch --json` prints one per line)."""

    run_id: str
    elapsed_seconds: float
    """Since the watch began."""
    view: StatusView
    done: bool = False
    """True on the last event: the run ended, or waits for a decision, a message or an unpause."""
    pending: list[PendingApproval] = []
    """On the last event of a run awaiting approval: the calls to decide."""
    closed: str | None = None
    """On the last event of a run that closed without a final status (terminated, timed
    out): Temporal's status, lower case; `view` is then the run's last status."""
    retrying: list[ActivityRetry] = []
    """The run's model or tool calls that failed at least once and are being retried
    (Temporal's pending-activity information: `client.retries`)."""


def list_query(
    *, status: str | None = None, agent: str | None = None, query: str | None = None
) -> str:
    """The visibility query of `list_runs`: agent runs, narrowed by status, agent and
    `query` (any visibility query, ANDed in parentheses).

    A run that was terminated or timed out keeps its last `AgentStatus`, so a status
    that is not final also asks for `ExecutionStatus = "Running"`."""
    parts = [f'WorkflowType = "{contract.WORKFLOW_TYPE}"']
    if status is not None:
        try:
            wanted = RunStatus(status)
        except ValueError:
            known = ", ".join(s.value for s in RunStatus)
            raise AgentClientError(f"unknown status {status!r}; one of: {known}") from None
        parts.append(f'{sa.AGENT_STATUS.name} = "{wanted.value}"')
        if not wanted.is_final:
            parts.append('ExecutionStatus = "Running"')
    if agent is not None:
        if not agent or any(c in agent for c in "\"'\\"):
            raise AgentClientError(f"invalid agent name {agent!r}")
        parts.append(f'{sa.AGENT_NAME.name} = "{agent}"')
    if query is not None and query.strip():
        parts.append(f"({query.strip()})")
    return " AND ".join(parts)


def summary_of(execution: WorkflowExecution) -> RunSummary:
    """A run's row from its visibility record."""
    attrs = execution.typed_search_attributes
    agent_status = attrs.get(sa.AGENT_STATUS)
    running = execution.status in (None, WorkflowExecutionStatus.RUNNING)
    if agent_status is None or (not running and agent_status not in _FINAL_VALUES):
        agent_status = _temporal_status(execution.status)
    return RunSummary(
        run_id=execution.id,
        agent=attrs.get(sa.AGENT_NAME),
        status=agent_status,
        turn=attrs.get(sa.AGENT_TURN),
        pending_approvals=attrs.get(sa.AGENT_PENDING_APPROVALS),
        started_at=execution.start_time,
        closed_at=execution.close_time,
        execution_status=execution.status.name if execution.status else None,
    )


def _temporal_status(status: WorkflowExecutionStatus | None) -> str:
    if status is None or status == WorkflowExecutionStatus.RUNNING:
        return RunStatus.RUNNING.value
    if status == WorkflowExecutionStatus.CANCELED:
        return RunStatus.CANCELLED.value
    return status.name.lower()


def _type_name(value: int) -> str:
    """`Keyword`, `Int`... as the `temporal` CLI spells search-attribute types."""
    name = IndexedValueType.Name(value).removeprefix("INDEXED_VALUE_TYPE_")
    return "".join(part.capitalize() for part in name.split("_"))


def create_commands(keys: tuple[SearchAttributeKey, ...] = sa.ALL) -> list[str]:
    """The `temporal operator search-attribute create` commands for `keys`."""
    return [
        f"temporal operator search-attribute create --name {k.name} "
        f"--type {_type_name(int(k.indexed_value_type))}"
        for k in keys
    ]


class RunOperations:
    """List, watch and cancel runs; set up a namespace: `AgentClient.operations`
    (the client's methods of the same names are thin wrappers)."""

    def __init__(self, agents: AgentClient) -> None:
        self._agents = agents

    async def list_runs(
        self,
        *,
        status: str | None = None,
        agent: str | None = None,
        query: str | None = None,
        limit: int = LIST_LIMIT,
    ) -> list[RunSummary]:
        """Agent runs of the namespace from the visibility store, newest first.

        `status` and `agent` filter on `AgentStatus` / `AgentName`; `query` is any
        visibility query (`AgentTurn > 3`, `StartTime > "2025-01-01T00:00:00Z"`).
        Visibility is eventually consistent: a change shows up a moment later.
        """
        text = list_query(status=status, agent=agent, query=query)
        try:
            return [
                summary_of(w) async for w in self._agents.client.list_workflows(text, limit=limit)
            ]
        except RPCError as err:
            if err.status == RPCStatusCode.INVALID_ARGUMENT:
                raise AgentClientError(f"invalid visibility query {text!r}: {err.message}") from err
            raise AgentClientError(f"cannot list runs: {err.status.name}: {err.message}") from err

    async def cancel(self, run_id: str, *, reason: str = "cancelled by agentctl") -> None:
        """Ask the run to stop. It ends in status `cancelled` and runs no pending tool call;
        a tool already running is cancelled too (heartbeating tools see it at once)."""
        handle = self._agents.client.get_workflow_handle(run_id)
        with self._agents.translating(run_id):
            # The server accepts a cancellation of a closed run silently: say so instead.
            described = await handle.describe()
            if described.status not in (None, WorkflowExecutionStatus.RUNNING):
                ended = _temporal_status(described.status)
                raise AgentClientError(f"run {run_id!r} has already ended ({ended})")
            await handle.cancel(reason=reason)

    async def watch(
        self,
        run_id: str,
        *,
        interval: timedelta = WATCH_INTERVAL,
        every_poll: bool = False,
    ) -> AsyncIterator[WatchEvent]:
        """The run's status as it changes (every poll with `every_poll`), until it ends
        or waits for a decision, a message or an unpause; the last event has `done` set.

        A run that closed without a final status (terminated, timed out) ends the watch
        too, with Temporal's status in `closed`."""
        began = time.monotonic()
        last: tuple[StatusView, list[ActivityRetry]] | None = None
        while True:
            view, closed, retrying = await self._status_or_closed(run_id)
            done = closed is not None or view.status.is_final or view.status in _WAITING
            event = WatchEvent(
                run_id=run_id,
                elapsed_seconds=round(time.monotonic() - began, 1),
                view=view,
                closed=closed,
                retrying=retrying,
            )
            if done:
                event.done = True
                if closed is None and view.status is RunStatus.AWAITING_APPROVAL:
                    event.pending = await self._agents.pending(run_id)
                yield event
                return
            if every_poll or (view, retrying) != last:
                yield event
            last = (view, retrying)
            await asyncio.sleep(interval.total_seconds())

    async def _status_or_closed(
        self, run_id: str
    ) -> tuple[StatusView, str | None, list[ActivityRetry]]:
        """The run's status, Temporal's status if it closed without a final one, and
        the calls it is retrying."""
        view = await self._agents.status(run_id)
        if view.status.is_final:
            return view, None, []
        with self._agents.translating(run_id):
            described = await self._agents.client.get_workflow_handle(run_id).describe()
        if described.status in (None, WorkflowExecutionStatus.RUNNING):
            return view, None, await retrying(described, self._agents.client.data_converter)
        view = await self._agents.status(run_id)  # it may have set its final status meanwhile
        return view, None if view.status.is_final else _temporal_status(described.status), []

    async def retrying(self, run_id: str) -> list[ActivityRetry]:
        """The run's model or tool calls that failed at least once and are being retried:
        attempt, last error (one line), next attempt (`client.retries`)."""
        with self._agents.translating(run_id):
            described = await self._agents.client.get_workflow_handle(run_id).describe()
        return await retrying(described, self._agents.client.data_converter)

    async def setup_search_attributes(self, *, namespace: str | None = None) -> SetupReport:
        """Register the contract's search attributes on the namespace (default: the
        client's). Idempotent; raises `SearchAttributeConflict` if one exists with
        another type. Needs the operator service (self-hosted or dev server; on
        Temporal Cloud use `tcld` or the Cloud UI)."""
        target = namespace or self._agents.client.namespace
        operator = self._agents.client.operator_service
        try:
            found = await operator.list_search_attributes(
                ListSearchAttributesRequest(namespace=target)
            )
            missing, existing = _compare(target, found)
            report = SetupReport(namespace=target, existing=existing)
            if missing:
                await operator.add_search_attributes(
                    AddSearchAttributesRequest(
                        namespace=target,
                        search_attributes={k.name: int(k.indexed_value_type) for k in missing},
                    )
                )
                report.created = [k.name for k in missing]
            return report
        except RPCError as err:
            raise AgentClientError(
                f"cannot set up search attributes on namespace {target!r}: "
                f"{err.status.name}: {err.message}"
            ) from err


async def check_search_attributes(client: Client) -> None:
    """Fail early, with the fix, if the client's namespace lacks a search attribute of
    the contract (`AgentClientError`) or has one of another type (`SearchAttributeConflict`)."""
    found = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    missing, _ = _compare(client.namespace, found)
    if missing:
        raise AgentClientError(
            f"namespace '{client.namespace}' lacks search attributes "
            f"{', '.join(k.name for k in missing)}; register them with `agentctl setup` "
            f"or: {'; '.join(create_commands(tuple(missing)))}"
        )


def _compare(
    namespace: str, found: ListSearchAttributesResponse
) -> tuple[list[SearchAttributeKey], list[str]]:
    """The contract's attributes the namespace lacks, and the names of those it has;
    raises `SearchAttributeConflict` for one it has with another type."""
    missing, existing = [], []
    for key in sa.ALL:
        wanted = int(key.indexed_value_type)
        have = found.custom_attributes.get(key.name, found.system_attributes.get(key.name))
        if have is None:
            missing.append(key)
        elif int(have) != wanted:
            raise SearchAttributeConflict(namespace, key.name, _type_name(have), _type_name(wanted))
        else:
            existing.append(key.name)
    return missing, existing
