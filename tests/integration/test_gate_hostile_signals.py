"""A signal whose gate header or tag is not what the gate expects is refused, and the
run goes on: a non-ASCII tag (`hmac.compare_digest` takes only ASCII strings) or JSON
nested past the parser's depth once failed every workflow task of the run for good (the
signal stays in history), so that one signal from anyone who may signal wedged it."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.state import RunStatus
from temporalio.api.common.v1 import Header, Payload, Payloads, WorkflowExecution
from temporalio.api.workflowservice.v1 import SignalWorkflowExecutionRequest

from durable_agents import gate
from durable_agents.testing import Call, Reply
from tests.support.runs import start, wait_for_status, workflow_task_failures

JSON = {"encoding": b"json/plain"}
DEEP = b"[" * 50_000 + b"]" * 50_000


def non_ascii_tag() -> dict[str, object]:
    return {"k": gate.required_keys().current, "t": "\u00e9", "at": 0}  # the key id is public


async def raw_signal(worker, workflow_id: str, name: str, data: bytes, header: bytes | None):
    headers = {gate.HEADER: Payload(metadata=JSON, data=header)} if header is not None else {}
    await worker.client.workflow_service.signal_workflow_execution(
        SignalWorkflowExecutionRequest(
            namespace=worker.client.namespace,
            workflow_execution=WorkflowExecution(workflow_id=workflow_id),
            signal_name=name,
            input=Payloads(payloads=[Payload(metadata=JSON, data=data)]),
            identity="mallory",
            request_id=str(uuid.uuid4()),
            header=Header(fields=headers),
        )
    )


async def waiting_run(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "ann", "body": "hi"}, call_id="e1"),)),
        Reply("sent"),
    )
    handle = await start(worker, "mail ann")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    return handle


async def goes_on(handle) -> None:
    """The run still takes a decision and completes, with no workflow task failed."""
    await handle.signal(contract.SIGNAL_APPROVE, {"call_id": "e1", "approver": "ann"})
    result = await asyncio.wait_for(handle.result(), 60)  # a wedged run never ends
    assert (result.status, result.final_output) == ("completed", "sent")
    assert await workflow_task_failures(handle) == 0


@pytest.mark.parametrize("kind", ["non_ascii_tag", "deep_header"])
@pytest.mark.parametrize(
    "signal", [contract.SIGNAL_SUB_RUN_FINISHED, contract.SIGNAL_SUB_RUN_REPORT]
)
async def test_a_tree_signal_with_a_bad_gate_header_is_refused_and_the_run_goes_on(
    worker, model_server, kind, signal
):
    handle = await waiting_run(worker, model_server)
    body: dict[str, object] = {"run_id": f"{handle.id}/x1"}
    if signal == contract.SIGNAL_SUB_RUN_FINISHED:
        body["status"] = "completed"
    header = json.dumps(non_ascii_tag()).encode() if kind == "non_ascii_tag" else DEEP
    await raw_signal(worker, handle.id, signal, json.dumps(body).encode(), header)
    await goes_on(handle)


@pytest.mark.parametrize("kind", ["non_ascii_tag", "deep_body"])
async def test_a_stream_batch_with_a_bad_tag_or_body_is_refused_and_the_run_goes_on(
    worker, model_server, kind
):
    handle = await waiting_run(worker, model_server)
    if kind == "non_ascii_tag":
        batch = {"items": [], "publisher_id": "p", "sequence": 1, gate.TAG_FIELD: non_ascii_tag()}
        data = json.dumps(batch).encode()
    else:
        data = DEEP
    await raw_signal(worker, handle.id, contract.STREAM_PUBLISH_SIGNAL, data, None)
    await goes_on(handle)


def test_check_says_a_non_ascii_or_absent_tag_is_no_tag_and_never_raises():
    keys = gate.required_keys()
    for given in (non_ascii_tag(), {"k": keys.current, "t": None}, {"k": keys.current}):
        assert gate.check(keys, given, ["x"]) == "its gate tag does not match what it asks"
