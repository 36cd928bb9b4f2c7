"""The gate of streamed text (durable_agents.stream_gate): a publish batch is taken only
with the workers' tag over this run, its publisher and number and exactly its items; a
replayer without keys checks nothing and says so."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest
from durable_agents.workflows import contract
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.contrib.workflow_streams import PublishEntry, PublishInput

from durable_agents import gate, stream_gate

KEYS = gate.GateKeys.parse(f"s1:{base64.b64encode(b's' * 32).decode()}")
RUN = {"namespace": "default", "workflow_id": "run-1", "run_id": "rid-1"}
GATE = "not published by a model call of this deployment's workers"


def entry(text: str) -> PublishEntry:
    item = {"type": "text_delta", "key": "k-1", "attempt": 1, "text": text}
    payload = Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(item).encode())
    return PublishEntry(topic="events", data=base64.b64encode(payload.SerializeToString()).decode())


BATCH = PublishInput(items=[entry("Hello"), entry(" there")], publisher_id="p1", sequence=2)


def sent(body: object) -> RawValue:
    return RawValue(Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(body).encode()))


def tagged(batch: PublishInput = BATCH, keys: gate.GateKeys = KEYS, **run: str) -> dict:
    tag = stream_gate.tag_batch(
        keys,
        publisher_id=batch.publisher_id,
        sequence=batch.sequence,
        items=batch.items,
        **{**RUN, **run},
    )
    return {**dataclasses.asdict(batch), gate.TAG_FIELD: tag}


def said(args: list[RawValue], keys: gate.GateKeys | None = KEYS) -> dict:
    return json.loads(stream_gate.verdict(keys, args, **RUN).payload.data)


def test_a_batch_our_model_call_tagged_is_taken():
    assert said([sent(tagged())]) == {contract.STREAM_VERDICT: "taken"}


def test_a_replayer_without_keys_checks_nothing_and_says_so():
    assert said([sent({"items": []})], keys=None) == {contract.STREAM_VERDICT: "unchecked"}


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ([sent({**tagged(), "items": [dataclasses.asdict(entry("Goodbye"))]})], "does not match"),
        ([sent({**tagged(), "sequence": 3})], "does not match"),
        ([sent({**tagged(), "publisher_id": "mallory"})], "does not match"),
        ([sent(tagged(run_id="rid-2"))], "does not match"),
        ([sent(tagged(workflow_id="run-2"))], "does not match"),
        ([sent(tagged(keys=gate.GateKeys.development()))], "'dev' is not one of this worker's"),
        ([sent(dataclasses.asdict(BATCH))], "no gate tag"),
        ([sent(tagged()), sent(tagged())], "2 arguments; a batch is one"),
        ([], "0 arguments; a batch is one"),
        ([sent("garbage")], "not a batch"),
        ([sent({**tagged(), "sequence": True})], "not a batch"),
        ([RawValue(Payload(metadata={"encoding": b"binary/plain"}, data=b"x"))], "not a JSON"),
    ],
    ids=[
        "other-text",
        "other-seq",
        "other-publisher",
        "other-run",
        "other-workflow",
        "unknown-key",
        "untagged",
        "two-args",
        "no-args",
        "not-a-batch",
        "bool-seq",
        "binary",
    ],
)
def test_anything_else_is_refused_saying_why(args, why):
    verdict = said(args)
    assert verdict[contract.STREAM_VERDICT] == "refused"
    assert verdict["why"].startswith(f"{GATE} (") and why in verdict["why"]
