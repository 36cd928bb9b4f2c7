"""What reaches the Temporal UI from a worker with the project's converter (worker.py,
AgentsPlugin): refusals and failures as short messages, no worker stack trace or file
path anywhere in the history (the worker's log keeps the traceback)."""

from __future__ import annotations

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError, WorkflowUpdateFailedError

from durable_agents.dataplane.codec import data_converter
from durable_agents.testing import Call, Fault, Reply
from tests.conftest import serving
from tests.support.runs import start, wait_for_status


@pytest.fixture
async def converter_worker(env, model_server):
    """A worker whose client has the converter every process of the project uses."""
    target = env.client.service_client.config.target_host
    client = await Client.connect(
        target, namespace=env.client.namespace, data_converter=data_converter(None, None)
    )
    async with serving(client, model_server) as running:
        yield running


async def test_a_refused_update_is_one_sentence_without_a_traceback(converter_worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "a", "body": "hi"}, call_id="e1"),)),
        Reply(content="ok"),
    )
    handle = await start(converter_worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    payload = {"call_id": "nope", "decision": "approve", "approver": "ann"}
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(contract.UPDATE_DECIDE, payload)
    failure = refused.value.cause.failure
    assert "nope" in failure.message and failure.stack_trace == ""
    assert failure.application_failure_info.type == contract.ERROR_DECISION_REFUSED
    await handle.terminate("done")


async def test_a_model_call_that_kept_failing_fails_the_run_with_a_short_reason(
    converter_worker, model_server
):
    page = "<html>" + "bad gateway " * 20_000 + "</html>"
    model_server.script(*[Fault(502, page)] * 4)
    handle = await start(converter_worker)
    with pytest.raises(WorkflowFailureError):
        await handle.result()
    events = (await handle.fetch_history()).events
    failed = [e for e in events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    [closed] = [e for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED]
    for event in [*failed, closed]:
        assert b"Traceback" not in event.SerializeToString()
        assert b".py" not in event.SerializeToString()
        assert event.ByteSize() < 10_000  # never the size-limit wrapper
    reason = closed.workflow_execution_failed_event_attributes.failure
    assert "exceeds size limit" not in reason.message
    assert "model unavailable: HTTP 502" in reason.message + reason.cause.message
