"""Reading a run's events (`workflows.event_stream`): once (a query: nothing enters
the run's history) or following it live (Workflow Streams' polling update, across
continue-as-new, until the run ends).

Events come as the pinned objects, `{"seq", "type", "at", ...}`, in `seq` order,
each once. Asked for the events after a `seq` older than the oldest the run keeps,
the reader starts at the oldest kept with a `truncated` event first, which says how
many were missed.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

from durable_agents.client.errors import AgentClientError
from durable_agents.workflows import contract
from temporalio.api.common.v1 import Payload
from temporalio.client import Client, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.contrib.workflow_streams import PollInput, PollResult, WorkflowStreamClient
from temporalio.exceptions import ApplicationError

FINAL = "run_finished"
NO_STREAM = (
    "run {run_id!r} publishes no events: it started on a build before run events "
    "(agentctl status and agentctl state still read it)"
)


async def read(client: Client, run_id: str, *, after: int = 0) -> AsyncIterator[dict[str, Any]]:
    """The events the run keeps after `after`, read at once (queries), then stop."""
    async for event in _read(client, run_id, _Gaps(run_id, after)):
        yield event


async def _read(client: Client, run_id: str, checker: _Gaps) -> AsyncIterator[dict[str, Any]]:
    handle = client.get_workflow_handle(run_id)
    converter = client.data_converter.payload_converter
    while True:
        try:
            answer = await handle.query(
                contract.STREAM_POLL,
                PollInput(topics=[contract.EVENTS_TOPIC], from_offset=checker.offset),
                result_type=PollResult,
            )
        except WorkflowQueryFailedError as err:
            raise _stream_error(run_id, err.message) from err
        for item in answer.items:
            for event in checker.take(item.offset, converter.from_payload(_payload(item.data))):
                yield event
        checker.offset = max(checker.offset, answer.next_offset)
        if not answer.more_ready:
            return


async def follow(
    client: Client, run_id: str, *, after: int = 0, poll_cooldown: timedelta | None = None
) -> AsyncIterator[dict[str, Any]]:
    """The run's events after `after`, as they happen, until the run finishes (its
    `run_finished` event) or ends otherwise (terminated, timed out). What the run
    already keeps is read with queries (not recorded in its history); then one poll
    at a time waits for what comes next."""
    checker = _Gaps(run_id, after)
    async for event in _read(client, run_id, checker):
        yield event
        if event.get("type") == FINAL:
            return
    stream = WorkflowStreamClient.create(client, run_id)
    cooldown = poll_cooldown if poll_cooldown is not None else timedelta(milliseconds=100)
    items = stream.subscribe(
        contract.EVENTS_TOPIC, from_offset=checker.offset, poll_cooldown=cooldown
    )
    try:
        async for item in items:
            for event in checker.take(item.offset, item.data):
                yield event
                if event.get("type") == FINAL:
                    return
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        kind = cause.type if isinstance(cause, ApplicationError) else None
        if kind == contract.ERROR_TOO_MANY_FOLLOWERS:
            raise AgentClientError(f"run {run_id!r}: {cause.message}") from err
        raise _stream_error(run_id, str(cause.message if cause else err)) from err
    except WorkflowQueryFailedError as err:
        raise _stream_error(run_id, err.message) from err
    finally:
        await items.aclose()


class _Gaps:
    """Checks each item against the `seq` expected next: the first one past a gap
    (events trimmed before they were read) comes after a `truncated` event."""

    def __init__(self, run_id: str, after: int) -> None:
        self._run_id = run_id
        self._next = after + 1
        self.offset = after
        """The stream offset to read from next."""

    def take(self, offset: int, data: object) -> list[dict[str, Any]]:
        seq = offset + 1
        if seq < self._next:  # already given (a poll answered twice): never twice
            return []
        if not isinstance(data, dict):
            raise AgentClientError(f"run {self._run_id!r}: event {seq} is not a JSON object")
        event: dict[str, Any] = {**data, "seq": seq}
        found = []
        if seq > self._next:
            found.append(truncated(self._run_id, missed=seq - self._next, first_kept=seq))
        self._next = seq + 1
        self.offset = max(self.offset, seq)
        return [*found, event]


def truncated(run_id: str, *, missed: int, first_kept: int) -> dict[str, Any]:
    """The event that stands for events trimmed before they were read (its `seq`:
    the last one missed, so resuming after it starts at the oldest kept)."""
    return {
        "seq": first_kept - 1,
        "type": "truncated",
        "at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "run_id": run_id,
        "missed": missed,
        "first_kept": first_kept,
    }


def _stream_error(run_id: str, message: str) -> AgentClientError:
    if contract.STREAM_POLL in message and ("handler" in message or "unknown" in message):
        return AgentClientError(NO_STREAM.format(run_id=run_id))
    return AgentClientError(f"run {run_id!r}: reading its events failed: {message}")


def _payload(wire: str) -> Payload:
    """An item of a poll answer: base64 of the serialized payload (Workflow Streams'
    wire form)."""
    return Payload.FromString(base64.b64decode(wire))
