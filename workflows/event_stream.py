"""The run's live events: a Workflow Streams log (`temporalio.contrib.workflow_streams`)
on topic `events`, published by the workflow only, bounded, and carried across
continue-as-new. Workflow code (deterministic).

The stream's own publish signal is taken away: an event in this log says what the
run did, so no signaler may add one (it reaches the run's signal inbox and is
refused as an unknown signal). Followers poll with the stream's update (or its query,
for a run that has ended); at most `FOLLOWERS` polls wait at once, so followers never
take the update slots a decision needs (Temporal keeps 10 in flight per run).

An event's `seq` is its offset in the stream plus one: numbered from 1, never reused,
monotonic across continue-as-new. Events are kept while there are at most
`EVENTS_KEPT` of them and `EVENT_BYTES_KEPT` bytes; older ones are trimmed.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter, ValidationError
from temporalio import workflow
from temporalio.contrib.workflow_streams import (
    PollInput,
    PollResult,
    WorkflowStream,
    WorkflowStreamState,
)
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract

EVENTS_KEPT = 500
EVENT_BYTES_KEPT = 256 * 1024
FOLLOWERS = 4
"""Polls that may wait at once (each holds one of the run's in-flight update slots)."""

_STATE = TypeAdapter(WorkflowStreamState)


class RunStream:
    """The stream of one workflow run; construct it only in `@workflow.init`."""

    def __init__(self, carried: Any) -> None:
        prior = _carried_state(carried)
        self._stream = WorkflowStream(prior_state=prior)
        self._topic = self._stream.topic(contract.EVENTS_TOPIC)
        workflow.set_signal_handler(contract.STREAM_PUBLISH_SIGNAL, None)
        workflow.set_update_handler(contract.STREAM_POLL, self._poll, validator=self._validate_poll)
        self._base = prior.base_offset if prior is not None else 0
        self._sizes = [len(item.data) * 3 // 4 for item in prior.log] if prior else []
        self._polls = 0

    @property
    def next_seq(self) -> int:
        """The `seq` the next event gets."""
        return self._base + len(self._sizes) + 1

    def publish(self, event: dict[str, Any]) -> None:
        """Append `event` (its `seq` must be `next_seq`), trimming the oldest beyond
        the bounds."""
        if event.get("seq") != self.next_seq:
            raise ValueError(f"event seq {event.get('seq')} is not {self.next_seq}")
        payload = workflow.payload_converter().to_payloads([event])[0]
        self._topic.publish(payload)
        self._sizes.append(payload.ByteSize())
        trim = 0
        kept_bytes = sum(self._sizes)
        while len(self._sizes) - trim > 1 and (
            len(self._sizes) - trim > EVENTS_KEPT or kept_bytes > EVENT_BYTES_KEPT
        ):
            kept_bytes -= self._sizes[trim]
            trim += 1
        if trim:
            self._base += trim
            self._sizes = self._sizes[trim:]
            self._stream.truncate(self._base)

    def carried(self) -> dict[str, Any]:
        """The stream's state for the next workflow run (JSON), followers released."""
        self._stream.detach_pollers()
        carried: dict[str, Any] = _STATE.dump_python(self._stream.get_state(), mode="json")
        return carried

    def release_followers(self) -> None:
        """Let waiting polls return, and refuse new ones (the run is ending)."""
        self._stream.detach_pollers()

    async def _poll(self, request: PollInput) -> PollResult:
        self._polls += 1
        try:
            return await self._stream._on_poll(request)
        finally:
            self._polls -= 1

    def _validate_poll(self, request: PollInput) -> None:
        self._stream._validate_poll(request)
        if self._polls >= FOLLOWERS:
            raise ApplicationError(
                f"{FOLLOWERS} followers already wait on this run's events: share one "
                "subscription (agentctl serve), or read once (agentctl watch without "
                "--follow)",
                type=contract.ERROR_TOO_MANY_FOLLOWERS,
                non_retryable=True,
            )


def _carried_state(carried: Any) -> WorkflowStreamState | None:
    """The stream state the previous workflow run carried over, when this run is its
    continuation (a start input's own `events` is never taken: the log is the run's)."""
    if carried is None or workflow.info().continued_run_id is None:
        return None
    try:
        return _STATE.validate_python(carried)
    except ValidationError as err:  # written by our own continue-as-new: not expected
        workflow.logger.warning("the carried event log does not read, starting afresh: %s", err)
        return None
