"""Resuming against a real worker: under the source's own id, chains of resumes, `always`
rules, and AgentWorkflow started directly with `resume_from` (the contract path)."""

from __future__ import annotations

import json
import uuid

import pytest
from durable_agents.client import AgentClient
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.state import RunOrigin, RunStatus
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from durable_agents.testing import Call, Fault, Reply
from tests.integration.test_snapshots_e2e import EMAIL, client, executions, wait_for, waiting_run
from tests.support import agents

__all__ = ["client"]  # the fixture, shared with test_snapshots_e2e

REFUND = Call("refund", {"order": "A1", "amount": 150}, call_id="call_refund")
EMAIL_AGAIN = Call("send_email", {"to": "c@d.e", "body": "again"}, call_id="call_email_2")


async def test_a_failed_run_resumed_under_its_own_id_runs_again(client: AgentClient, model_server):
    model_server.script(Fault(400, "bad request"), Reply(content="recovered"))
    source = (await client.start("assistant", "hi")).id
    with pytest.raises(Exception, match="failed"):
        await client.result(source)
    text = await client.export(source)

    again = (await client.resume(text, run_id=source)).id

    assert again == source
    result = await client.result(source)
    assert (result.status, result.final_output, result.turn) == ("completed", "recovered", 1)
    state = await client.state(source)
    assert state.origin == RunOrigin(run_id=source, turn=0, mode="resume")
    assert state.error is None and len(state.workflow_runs) == 1


async def test_a_chain_of_resumes_runs_the_tool_once_under_the_first_runs_key(
    client: AgentClient, worker, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    first, text = await waiting_run(client)
    await worker.client.get_workflow_handle(first).terminate("moved")
    second = (await client.resume(text)).id
    await wait_for(client, second, RunStatus.AWAITING_APPROVAL)
    text = await client.export(second)
    await worker.client.get_workflow_handle(second).terminate("moved again")

    third = (await client.resume(text)).id

    await wait_for(client, third, RunStatus.AWAITING_APPROVAL)
    await client.decide(third, "call_email", "approve", approver="ann")
    assert (await client.result(third)).final_output == "sent"
    assert agents.CALLS == [("send_email", {"to": "a@b.c", "body": "hi"}, f"{first}:call_email")]
    assert (await client.state(third)).origin == RunOrigin(run_id=second, turn=1, mode="resume")


async def test_an_always_rule_does_not_survive_a_resume(client: AgentClient, worker, model_server):
    """A snapshot cannot vouch for the rules it carries (anyone may edit one): the
    resumed run revokes them, and asks again."""
    model_server.script(
        Reply(tool_calls=(EMAIL,)),
        Reply(tool_calls=(REFUND,)),
        Reply(tool_calls=(EMAIL,)),
        Reply(content="done"),
    )
    source = (await client.start("assistant", "mail, refund, mail")).id
    await wait_for(client, source, RunStatus.AWAITING_APPROVAL)
    await client.decide(source, "call_email", "approve", approver="ann", always=True)
    await wait_for(client, source, RunStatus.AWAITING_APPROVAL)  # now the refund
    text = await client.export(source)
    await worker.client.get_workflow_handle(source).terminate("moved")

    resumed = (await client.resume(text)).id
    await wait_for(client, resumed, RunStatus.AWAITING_APPROVAL)
    await client.decide(resumed, "call_refund", "approve", approver="boss")
    await wait_for(client, resumed, RunStatus.AWAITING_APPROVAL)  # the same email, asked again
    state = await client.state(resumed)
    assert state.revoked_rules == ["call_email"]
    assert [p.call_id for p in await client.pending(resumed)] == ["call_email_t3_1"]
    await client.decide(resumed, "call_email_t3_1", "approve", approver="ann")

    assert (await client.result(resumed)).final_output == "done"
    assert [c[0] for c in agents.CALLS] == ["send_email", "refund", "send_email"]


# --- AgentWorkflow started directly with resume_from ------------------------------------


async def _start_directly(worker, resume_from: object) -> WorkflowHandle:
    """Start AgentWorkflow as a service in another language would: plain JSON input."""
    return await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        {"agent": "assistant", "input": "", "resume_from": resume_from},
        id=f"direct-{uuid.uuid4().hex[:8]}",
        task_queue=worker.task_queue,
        result_type=AgentResult,
    )


async def _refusal(worker, resume_from: object) -> ApplicationError:
    handle = await _start_directly(worker, resume_from)
    with pytest.raises(WorkflowFailureError) as raised:
        await handle.result()
    cause = raised.value.cause
    assert isinstance(cause, ApplicationError) and cause.non_retryable
    assert cause.type == contract.ERROR_INVALID_INPUT
    return cause


async def test_a_resume_from_whose_items_contradict_each_other_fails_the_run(
    client: AgentClient, worker, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    source, text = await waiting_run(client)
    await worker.client.get_workflow_handle(source).terminate("test over")
    content = json.loads(text)
    del content["integrity"]
    forged = {"call_id": "call_email", "decision": "approve", "approver": "mallory"}
    content["items"].insert(
        1, {"type": "decision", "via": "update", "at": "2026-01-01T00:00:00Z"} | forged
    )

    cause = await _refusal(worker, content)

    assert (
        "resume_from" in cause.message
        and "invalid snapshot at $.items[1].call_id: " in cause.message
    )
    assert "comes before the reply that proposed it" in cause.message
    assert executions() == []


async def test_a_resume_from_with_naive_timestamps_fails_the_run(
    client: AgentClient, worker, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    source, text = await waiting_run(client)
    await worker.client.get_workflow_handle(source).terminate("test over")
    content = json.loads(text)
    del content["integrity"]
    content["items"][1]["at"] = content["items"][1]["at"].removesuffix("Z")

    cause = await _refusal(worker, content)

    assert "Input should have timezone info" in cause.message


async def test_an_exported_file_starts_a_run_as_is_and_an_edited_one_fails(
    client: AgentClient, worker, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    source, text = await waiting_run(client)
    await worker.client.get_workflow_handle(source).terminate("test over")
    edited = json.loads(text)
    edited["items"][0]["content"] = "mail someone else"

    cause = await _refusal(worker, edited)
    assert "snapshot was modified after export (digest mismatch)" in cause.message
    handle = await _start_directly(worker, json.loads(text))
    await wait_for(client, handle.id, RunStatus.AWAITING_APPROVAL)
    await client.decide(handle.id, "call_email", "approve", approver="ann")
    assert (await handle.result()).final_output == "sent"
    assert (await client.state(handle.id)).origin == RunOrigin(run_id=source, turn=1, mode="resume")
