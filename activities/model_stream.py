"""A streamed model reply's deltas, published to the run's events as they come
(`text_delta`, and `model_retry` first on a retried attempt): from the `call_model`
activity to its workflow, through Workflow Streams' publish signal
(`WorkflowStreamClient.from_within_activity`), batched every `INTERVAL`.

Each batch carries the workers' gate tag (`durable_agents.stream_gate`): the run takes
only batches our model calls made, never one sent from outside.

The deltas are a preview: the run records the activity's result, the whole reply, so
replay and snapshots never depend on them. Publishing never fails the model call: a
batch that cannot be sent (the run ended, the server is unreachable) is logged and
the reply goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import timedelta
from typing import Any

from durable_agents.workflows import contract
from temporalio import activity
from temporalio.client import WorkflowHandle
from temporalio.contrib.workflow_streams import PublishInput, WorkflowStreamClient

from durable_agents import gate, stream_gate

INTERVAL = timedelta(milliseconds=500)
"""How often the deltas written since the last batch are sent (one signal each)."""
GIVE_UP = timedelta(seconds=30)
"""How long a batch that cannot be sent is retried before it is dropped."""

logger = logging.getLogger(__name__)


class Deltas:
    """Collects a streamed reply's text and publishes it in batches: one delta per
    batch for the text and one per tool call for its arguments."""

    def __init__(self, key: str, *, interval: timedelta | None = None) -> None:
        self._key = key
        self._interval = (interval or INTERVAL).total_seconds()
        self._attempt = activity.info().attempt
        self._client = WorkflowStreamClient(
            _TaggingHandle.of_this_run(), client=activity.client(), max_retry_duration=GIVE_UP
        )
        """Sent by `_send` (the client's own flusher is not started)."""
        self._topic = self._client.topic(contract.EVENTS_TOPIC)
        self._pending: dict[tuple[str, str] | None, list[str]] = {}
        self._sender: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Deltas:
        if self._attempt > 1:  # what an earlier attempt streamed is void
            self._topic.publish(self._item("model_retry"))
        self._sender = asyncio.create_task(self._send_every_interval())
        return self

    async def __aexit__(self, *_exc: object) -> None:
        if self._sender is not None:
            self._sender.cancel()
            await asyncio.gather(self._sender, return_exceptions=True)
        await self._send()

    def text(self, piece: str, *, call: tuple[str, str] | None = None) -> None:
        """`piece` of the reply's text, or of the arguments of `call` (id, tool);
        TypeError if it is not text (a broken stream: the caller says so)."""
        if not isinstance(piece, str | None):
            raise TypeError(f"a streamed piece is {type(piece).__name__}, not text")
        if piece:
            self._pending.setdefault(call, []).append(piece)

    async def _send_every_interval(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            await self._send()

    async def _send(self) -> None:
        pending, self._pending = self._pending, {}
        for call, pieces in pending.items():
            extra = {"call_id": call[0], "tool": call[1]} if call else {}
            text, size = "".join(pieces), contract.MAX_DELTA_CHARS
            for start in range(0, len(text), size):
                self._topic.publish(
                    self._item("text_delta", text=text[start : start + size], **extra)
                )
        try:  # bounded: a hung call to the server never holds the model's reply
            await asyncio.wait_for(self._client.flush(), GIVE_UP.total_seconds())
        except Exception as err:  # a preview: never the model call's failure
            logger.warning("streamed text of a model call not published: %s", err)

    def _item(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "key": self._key, "attempt": self._attempt, **fields}


class _TaggingHandle(WorkflowHandle[Any, Any]):
    """The handle of this activity's run, whose publish signals carry the workers' tag
    over the batch (`durable_agents.stream_gate`); without the keys (an activity the
    gate did not admit), untagged: the run refuses them."""

    @classmethod
    def of_this_run(cls) -> _TaggingHandle:
        info = activity.info()
        if not info.workflow_id or not info.workflow_run_id:
            raise RuntimeError("a model call streams only to the run that scheduled it")
        return cls(activity.client(), info.workflow_id, run_id=info.workflow_run_id)

    async def signal(self, signal: Any, arg: Any = None, **options: Any) -> None:
        keys, bound_run = stream_gate.KEYS.get(), stream_gate.BOUND_RUN.get()
        if signal != contract.STREAM_PUBLISH_SIGNAL or not isinstance(arg, PublishInput):
            raise TypeError("only the stream's publish signal is sent here")
        body: dict[str, Any] = dataclasses.asdict(arg)
        if keys is not None and bound_run is not None:
            info = activity.info()
            body[gate.TAG_FIELD] = stream_gate.tag_batch(
                keys,
                namespace=info.workflow_namespace or info.namespace,
                workflow_id=self.id,
                run_id=bound_run,
                publisher_id=arg.publisher_id,
                sequence=arg.sequence,
                items=arg.items,
            )
        await super().signal(signal, body, **options)
