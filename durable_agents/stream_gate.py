"""The gate of a streamed model reply: only a model call of ours publishes text to a run.

A model call that streams publishes its text to its run by signalling it (Workflow
Streams' publish signal, `contract.STREAM_PUBLISH_SIGNAL`), a signal anyone who may
signal the run can send too, with anything a history reader learns (the call's stream
key, which its input carries, is a correlation id, not a proof). So each batch carries
the workers' tag (`AGENT_GATE_KEYS`, `durable_agents.gate`) over the run it goes to
(namespace, workflow id, and its original run id, which `temporal workflow reset`
keeps), its publisher and number, and its items (each names
its model call by that key, and says its attempt and text): only an activity the gate
admitted can make one (`KEYS` holds the keys while it runs). The workflow-side gate
interceptor checks the tag of every publish signal and appends its verdict as the
signal's last argument (`contract.STREAM_VERDICT`); the run takes a batch only when that
verdict says so and records any other as refused. Workflow code never holds the keys,
and nothing secret is in history. A replayer without keys (`GateInterceptor(None)`)
checks nothing and says so (`unchecked`): it takes what the run took.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Sequence
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import PublishEntry

from durable_agents import gate
from durable_agents.gate import GateKeys
from durable_agents.workflows import contract

KEYS: contextvars.ContextVar[GateKeys | None] = contextvars.ContextVar(
    "durable_agents_stream_keys", default=None
)
"""The workers' keys, set while an activity the gate admitted runs (its streamed text is
tagged with them); None anywhere else."""
BOUND_RUN: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "durable_agents_stream_run", default=None
)
"""The original run id of the run the admitted activity was scheduled by (from its gate
header), set beside `KEYS`: its batches are tagged for it, as the run checks them, so a
model call that a reset runs again in a new run still streams to it."""
_JSON = {"encoding": b"json/plain"}


def batch_fields(
    *,
    namespace: str,
    workflow_id: str,
    run_id: str,
    publisher_id: str,
    sequence: int,
    items: Sequence[tuple[str, str]],
) -> list[str]:
    """What a batch's tag is made over; `items`: each item's (topic, data)."""
    digest = gate.digest([[topic, data] for topic, data in items])
    return ["stream", namespace, workflow_id, run_id, publisher_id, f"seq={sequence}", digest]


def tag_batch(
    keys: GateKeys,
    *,
    namespace: str,
    workflow_id: str,
    run_id: str,
    publisher_id: str,
    sequence: int,
    items: Sequence[PublishEntry],
) -> dict[str, str]:
    """The workers' tag over a batch the activity sends (see `batch_fields`)."""
    fields = batch_fields(
        namespace=namespace,
        workflow_id=workflow_id,
        run_id=run_id,
        publisher_id=publisher_id,
        sequence=sequence,
        items=[(e.topic, e.data) for e in items],
    )
    return gate.tag(keys, fields)


def verdict(
    keys: GateKeys | None,
    sent: Sequence[RawValue],
    *,
    namespace: str,
    workflow_id: str,
    run_id: str,
) -> RawValue:
    """The gate's verdict on a publish signal with arguments `sent`, as its last
    argument for the run: taken, refused (with why) or unchecked (no keys)."""
    if keys is None:
        return _verdict({contract.STREAM_VERDICT: "unchecked"})
    problem = _problem(keys, sent, namespace=namespace, workflow_id=workflow_id, run_id=run_id)
    if problem is None:
        return _verdict({contract.STREAM_VERDICT: "taken"})
    why = f"not published by a model call of this deployment's workers ({problem})"
    return _verdict({contract.STREAM_VERDICT: "refused", "why": why})


def _verdict(body: dict[str, str]) -> RawValue:
    return RawValue(Payload(metadata=_JSON, data=json.dumps(body).encode()))


def _problem(
    keys: GateKeys, sent: Sequence[RawValue], *, namespace: str, workflow_id: str, run_id: str
) -> str | None:
    """Why `sent` is not one batch tagged by our activity for this run; None if it is."""
    if len(sent) != 1:
        return f"{len(sent)} arguments; a batch is one"
    payload = sent[0].payload
    if payload.metadata.get("encoding") != _JSON["encoding"]:
        return "not a JSON payload"
    try:
        body = json.loads(payload.data)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        return "not JSON"
    if not isinstance(body, dict):
        return "not a batch"
    items, publisher, sequence = body.get("items"), body.get("publisher_id"), body.get("sequence")
    if not (
        isinstance(items, list)
        and all(_is_entry(e) for e in items)
        and isinstance(publisher, str)
        and isinstance(sequence, int)
        and not isinstance(sequence, bool)
    ):
        return "not a batch"
    fields = batch_fields(
        namespace=namespace,
        workflow_id=workflow_id,
        run_id=run_id,
        publisher_id=publisher,
        sequence=sequence,
        items=[(e["topic"], e["data"]) for e in items],
    )
    return gate.check(keys, body.get(gate.TAG_FIELD), fields)


def _is_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("topic"), str)
        and isinstance(entry.get("data"), str)
    )
