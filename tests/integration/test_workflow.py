"""AgentWorkflow end to end: real dev server, real worker, real HTTP model server."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

import pytest
from durable_agents.workflows import contract, search_attributes
from durable_agents.workflows.payloads import (
    AgentInput,
    DecisionSignal,
    PendingApproval,
    StatusView,
)
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowFailureError, WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError, CancelledError

from durable_agents.testing import Call, Fault, Reply
from tests.support import agents
from tests.support.cli_support import bound_to
from tests.support.runs import start, state_of, temporal_cli, tool_results, wait_for_status


async def test_plain_answer_completes_with_output_and_usage(worker, model_server):
    model_server.script(Reply(content="Hello!", usage=(12, 3)))
    handle = await start(worker)
    result = await handle.result()
    assert result.status is RunStatus.COMPLETED
    assert result.final_output == "Hello!"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.turn) == (12, 3, 1)
    [request] = model_server.requests
    assert request["model"] == "test-model"
    assert request["messages"][0] == {"role": "system", "content": "You are a test assistant."}
    assert request["messages"][1] == {"role": "user", "content": "hi"}


async def test_tool_result_goes_back_to_the_model(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 2, "b": 3}, call_id="c1"),)),
        Reply(content="5"),
    )
    handle = await start(worker)
    assert (await handle.result()).final_output == "5"
    tool_message = model_server.requests[1]["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "c1", "content": "5"}
    assert agents.CALLS == [("add", {"a": 2, "b": 3}, f"{handle.id}:c1")]


async def test_approved_call_runs_once_after_approval(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "x@y.z", "body": "hi"}, call_id="e1"),)),
        Reply(content="sent"),
    )
    handle = await start(worker)
    view = await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert view.pending_approvals == 1
    pending = await handle.query(
        contract.QUERY_GET_PENDING_APPROVALS, result_type=list[PendingApproval]
    )
    assert [(p.call_id, p.tool, json.loads(p.arguments)) for p in pending] == [
        ("e1", "send_email", {"to": "x@y.z", "body": "hi"})
    ]
    assert agents.CALLS == []  # nothing ran while waiting
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    result = await handle.result()
    assert result.status is RunStatus.COMPLETED
    assert [c[0] for c in agents.CALLS] == ["send_email"]
    decision = next(i for i in (await state_of(handle)).items if i.type == "decision")
    assert (decision.approver, decision.decision) == ("ann", "approve")


async def test_rejected_call_returns_reason_to_model(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "boss", "body": "quit"}, call_id="e1"),)),
        Reply(content="ok, not sent"),
    )
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.signal(
        contract.SIGNAL_REJECT, DecisionSignal(call_id="e1", approver="ann", reason="too rude")
    )
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert agents.CALLS == []
    sent_back = model_server.requests[1]["messages"][-1]
    assert sent_back["tool_call_id"] == "e1"
    assert "rejected by ann: too rude" in sent_back["content"]


@pytest.mark.history("approvals")
async def test_always_approval_covers_the_later_calls_its_conditions_state(
    worker, model_server, scenario
):
    """And only those: a call outside them waits and is rejected; beside them, a call
    of a tool the agent does not have is answered as such."""
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "a", "body": "1"}, call_id="e1"),)),
        Reply(
            tool_calls=(
                Call("send_email", {"to": "b", "body": "2"}, call_id="e2"),
                Call("send_email", {"to": "c", "body": "3"}, call_id="e3"),
                Call("teleport", {}, call_id="t1"),
            )
        ),
        Reply(content="two sent"),
    )
    handle = await start(worker)
    scenario.run(handle)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    scope = [{"field": "to", "op": "in", "value": ["a", "b"]}]
    await handle.signal(
        contract.SIGNAL_APPROVE,
        {"call_id": "e1", "approver": "ann", "always": True, "always_when": scope},
    )
    while [p.call_id for p in await pending_of(handle)] != ["e3"]:
        await asyncio.sleep(0.05)
    await handle.signal(contract.SIGNAL_REJECT, DecisionSignal(call_id="e3", approver="ann"))
    result = await handle.result()
    assert (result.status, result.turn) == (RunStatus.COMPLETED, 3)
    assert [c[1]["to"] for c in agents.CALLS] == ["a", "b"]
    results = tool_results(await state_of(handle))
    assert "rejected by ann" in results["e3"].content
    assert "unknown tool 'teleport'" in results["t1"].content


async def pending_of(handle) -> list[PendingApproval]:
    return await handle.query(
        contract.QUERY_GET_PENDING_APPROVALS, result_type=list[PendingApproval]
    )


async def test_two_tool_calls_in_one_reply_run_and_both_results_return(worker, model_server):
    model_server.script(
        Reply(
            tool_calls=(Call("add", {"a": 1, "b": 1}, "c1"), Call("add", {"a": 2, "b": 2}, "c2"))
        ),
        Reply(content="2 and 4"),
    )
    handle = await start(worker)
    assert (await handle.result()).final_output == "2 and 4"
    messages = model_server.requests[1]["messages"]
    assert messages[-2:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "2"},
        {"role": "tool", "tool_call_id": "c2", "content": "4"},
    ]


async def test_unknown_tool_and_bad_arguments_are_answered_not_crashed(worker, model_server):
    model_server.script(
        Reply(
            tool_calls=(
                Call("teleport", {}, "c1"),
                Call("add", "{oops", "c2"),
                Call("add", {"a": "one", "b": 2}, "c3"),
            )
        ),
        Reply(content="sorry"),
    )
    handle = await start(worker)
    assert (await handle.result()).status is RunStatus.COMPLETED
    results = tool_results(await state_of(handle))
    assert "unknown tool 'teleport'" in results["c1"].content
    assert "not valid JSON" in results["c2"].content
    assert "invalid arguments for 'add': a:" in results["c3"].content
    assert all(r.is_error for r in results.values())
    assert agents.CALLS == []


async def test_tool_exception_goes_back_to_model_after_its_retries(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("flaky", {}, "f1"),)), Reply(content="gave up"))
    handle = await start(worker)
    assert (await handle.result()).status is RunStatus.COMPLETED
    result = tool_results(await state_of(handle))["f1"]
    assert result.is_error and "disk on fire" in result.content
    assert len(agents.CALLS) == 3  # the tool's retry policy: 3 attempts
    assert {c[2] for c in agents.CALLS} == {f"{handle.id}:f1"}  # one idempotency key


async def test_model_500_is_retried_then_succeeds(worker, model_server):
    model_server.script(Fault(500, "overloaded"), Reply(content="fine now"))
    handle = await start(worker)
    assert (await handle.result()).final_output == "fine now"
    assert len(model_server.requests) == 2


async def test_model_429_waits_for_retry_after(worker, model_server):
    replies: list[Fault | Reply] = [
        Fault(429, "slow down", headers={"retry-after": "2"}),
        Reply("ok"),
    ]
    arrived: list[float] = []

    def answer(body: dict) -> Fault | Reply:
        arrived.append(time.monotonic())
        return replies.pop(0)

    model_server.responder = answer
    handle = await start(worker)
    assert (await handle.result()).final_output == "ok"
    # measured where the requests arrive: the retry came after the 429 was answered, so
    # load only lengthens the gap (the policy alone would retry after 0.2 s)
    assert arrived[1] - arrived[0] >= 1.9


async def test_model_400_fails_fast_with_provider_message(worker, model_server):
    model_server.script(Fault(400, "context_length_exceeded: too long"))
    handle = await start(worker)
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError)
    assert cause.type == contract.ERROR_MODEL_REQUEST
    assert "context_length_exceeded: too long" in cause.message
    assert len(model_server.requests) == 1  # not retried
    state = await state_of(handle)
    assert state.status is RunStatus.FAILED
    assert state.error.details["status_code"] == 400
    assert "context_length_exceeded" in state.error.message


async def test_max_turns_ends_the_run_with_that_status(worker, model_server):
    model_server.script(*(Reply(tool_calls=(Call("add", {"a": i, "b": 0}),)) for i in range(2)))
    handle = await start(worker, max_turns=2)
    result = await handle.result()
    assert (result.status, result.turn) == (RunStatus.MAX_TURNS_EXCEEDED, 2)
    assert (await state_of(handle)).status is RunStatus.MAX_TURNS_EXCEEDED


async def test_unknown_agent_fails_the_run_with_a_clear_error(worker):
    handle = await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="ghost", input="hi"),
        id=f"run-{uuid.uuid4().hex[:10]}",
        task_queue=worker.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    assert (
        "unknown agent 'ghost'; this worker serves: asker, assistant, concierge, custodian, decider"
        in caught.value.cause.message
    )
    # The queries say how it ended, not "running · turn 0".
    view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
    assert view.status is RunStatus.FAILED and "unknown agent 'ghost'" in (view.error or "")
    with pytest.raises(WorkflowQueryFailedError, match="ended failed before it had a state"):
        await handle.query(contract.QUERY_GET_STATE)
    shown = await bound_to(worker)("status", handle.id)
    assert f"{handle.id} · failed · turn 0" in shown.stdout


async def test_refused_signal_leaves_the_run_waiting(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "a", "body": "b"}, "e1"),)), Reply(content="k")
    )
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="nope", approver="ann"))
    view = await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert view.pending_approvals == 1
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    assert (await handle.result()).status is RunStatus.COMPLETED


async def test_cancelling_a_waiting_run_ends_it_cancelled_without_running_the_tool(
    worker, model_server
):
    model_server.script(Reply(tool_calls=(Call("send_email", {"to": "a", "body": "b"}, "e1"),)))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    assert isinstance(caught.value.cause, CancelledError)
    assert (await state_of(handle)).status is RunStatus.CANCELLED
    assert agents.CALLS == []


async def test_search_attributes_find_runs_awaiting_approval(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("send_email", {"to": "a", "body": "b"}, "e1"),)))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    query = (
        f'WorkflowId = "{handle.id}" AND AgentStatus = "awaiting_approval" '
        'AND AgentPendingApprovals = 1 AND AgentName = "assistant" AND AgentTurn = 1'
    )
    deadline = time.monotonic() + 30  # visibility lags on a loaded machine
    found: list = []
    while not found and time.monotonic() < deadline:
        found = [w.id async for w in worker.client.list_workflows(query)]
        await asyncio.sleep(0.2)
    assert found == [handle.id]
    await handle.terminate("test over")


def upserted_turns(history) -> list[tuple[str, int]]:
    """(AgentStatus, AgentTurn) of each upsert that sets the run's attributes, in order."""
    out = []
    for event in history.events:
        if event.event_type != EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
            continue
        fields = event.upsert_workflow_search_attributes_event_attributes.search_attributes
        if "AgentTurn" in fields.indexed_fields:
            values = fields.indexed_fields
            status = json.loads(values["AgentStatus"].data)
            out.append((status, json.loads(values["AgentTurn"].data)))
    return out


