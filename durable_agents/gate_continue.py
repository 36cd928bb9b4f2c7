"""The activity gate on continue-as-new: a run continued as new takes the state it is
handed as its own (decisions, rules, approver keys), so it takes it only from our
workers' workflow code.

Anyone who may poll our workflow task queue (no key is needed to poll) can take a task
of a live run and answer it with a continue-as-new of their own, carrying a state that
approves what nobody approved. Our workflow code's continue-as-new carries the workers'
tag in its header (`durable-agents-gate`) over the namespace, the workflow id, the run it
continues and the digest of the input it hands over; the new run checks it before it
does anything, and fails (`ActivityRefused`, not retried) without it: nothing it was
handed acts. A replayer without keys checks nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from durable_agents import gate
from durable_agents.gate import GateKeys
from durable_agents.workflows import contract

CHECKED = frozenset({contract.WORKFLOW_TYPE})
"""Workflows whose continue-as-new carries their state (checked)."""


def _fields(
    namespace: str, workflow_id: str, continued: str, payloads: Sequence[Payload]
) -> list[str]:
    digest = hashlib.sha256()
    for payload in payloads:  # as the new run gets them, whatever a codec did between
        for part in (payload.metadata.get("encoding", b""), payload.data):
            digest.update(len(part).to_bytes(8, "big") + part)
    return ["continue", namespace, workflow_id, continued, digest.hexdigest()]


def header(keys: GateKeys, args: Sequence[Any]) -> Payload:
    """The tag of the current run's continue-as-new with `args` (converted as the SDK
    will send them)."""
    info = workflow.info()
    payloads = workflow.payload_converter().to_payloads(args)
    tag = gate.tag(keys, _fields(info.namespace, info.workflow_id, info.run_id, payloads))
    return Payload(metadata={"encoding": b"json/plain"}, data=json.dumps(tag).encode())


def refuse_unless_ours(
    keys: GateKeys | None, args: Sequence[Any], headers: Mapping[str, Payload]
) -> None:
    """Fail the workflow run (not retried) when it was continued as new by anything but
    our workflow code (see the module docstring); a fresh start passes."""
    info = workflow.info()
    if keys is None or info.continued_run_id is None or info.workflow_type not in CHECKED:
        return
    raw = [a.payload for a in args if isinstance(a, RawValue)]
    given = headers.get(gate.HEADER)
    try:
        tag = json.loads(given.data) if given is not None else None
    except (ValueError, RecursionError):
        tag = None
    problem = (
        "its input is not what it was handed"
        if len(raw) != len(args)
        else gate.check(
            keys, tag, _fields(info.namespace, info.workflow_id, info.continued_run_id, raw)
        )
    )
    if problem is not None:
        raise ApplicationError(
            f"{info.workflow_type} refused: it was not continued as new by a run of this "
            f"deployment's workers ({problem}); nothing it was handed is taken",
            type=gate.REFUSED,
            non_retryable=True,
        )
