"""Approvals as a protocol, end to end: signals, the `decide` update, policies,
deadlines and the races between them (real server, real worker)."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import DecideInput, DecisionSignal
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from durable_agents.testing import Call, Reply
from tests.support import agents
from tests.support.runs import (
    held,
    requested,
    start,
    state_of,
    temporal_cli,
    wait_for_status,
)


def email(call_id: str, to: str = "a") -> Call:
    return Call("send_email", {"to": to, "body": "hi"}, call_id)


async def approve(handle, call_id: str, approver: str = "ann", **kw) -> None:
    await handle.signal(
        contract.SIGNAL_APPROVE, DecisionSignal(call_id=call_id, approver=approver, **kw)
    )


async def decide(handle, call_id: str, decision: str = "approve", *, update_id=None, **kw):
    return await handle.execute_update(
        contract.UPDATE_DECIDE,
        DecideInput(call_id=call_id, decision=decision, approver=kw.pop("approver", "ann"), **kw),
        id=update_id,
        result_type=Decision,
    )


async def test_several_pending_calls_decided_in_any_order(worker, model_server):
    model_server.script(
        Reply(tool_calls=(email("e1", "first"), email("e2", "second"), email("e3", "third"))),
        Reply(content="done"),
    )
    handle = await start(worker)
    view = await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert view.pending_approvals == 3
    await approve(handle, "e3")
    await handle.signal(contract.SIGNAL_REJECT, DecisionSignal(call_id="e1", approver="bob"))
    await approve(handle, "e2")
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert sorted(c[1]["to"] for c in agents.CALLS) == ["second", "third"]


async def test_approval_sent_while_the_model_is_answering_is_refused(worker, model_server):
    """Call ids are predictable (`call_0`, ...): an approval sent before its call is
    proposed would approve arguments nobody saw. It is refused, and the call waits."""
    release = held(model_server, Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await requested(model_server)  # the model call is under way; e1 is not proposed yet
    await approve(handle, "e1", reason="pre-approved")
    async with asyncio.timeout(30):
        while not (await state_of(handle)).refused_decisions:
            await asyncio.sleep(0.05)
    release.set()  # only now the model answers, proposing e1
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    state = await state_of(handle)
    assert state.held_decisions == [] and agents.CALLS == []
    assert "only a plain rejection is held" in state.refused_decisions[0].refused_because
    await approve(handle, "e1", reason="seen it")
    async with asyncio.timeout(30):
        assert (await handle.result()).status is RunStatus.COMPLETED
    decision = next(i for i in (await state_of(handle)).items if isinstance(i, Decision))
    assert (decision.reason, decision.via) == ("seen it", "signal")


async def test_rejection_sent_while_the_model_is_answering_is_held_and_applied(
    worker, model_server
):
    release = held(model_server, Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await requested(model_server)  # the model call is under way; e1 is not proposed yet
    await handle.signal(
        contract.SIGNAL_REJECT, DecisionSignal(call_id="e1", approver="ann", reason="no")
    )
    async with asyncio.timeout(30):
        while not (await state_of(handle)).held_decisions:  # held, not refused
            await asyncio.sleep(0.05)
    release.set()  # only now the model answers, proposing e1
    async with asyncio.timeout(30):
        assert (await handle.result()).status is RunStatus.COMPLETED
    state = await state_of(handle)
    assert state.held_decisions == [] and state.refused_decisions == [] and agents.CALLS == []
    decision = next(i for i in state.items if isinstance(i, Decision))
    assert (decision.decision, decision.reason, decision.via) == ("reject", "no", "signal")


async def test_racing_approvers_first_wins_second_is_refused_and_audited(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await asyncio.gather(
        approve(handle, "e1", approver="ann"),
        handle.signal(contract.SIGNAL_REJECT, DecisionSignal(call_id="e1", approver="bob")),
    )
    await handle.result()
    state = await state_of(handle)
    [decision] = [i for i in state.items if isinstance(i, Decision)]
    [refused] = state.refused_decisions
    assert {decision.approver, refused.approver} == {"ann", "bob"}
    assert refused.refused_because == (
        f"tool call e1 is already decided ({decision.decision} by {decision.approver})"
    )


async def test_duplicate_signals_are_recorded_once(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    for _ in range(3):
        await approve(handle, "e1")
    await handle.result()
    state = await state_of(handle)
    assert len([i for i in state.items if isinstance(i, Decision)]) == 1
    assert state.refused_decisions == []
    assert len(agents.CALLS) == 1


async def test_decision_for_a_call_of_an_earlier_turn_is_refused(worker, model_server):
    model_server.script(
        Reply(tool_calls=(email("e1"),)), Reply(tool_calls=(email("e2"),)), Reply(content="ok")
    )
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await approve(handle, "e1")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    while (await handle.query(contract.QUERY_GET_STATUS)).get("turn") != 2:
        await asyncio.sleep(0.05)
    await approve(handle, "e1", approver="bob")
    with pytest.raises(WorkflowUpdateFailedError) as caught:
        await decide(handle, "e1", approver="bob")
    assert "already decided (approve by ann)" in str(caught.value.cause)
    await approve(handle, "e2")
    await handle.result()
    refused = (await state_of(handle)).refused_decisions
    assert [(r.call_id, r.approver) for r in refused] == [("e1", "bob")]


async def test_decide_update_returns_the_recorded_decision_once_per_update_id(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    first = await decide(handle, "e1", reason="fine", update_id="req-1")
    again = await decide(handle, "e1", reason="fine", update_id="req-1")  # a retried request
    assert first == again
    assert (first.approver, first.reason, first.via) == ("ann", "fine", "update")
    await handle.result()
    assert len([i for i in (await state_of(handle)).items if isinstance(i, Decision)]) == 1


async def test_refused_update_leaves_no_trace_in_history(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    with pytest.raises(WorkflowUpdateFailedError) as caught:
        await decide(handle, "nope")
    assert "no tool call nope in run" in str(caught.value.cause)
    # A refusal is final: typed, and not retryable (a naive service would retry forever).
    refusal = caught.value.cause
    assert isinstance(refusal, ApplicationError)
    assert (refusal.type, refusal.non_retryable) == (contract.ERROR_DECISION_REFUSED, True)
    await decide(handle, "e1")
    await handle.result()
    history = await handle.fetch_history()
    accepted = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    ]
    assert len(accepted) == 1  # only the valid one
    assert (await state_of(handle)).refused_decisions == []


async def test_conditional_policy_and_allowed_approvers(worker, model_server):
    model_server.script(
        Reply(
            tool_calls=(
                Call("refund", {"order": "A", "amount": 20}, "small"),
                Call("refund", {"order": "B", "amount": 500}, "big"),
            )
        ),
        Reply(content="ok"),
    )
    handle = await start(worker)
    view = await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert view.pending_approvals == 1  # the small refund needed no approval
    with pytest.raises(WorkflowUpdateFailedError) as caught:
        await decide(handle, "big", approver="mallory")
    assert "mallory may not decide refund calls (allowed: ann, boss)" in str(caught.value.cause)
    await decide(handle, "big", approver="boss", arguments={"order": "B", "amount": 250.0})
    await handle.result()
    assert sorted((c[1]["order"], c[1]["amount"]) for c in agents.CALLS) == [
        ("A", 20.0),
        ("B", 250.0),
    ]
    state = await state_of(handle)
    big = next(
        c
        for i in state.items
        if i.type == "assistant_message"
        for c in i.tool_calls
        if c.call_id == "big"
    )
    assert json.loads(big.arguments)["amount"] == 500  # the model's original is kept


async def test_edited_arguments_that_do_not_fit_are_refused(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("refund", {"order": "B", "amount": 500}, "big"),)))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    with pytest.raises(WorkflowUpdateFailedError) as caught:
        await decide(handle, "big", arguments={"order": "B", "amount": "all of it"})
    assert "edited arguments are not valid for refund: amount: expected number" in str(
        caught.value.cause
    )
    await handle.terminate("test over")


async def test_approval_deadline_rejects_and_a_late_decision_is_refused(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("wire", {"amount": 5}, "w1"),)), Reply(content="ok"))
    handle = await start(worker)
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert agents.CALLS == []
    sent_back = model_server.requests[1]["messages"][-1]["content"]
    assert "rejected by the approval deadline: no decision within 1 s" in sent_back
    history = await handle.fetch_history()
    timers = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_TIMER_STARTED]
    assert len(timers) == 1
    summary = worker.client.data_converter.payload_converter.from_payload(
        timers[0].user_metadata.summary, str
    )
    assert summary == "approval deadline: w1"


async def test_approval_deadline_can_fail_the_run(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("launch", {}, "l1"),)))
    handle = await start(worker)
    with pytest.raises(WorkflowFailureError) as caught:
        await handle.result()
    assert isinstance(caught.value.cause, ApplicationError)
    assert caught.value.cause.type == "ApprovalTimeout"
    assert (await state_of(handle)).status is RunStatus.FAILED
    assert agents.CALLS == []


async def test_decide_update_from_the_temporal_cli(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    out = await temporal_cli(
        worker,
        "workflow",
        "update",
        "execute",
        "--workflow-id",
        handle.id,
        "--name",
        "decide",
        "--input",
        '{"call_id": "e1", "decision": "approve", "approver": "java-service"}',
    )
    # The CLI prints the recorded decision it got back (as a Go map).
    assert "approver:java-service" in out and "via:update" in out
    assert (await handle.result()).status is RunStatus.COMPLETED