async def test_counters_are_upserted_with_a_change_of_status_never_on_a_clock(worker, model_server):
    """Tool turns change the counters only: a run upserts at its start and its end
    (what operators search by changed), whatever the turns took, so what it writes
    depends on its state alone (a rule on workflow time broke replay)."""
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 1}, "a1"),)),
        Reply(tool_calls=(Call("add", {"a": 2, "b": 1}, "a2"),), delay_seconds=1.1),
        Reply(content="3"),
    )
    handle = await start(worker)
    result = await handle.result()
    assert result.status is RunStatus.COMPLETED and result.turn == 3
    assert upserted_turns(await handle.fetch_history()) == [("running", 0), ("completed", 3)]
    found = (await handle.describe()).typed_search_attributes
    assert found.get(search_attributes.AGENT_TURN) == 3
    assert found.get(search_attributes.AGENT_TOTAL_TOKENS) == result.usage.total_tokens > 0


async def test_a_run_continuing_as_new_carries_its_counters_with_the_switch(worker, model_server):
    """The counters still waiting go with the continue-as-new command (free), not in an
    upsert of their own (a billed action): the next run starts with them."""
    model_server.script(  # concierge continues as new after every 2 turns
        Reply(tool_calls=(Call("add", {"a": 1, "b": 1}, "a1"),)),
        Reply(tool_calls=(Call("add", {"a": 2, "b": 1}, "a2"),)),
        Reply(content="3"),
    )
    handle = await start(worker, agent="concierge")
    assert (await handle.result()).turn == 3
    first = worker.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    history = await first.fetch_history()
    assert history.events[-1].event_type == (
        EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    )
    assert upserted_turns(history) == [("running", 0)]  # a client that set none at start
    switch = history.events[-1].workflow_execution_continued_as_new_event_attributes
    carried = switch.search_attributes.indexed_fields
    assert (json.loads(carried["AgentStatus"].data), json.loads(carried["AgentTurn"].data)) == (
        "running",
        2,
    )


