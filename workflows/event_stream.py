"""The run's live events: a Workflow Streams log (`temporalio.contrib.workflow_streams`)
on topic `events`, published by the workflow only, bounded, and carried across
continue-as-new. Workflow code (deterministic).

The stream's own publish signal is taken by the run (`take_published`): it accepts only
batches the gate found tagged by a model call of ours (`durable_agents.stream_gate`)
with deltas of the model call under way (its `ModelRequest.stream_key`, not a secret),
and numbers and stamps them itself; anything else is refused (in `refused_signals`). A delta is a
preview of what the model writes, never what the run records: the reply the run
records is the activity's result. Followers poll with the stream's update (or its query,
for a run that has ended); at most `FOLLOWERS` polls wait at once, so followers never
take the update slots a decision needs (Temporal keeps 10 in flight per run); a poll
that has waited `POLL_WAIT` gives its place to a new one (answered with no event: a
follower that went away frees its place, one still there polls again). A poll's
answer is recorded in the run's history: it carries at most `POLL_ANSWER_EVENTS`
events and `POLL_ANSWER_BYTES` bytes (a follower catches up with queries, which are
not recorded: `client.events`).

An event's `seq` is its offset in the stream plus one: numbered from 1, never reused,
monotonic across continue-as-new. Events are kept while there are at most
`EVENTS_KEPT` of them and `EVENT_BYTES_KEPT` bytes; older ones are trimmed.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import (
    PollInput,
    PollResult,
    PublishInput,
    WorkflowStream,
    WorkflowStreamState,
)
from temporalio.contrib.workflow_streams._types import TRUNCATED_OFFSET_ERROR_TYPE
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract, raw_payloads, step_events
    from durable_agents.workflows.payloads import problems
    from durable_agents.workflows.state import RunState

EVENTS_KEPT = 500
EVENT_BYTES_KEPT = 256 * 1024
FOLLOWERS = 4
"""Polls that may wait at once (each holds one of the run's in-flight update slots)."""
POLL_WAIT = timedelta(minutes=10)
"""How long a poll keeps its place against a new follower."""
POLL_ANSWER_EVENTS = 50
POLL_ANSWER_BYTES = 64 * 1024

KEYS_KEPT = 20
"""Keys of earlier model calls remembered: their late deltas are dropped, not refused."""
DELTAS_PER_BATCH = 100
"""The most deltas one publish signal may carry."""

_STATE = TypeAdapter(WorkflowStreamState)
_PUBLISHED = TypeAdapter(PublishInput)


class Delta(BaseModel):
    """An item the `call_model` activity publishes (before the run stamps it)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    type: Literal["text_delta", "model_retry"]
    key: str = Field(min_length=1, max_length=100)
    attempt: int = Field(ge=1)
    text: str | None = Field(None, max_length=contract.MAX_DELTA_CHARS)
    call_id: str | None = Field(None, max_length=200)
    tool: str | None = Field(None, max_length=200)

    @model_validator(mode="after")
    def _shape(self) -> Delta:
        if self.type == "text_delta" and self.text is None:
            raise ValueError("a text_delta carries text")
        if self.type == "model_retry" and (self.attempt < 2 or self.text or self.call_id):
            raise ValueError("a model_retry is an attempt after the first, without text")
        return self


class RunStream:
    """The stream of one workflow run; construct it only in `@workflow.init`."""

    def __init__(self, carried: Any, *, announced: int = 0) -> None:
        """`carried`: the log the previous workflow run of this run carried over;
        `announced`: the newest `seq` the run has given an event (`RunState.notices`),
        which the log starts after when none was carried (a run of an earlier build
        continued as new): a number is never given twice (webhook ids are made of it)."""
        prior = _carried_state(carried)
        if prior is None and announced > 0:
            prior = WorkflowStreamState(log=[], base_offset=announced)
        self._stream = WorkflowStream(prior_state=prior)
        self._topic = self._stream.topic(contract.EVENTS_TOPIC)
        workflow.set_signal_handler(contract.STREAM_PUBLISH_SIGNAL, None)
        workflow.set_update_handler(contract.STREAM_POLL, self._poll, validator=self._validate_poll)
        self._base = prior.base_offset if prior is not None else 0
        self._sizes = [len(item.data) * 3 // 4 for item in prior.log] if prior else []
        self._waiting: dict[int, datetime] = {}
        """The polls waiting, by number, with when each began (oldest first)."""
        self._given_up: set[int] = set()
        """Waiting polls to answer now, with what there is (their place was taken)."""
        self._polls = 0
        self._detaching = False
        self._expected: tuple[str, int] | None = None
        """The key of the model call under way that may publish, and its turn."""
        self._old_keys: list[str] = []
        self._sequences: dict[str, int] = {}
        """The last batch sequence taken from each publisher of the current call."""
        self._attempt = 0
        """The newest attempt of the current call that has published."""

    @property
    def next_seq(self) -> int:
        """The `seq` the next event gets."""
        return self._base + len(self._sizes) + 1

    def publish(self, event: dict[str, Any]) -> None:
        """Append `event` (its `seq` must be `next_seq`), trimming the oldest beyond
        the bounds."""
        if event.get("seq") != self.next_seq:
            raise ValueError(f"event seq {event.get('seq')} is not {self.next_seq}")
        try:
            payload = workflow.payload_converter().to_payloads([event])[0]
        except ValueError:  # text no UTF-8 holds (a lone surrogate a model escaped): it
            # failed every workflow task of the run once; shown as U+FFFD instead
            payload = workflow.payload_converter().to_payloads([_encodable(event)])[0]
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

    def expect_deltas(self, key: str, *, turn: int) -> None:
        """A model call with `key` starts: its activity may publish deltas of `turn`."""
        self.close_deltas()
        self._expected = (key, turn)

    def close_deltas(self) -> None:
        """The model call is over: its late deltas are dropped."""
        if self._expected is not None:
            self._old_keys = [*self._old_keys, self._expected[0]][-KEYS_KEPT:]
        self._expected, self._sequences, self._attempt = None, {}, 0

    def take_published(
        self, args: Sequence[RawValue], state: RunState, *, now: datetime
    ) -> str | None:
        """Publish the deltas of a publish signal (numbered, stamped); why it is
        refused, or None. A batch sent again (the activity retried its signal) and the
        late deltas of an earlier call are dropped. The gate's verdict comes last: a
        batch is taken when it says so (or, on a replayer without keys, unchecked)."""
        *args, said = args or [raw_payloads.NONE]
        verdict = raw_payloads.as_json(said)
        given = verdict if isinstance(verdict, dict) else {}
        if given.get(contract.STREAM_VERDICT) not in ("taken", "unchecked"):
            return str(given.get("why", "the gate did not check it"))
        if len(args) != 1:
            return f"{len(args)} arguments; the signal takes one payload"
        try:
            batch = _PUBLISHED.validate_python(raw_payloads.as_json(args[0]))
        except ValidationError as err:
            return f"not a Workflow Streams publish: {problems(err)}"
        if len(batch.items) > DELTAS_PER_BATCH:
            return f"{len(batch.items)} items: at most {DELTAS_PER_BATCH} a batch"
        deltas = []
        for entry in batch.items:
            delta = _delta(entry.topic, entry.data)
            if isinstance(delta, str):
                return delta
            deltas.append(delta)
        keys = {d.key for d in deltas}
        if keys and keys <= set(self._old_keys):
            return None  # late: the call is over
        if self._expected is None or keys != {self._expected[0]}:
            return "not a delta of the model call under way (its key does not match)"
        if batch.sequence <= self._sequences.get(batch.publisher_id, -1):
            return None  # sent again
        if batch.publisher_id not in self._sequences and len(self._sequences) >= KEYS_KEPT:
            return f"more than {KEYS_KEPT} publishers for one model call"
        self._sequences[batch.publisher_id] = batch.sequence
        turn = self._expected[1]
        for delta in deltas:
            if delta.attempt < self._attempt:
                continue  # an earlier attempt still sending: its text is void
            self._attempt = delta.attempt
            fields = delta.model_dump(exclude={"key"}, exclude_none=True)
            event = {**fields, "turn": turn}
            self.publish(step_events.stamped(state, event, seq=self.next_seq, now=now))
        return None

    def carried(self) -> dict[str, Any]:
        """The stream's state for the next workflow run (JSON), followers released."""
        self.release_followers()
        carried: dict[str, Any] = _STATE.dump_python(self._stream.get_state(), mode="json")
        return carried

    def release_followers(self) -> None:
        """Let waiting polls return, and refuse new ones (the run is ending)."""
        self._detaching = True
        self._stream.detach_pollers()

    async def _poll(self, request: PollInput) -> PollResult:
        """Wait for an event at `from_offset` or later, then answer what there is."""
        number = self._polls
        self._polls += 1
        if len(self._waiting) >= FOLLOWERS:
            oldest = self._stale()
            if oldest is not None:
                self._given_up.add(oldest)
        self._waiting[number] = workflow.now()
        try:
            await workflow.wait_condition(
                lambda: (
                    self._detaching
                    or number in self._given_up
                    or request.from_offset < self._base
                    or request.from_offset < self.next_seq - 1
                )
            )
        finally:
            self._waiting.pop(number, None)
            self._given_up.discard(number)
        if 0 < request.from_offset < self._base:
            raise ApplicationError(
                f"events before offset {self._base} were trimmed", type=TRUNCATED_OFFSET_ERROR_TYPE
            )
        return _bounded(self._stream._collect_batch(request))

    def _stale(self) -> int | None:
        """The oldest poll that has waited `POLL_WAIT` and still waits, if any."""
        now = workflow.now()
        return next(
            (
                n
                for n, began in self._waiting.items()
                if n not in self._given_up and now - began >= POLL_WAIT
            ),
            None,
        )

    def _validate_poll(self, request: PollInput) -> None:
        self._stream._validate_poll(request)  # refused while the run hands over or ends
        end = self.next_seq - 1
        if not 0 <= request.from_offset <= end:
            raise ApplicationError(
                f"from_offset {request.from_offset} is not an offset of this run's events "
                f"(0 to {end})",
                type=contract.ERROR_INVALID_INPUT,
                non_retryable=True,
            )
        if len(self._waiting) - len(self._given_up) >= FOLLOWERS and self._stale() is None:
            raise ApplicationError(
                f"{FOLLOWERS} followers already wait on this run's events: share one "
                "subscription, or read what there is now (agentctl watch RUN_ID --after SEQ)",
                type=contract.ERROR_TOO_MANY_FOLLOWERS,
                non_retryable=True,
            )


def _delta(topic: str, data: str) -> Delta | str:
    """A published item as a `Delta`, or why it is not one."""
    if topic != contract.EVENTS_TOPIC:
        return f"topic {topic[:50]!r}: only {contract.EVENTS_TOPIC!r} is published to"
    try:
        payload = Payload.FromString(base64.b64decode(data, validate=True))
    except Exception:  # not base64, or not a serialized payload
        return "not a delta: its data is not a base64 Temporal payload"
    try:
        return Delta.model_validate(workflow.payload_converter().from_payload(payload))
    except ValidationError as err:
        return f"not a delta: {problems(err)}"
    except Exception as err:  # not JSON, or another encoding
        return f"not a delta: its payload does not decode ({type(err).__name__})"


def _bounded(answer: PollResult) -> PollResult:
    """`answer` with at most `POLL_ANSWER_EVENTS` events and `POLL_ANSWER_BYTES` bytes
    (always one); the rest comes with the next poll (`more_ready`)."""
    size = 0
    for count, item in enumerate(answer.items):
        size += len(item.data)
        if count and (count >= POLL_ANSWER_EVENTS or size > POLL_ANSWER_BYTES):
            kept = answer.items[:count]
            return PollResult(items=kept, next_offset=item.offset, more_ready=True)
    return answer


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


_SURROGATE = re.compile("[\ud800-\udfff]")


def _encodable(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(v) for v in value]
    return value
