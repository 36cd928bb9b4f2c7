"""Edges of the approval protocol and of the workflow's input, end to end: what
other services get wrong (malformed payloads), decisions racing the run (before
the approval point, at the deadline, two updates), and model replies with
unusable call ids."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.payloads import AgentInput, AgentResult, DecideInput, DecisionSignal
from durable_agents.workflows.run_items import AssistantMessage, Decision
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from durable_agents.testing import Call, Raw, Reply
from tests.conftest import serving
from tests.support import agents
from tests.support.runs import start, state_of, temporal_cli, tool_results, wait_for_status


def email(call_id: str) -> Call:
    return Call("send_email", {"to": "a", "body": "hi"}, call_id)


async def signal_from_cli(worker, handle, name: str, payload: str) -> None:
    await temporal_cli(
        worker, "workflow", "signal", "--workflow-id", handle.id, "--name", name, "--input", payload
    )


async def test_malformed_decision_signals_are_recorded_as_refused(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    bad_type = '{"call_id": "e1", "approver": "go-service", "always": "true"}'
    await signal_from_cli(worker, handle, "approve", bad_type)
    await signal_from_cli(worker, handle, "reject", '{"call_id": "e1"}')
    await signal_from_cli(worker, handle, "approve", '"yes"')
    view = await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert view.pending_approvals == 1  # none of them decided anything
    refused = (await state_of(handle)).refused_decisions
    assert [(r.call_id, r.approver, r.decision, r.refused_because) for r in refused] == [
        (
            "e1",
            "go-service",
            "approve",
            "invalid approve payload: always: Input should be a valid boolean",
        ),
        ("e1", "", "reject", "invalid reject payload: approver: Field required"),
        (
            "",
            "",
            "approve",
            "invalid approve payload: (root): Input should be an object",
        ),
    ]
    await temporal_cli(worker, "workflow", "signal", "--workflow-id", handle.id, "--name", "reject")
    await handle.signal(contract.SIGNAL_APPROVE, None)  # a null payload
    refused = (await state_of(handle)).refused_decisions[3:]
    assert [r.refused_because for r in refused] == [
        "invalid reject payload: no payload",
        "invalid approve payload: the payload is null, not an object",
    ]
    await signal_from_cli(worker, handle, "approve", '{"call_id": "e1", "approver": "go"}')
    assert (await handle.result()).status is RunStatus.COMPLETED


async def test_refused_signals_do_not_restart_the_approval_timer(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("wire", {"amount": 1}, "w1"),)), Reply("ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    for _ in range(5):  # a service retrying a decision the run refuses
        await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="w9", approver="x"))
    await handle.result()  # the 1 s deadline rejected w1
    events = [e.event_type for e in (await handle.fetch_history()).events]
    assert events.count(EventType.EVENT_TYPE_TIMER_STARTED) == 1
    assert events.count(EventType.EVENT_TYPE_TIMER_CANCELED) == 0
    assert len((await state_of(handle)).refused_decisions) == 5


async def test_workflow_started_without_input_fails_at_once(worker):
    run_id = f"empty-{uuid.uuid4().hex[:8]}"
    await temporal_cli(
        worker, "workflow", "start", "--type", contract.WORKFLOW_TYPE,
        "--task-queue", worker.task_queue, "--workflow-id", run_id,
    )  # fmt: skip
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(worker.client.get_workflow_handle(run_id).result(), 15)
    assert caught.value.cause.message == "invalid AgentWorkflow input: no payload"


async def test_invalid_workflow_input_fails_the_run_at_once(worker):
    run_id = f"bad-{uuid.uuid4().hex[:8]}"
    await temporal_cli(
        worker,
        "workflow",
        "start",
        "--type",
        contract.WORKFLOW_TYPE,
        "--task-queue",
        worker.task_queue,
        "--workflow-id",
        run_id,
        "--input",
        '{"agent": "assistant", "max_turns": 0}',
    )
    handle = worker.client.get_workflow_handle(run_id)
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(handle.result(), 30)
    cause = caught.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == contract.ERROR_INVALID_INPUT
    assert cause.message == (
        "invalid AgentWorkflow input: input: Field required; "
        "max_turns: Input should be greater than or equal to 1"
    )
    attributes = (await handle.describe()).typed_search_attributes
    assert attributes.get(sa.AGENT_STATUS) == "failed"
    assert attributes.get(sa.AGENT_NAME) == "assistant"


async def test_a_run_of_an_unknown_agent_fails_and_says_so_in_its_search_attributes(worker):
    handle = await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="nobody", input="hi"),
        id=f"nobody-{uuid.uuid4().hex[:8]}",
        task_queue=worker.task_queue,
    )
    with pytest.raises(WorkflowFailureError) as caught:
        await asyncio.wait_for(handle.result(), 30)
    assert "cannot start agent 'nobody'" in str(caught.value.cause)
    attributes = (await handle.describe()).typed_search_attributes
    assert (attributes.get(sa.AGENT_NAME), attributes.get(sa.AGENT_STATUS)) == ("nobody", "failed")


def completion(*calls: tuple[str, str, dict]) -> Raw:
    """A completion with these (id, tool, arguments) calls, ids sent exactly as given."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": t, "arguments": json.dumps(a)}}
            for i, t, a in calls
        ],
    }
    return Raw(
        {
            "id": "chatcmpl-raw",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


async def test_empty_and_reused_call_ids_get_ids_unique_in_the_run(worker, model_server):
    model_server.script(
        completion(("c1", "add", {"a": 1, "b": 1})),
        completion(("c1", "add", {"a": 2, "b": 2}), ("", "add", {"a": 3, "b": 3})),
        Reply(content="done"),
    )
    handle = await start(worker)
    assert (await handle.result()).status is RunStatus.COMPLETED
    state = await state_of(handle)
    ids = [c.call_id for i in state.items if isinstance(i, AssistantMessage) for c in i.tool_calls]
    assert ids == ["c1", "c1_t2_1", "call_t2_2"]
    assert {k: r.content for k, r in tool_results(state).items()} == {
        "c1": "2",
        "c1_t2_1": "4",
        "call_t2_2": "6",
    }
    sent = model_server.requests[-1]["messages"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ids


async def test_calls_of_one_reply_run_concurrently(worker, model_server):
    agents.NAPS.clear()
    naps = tuple(Call("nap", {"seconds": 1}, f"n{i}") for i in range(2))
    model_server.script(Reply(tool_calls=naps), Reply(content="rested"))
    handle = await start(worker)
    await handle.result()
    (start_1, end_1), (start_2, end_2) = agents.NAPS
    assert max(start_1, start_2) < min(end_1, end_2)  # they overlapped


def positions(events: list, event_type: EventType.ValueType) -> list[int]:
    return [i for i, e in enumerate(events) if e == event_type]


async def test_decision_before_the_approval_point_is_applied_once(worker, model_server):
    """The reply proposes a slow tool and one needing approval: the approval sent
    while the slow tool runs (before the run waits for it) is applied."""
    model_server.script(
        Reply(tool_calls=(Call("nap", {"seconds": 1.5}, "n1"), email("e1"))),
        Reply(content="ok"),
    )
    handle = await start(worker)
    async with asyncio.timeout(15):
        while not agents.CALLS:  # the nap has started
            await asyncio.sleep(0.05)
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert [c[0] for c in agents.CALLS] == ["nap", "send_email"]
    state = await state_of(handle)
    assert state.refused_decisions == [] and state.held_decisions == []
    events = [e.event_type for e in (await handle.fetch_history()).events]
    signaled = events.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    completed = positions(events, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    assert completed[2] > signaled  # the nap (3rd activity) ended after the approval came


async def start_with_signal(worker, model_server, signal: str, reason: str):
    """A run whose model proposes e1, started with `signal` on e1 (signal-with-start)."""
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    return await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="assistant", input="hi"),
        id=f"sws-{uuid.uuid4().hex[:8]}",
        task_queue=worker.task_queue,
        start_signal=signal,
        start_signal_args=[DecisionSignal(call_id="e1", approver="ann", reason=reason)],
        result_type=AgentResult,
    )


async def test_approval_sent_with_the_start_is_refused_never_applied_blind(worker, model_server):
    """Nobody has seen e1's arguments when the run starts: an approval sent with the
    start is refused (a rejection would be held), and e1 waits for a real decision."""
    handle = await start_with_signal(worker, model_server, contract.SIGNAL_APPROVE, "pre-approved")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    state = await state_of(handle)
    assert "only a plain rejection is held" in state.refused_decisions[0].refused_because
    assert agents.CALLS == []
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    async with asyncio.timeout(30):
        assert (await handle.result()).status is RunStatus.COMPLETED
    assert [c[0] for c in agents.CALLS] == ["send_email"]


async def test_rejection_sent_with_the_start_is_held_until_the_call_is_proposed(
    worker, model_server
):
    handle = await start_with_signal(worker, model_server, contract.SIGNAL_REJECT, "not today")
    async with asyncio.timeout(30):
        assert (await handle.result()).status is RunStatus.COMPLETED
    [decision] = [i for i in (await state_of(handle)).items if isinstance(i, Decision)]
    assert (decision.call_id, decision.decision, decision.reason) == ("e1", "reject", "not today")
    assert agents.CALLS == []


async def test_two_racing_decide_updates_one_wins_the_other_is_refused(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    answers = await asyncio.gather(
        *(
            handle.execute_update(
                contract.UPDATE_DECIDE,
                DecideInput(call_id="e1", decision=d, approver=who),
                result_type=Decision,
            )
            for d, who in (("approve", "ann"), ("reject", "bob"))
        ),
        return_exceptions=True,
    )
    [won] = [a for a in answers if isinstance(a, Decision)]
    [lost] = [a for a in answers if isinstance(a, WorkflowUpdateFailedError)]
    assert f"already decided ({won.decision} by {won.approver})" in str(lost.cause)
    await handle.result()
    assert len(agents.CALLS) == (1 if won.decision == "approve" else 0)


@pytest.mark.parametrize("tool", ["wire", "launch"])  # on timeout: reject / fail the run
async def test_decision_reaching_the_run_with_its_deadline_wins(env, model_server, tool):
    """The deadline fires and the approval arrives while no worker runs: both reach
    the workflow in one task, and the person's decision is applied, not the timeout."""
    arguments = {"amount": 1} if tool == "wire" else {}
    model_server.script(Reply(tool_calls=(Call(tool, arguments, "x"),)), Reply(content="ok"))
    async with serving(env.client, model_server) as first:
        handle = await start(first)
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await asyncio.sleep(1.5)  # the 1 s deadline passes with no worker
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="x", approver="ann"))
    async with serving(env.client, model_server, task_queue=first.task_queue):
        result = await asyncio.wait_for(handle.result(), 30)
        state = await state_of(handle)
    assert result.status is RunStatus.COMPLETED
    [decision] = [i for i in state.items if isinstance(i, Decision)]
    assert (decision.approver, decision.via) == ("ann", "signal")
    assert [c[0] for c in agents.CALLS] == [tool]
    events = [e.event_type for e in (await handle.fetch_history()).events]
    fired = events.index(EventType.EVENT_TYPE_TIMER_FIRED)
    signaled = events.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED)
    task_done = events.index(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, max(fired, signaled))
    assert fired < task_done and signaled < task_done  # one workflow task saw both