async def test_approval_signal_from_the_temporal_cli_with_a_json_payload(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "a", "body": "b"}, "e1"),)), Reply(content="k")
    )
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await temporal_cli(
        worker,
        "workflow",
        "signal",
        "--workflow-id",
        handle.id,
        "--name",
        "approve",
        "--input",
        '{"call_id": "e1", "approver": "go-service", "reason": "ok by policy"}',
    )
    assert (await handle.result()).status is RunStatus.COMPLETED
    decision = next(i for i in (await state_of(handle)).items if i.type == "decision")
    assert (decision.approver, decision.reason) == ("go-service", "ok by policy")


async def test_current_details_show_status_and_the_pending_tool(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("send_email", {"to": "ops", "body": "b"}, "e1"),)))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    details = metadata.current_details
    assert details.startswith("**awaiting_approval** · assistant · turn 1 · 15 tokens")
    assert "- `send_email(to=ops, body=b)` — call id `e1`" in details
    await handle.terminate("test over")


async def test_tool_error_of_a_non_retryable_type_goes_to_the_model_at_once(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("find", {"key": "k9"}, "f1"),)), Reply(content="ok"))
    handle = await start(worker)
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert [c[0] for c in agents.CALLS] == ["find"]  # its policy allows 5 attempts
    assert "no k9" in tool_results(await state_of(handle))["f1"].content
