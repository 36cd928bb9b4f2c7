"""Sessions, lossless continue-as-new and bounded history, on a dev server whose
limits are lowered so that the switches and payload limits are hit in seconds."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from durable_agents.workflows import contract, search_attributes
from durable_agents.workflows.payloads import (
    AgentInput,
    AgentResult,
    DecideInput,
    DecisionSignal,
    EndSessionSignal,
    MessageSignal,
)
from durable_agents.workflows.run_items import Decision, ToolResult, UserMessage
from durable_agents.workflows.state import RunState, RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from durable_agents.dataplane.payload_store import with_payload_store
from durable_agents.testing import Call, Reply
from tests.conftest import RunningWorker, serving
from tests.support import agents
from tests.support.dev_servers import local_server
from tests.support.runs import state_of, wait_for_status

BLOB_LIMIT = 1024 * 1024
"""The lowered server limit on one payload (the default is 2 MiB)."""


@pytest.fixture(scope="module")
async def limited_env(tmp_path_factory) -> AsyncIterator[WorkflowEnvironment]:
    store = tmp_path_factory.mktemp("payloads")
    converter = with_payload_store(
        pydantic_data_converter,
        {"AGENT_PAYLOAD_STORE": str(store), "AGENT_PAYLOAD_THRESHOLD": str(64 * 1024)},
    )
    environment = await local_server(
        data_converter=converter,
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=[
            "--dynamic-config-value",
            "limit.historyCount.suggestContinueAsNew=60",
            "--dynamic-config-value",
            f"limit.blobSize.error={BLOB_LIMIT}",
            "--dynamic-config-value",
            f"limit.blobSize.warn={BLOB_LIMIT // 2}",
        ],
    )
    yield environment
    await environment.shutdown()


@pytest.fixture
async def limited_worker(limited_env, model_server) -> AsyncIterator[RunningWorker]:
    async with serving(limited_env.client, model_server) as running:
        yield running


def echo(request: dict) -> Reply:
    """Answers every user message it has not answered yet; `email:` asks to send one."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=f"tool said {last['content'][:20]}")
    if last["content"].startswith("email:"):
        return Reply(tool_calls=(Call("send_email", {"to": last["content"][6:], "body": "x"}),))
    if last["content"].startswith("blob:"):
        return Reply(tool_calls=(Call("blob", {"size": int(last["content"][5:])}),))
    return Reply(content=f"echo: {last['content']}")


async def start_session(worker, agent: str, text: str):
    return await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent=agent, input=text, session=True),
        id=f"session-{uuid.uuid4().hex[:8]}",
        task_queue=worker.task_queue,
        result_type=AgentResult,
    )


def user_messages(state: RunState) -> list[str]:
    return [i.content for i in state.items if isinstance(i, UserMessage)]


async def test_session_answers_each_message_until_it_is_ended(limited_worker, model_server):
    model_server.responder = echo
    handle = await start_session(limited_worker, "assistant", "hello")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="again"))
    while (await state_of(handle)).final_output != "echo: again":
        await asyncio.sleep(0.05)
    await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal(reason="user left"))
    result = await handle.result()
    assert (result.status, result.final_output, result.turn) == (
        RunStatus.COMPLETED,
        "echo: again",
        2,
    )
    assert (await state_of(handle)).end_reason == "user left"


async def test_idle_session_ends_after_its_timeout(limited_worker, model_server):
    model_server.responder = echo
    handle = await start_session(limited_worker, "sleepy", "hello")
    result = await asyncio.wait_for(handle.result(), 20)
    assert result.status is RunStatus.COMPLETED
    assert (await state_of(handle)).end_reason == "idle for 0:00:01"


@pytest.mark.history("continue_as_new")
async def test_approval_pending_across_continue_as_new_runs_once(
    limited_worker, model_server, scenario
):
    model_server.responder = echo
    handle = await start_session(limited_worker, "concierge", "hi")
    scenario.run(handle, client=limited_worker.client)  # a server of its own
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="email:bob"))
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    state = await state_of(handle)
    assert len(state.workflow_runs) == 2  # switched with the approval pending
    call_id = state.items[-1].tool_calls[0].call_id
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id=call_id, approver="ann"))
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal())
    await handle.result()
    assert [c[0] for c in agents.CALLS] == ["send_email"]  # exactly once
    final = await state_of(handle)
    assert final.workflow_runs[0] == handle.first_execution_run_id
    assert len(set(final.workflow_runs)) == len(final.workflow_runs) == 2


async def test_messages_sent_in_a_tight_loop_across_switches_arrive_once(
    limited_worker, model_server
):
    model_server.responder = echo
    handle = await start_session(limited_worker, "concierge", "start")
    sent = [f"m{i}" for i in range(40)]
    for content in sent:
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content=content))
    while True:
        state = await state_of(handle)
        if state.status is RunStatus.AWAITING_INPUT and not state.queued_messages:
            break
        await asyncio.sleep(0.1)
    await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal())
    await handle.result()
    final = await state_of(handle)
    assert final.queued_messages == []  # none left unanswered at the end
    # None lost, none doubled, in order: each is answered, or refused (recorded, with the
    # reason) when the run's queue was full (limits.MAX_QUEUED_MESSAGES: a slow machine).
    refused = [r for r in final.refused_signals if r.signal == contract.SIGNAL_SEND_MESSAGE]
    assert all("messages are queued already" in r.refused_because for r in refused), refused
    answered = user_messages(final)
    assert answered[0] == "start" and len(answered) - 1 + len(refused) == len(sent)
    assert answered[1:] == [m for m in sent if m in answered[1:]]
    missing = [m for m in sent if m not in answered]
    assert [m for m in missing if not any(f'"{m}"' in (r.payload or "") for r in refused)] == []
    assert len(final.workflow_runs) >= 2


async def test_five_megabyte_tool_output_passes_without_payload_errors(
    limited_worker, model_server
):
    model_server.responder = echo
    handle = await start_session(limited_worker, "concierge", "blob:5000000")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=60)
    state = await state_of(handle)
    [result] = [i for i in state.items if isinstance(i, ToolResult)]
    assert len(result.content) == 5_000_000  # the state keeps it whole
    seen_by_model = model_server.requests[-1]["messages"][-1]["content"]
    assert seen_by_model.startswith("B" * 1000)
    assert seen_by_model.endswith(
        "[output truncated: showing the first 1,000 of 5,000,000 characters]"
    )
    await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal())
    await handle.result()
    history = await handle.fetch_history()
    largest = max(e.ByteSize() for e in history.events)
    assert largest < 70 * 1024  # payloads over 64 KiB went to the store, not history


@pytest.mark.soak  # 14 s; make test keeps test_history_size_budget_switches_runs
async def test_history_per_turn_does_not_grow_with_the_conversation(limited_worker, model_server):
    model_server.responder = echo
    handle = await start_session(limited_worker, "concierge", "blob:20000")
    for _ in range(12):
        await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="blob:20000"))
    await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
    await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal())
    await handle.result()
    state = await state_of(handle)
    sizes = []
    for run_id in state.workflow_runs:
        history = await limited_worker.client.get_workflow_handle(
            handle.id, run_id=run_id
        ).fetch_history()
        scheduled = [
            e
            for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and e.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
        ]
        sizes.extend(e.ByteSize() for e in scheduled)
    assert len(sizes) == state.turn
    # Requests under the store's 64 KiB threshold stay inline; larger ones are a
    # small reference. So what history records per turn is bounded, and flat once
    # the conversation is in the store, though the request keeps growing.
    assert max(sizes) < 64 * 1024 + 2048, sizes
    tail = sizes[-8:]
    assert max(tail) <= 1.5 * min(tail), sizes


async def test_temporal_suggestion_switches_and_decide_works_by_workflow_id(
    limited_worker, model_server
):
    """`assistant` has a budget of 100 turns: only Temporal's suggestion (at 60
    events on this server) switches it; the update needs no run id."""
    model_server.responder = echo
    handle = await start_session(limited_worker, "assistant", "m0")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    turn = 0
    while len((await state_of(handle)).workflow_runs) < 2:
        turn += 1
        assert turn < 30, "Temporal never suggested continue-as-new"
        await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content=f"m{turn}"))
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="email:eve"))
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    [pending] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    decision = await handle.execute_update(
        contract.UPDATE_DECIDE,
        DecideInput(call_id=pending["call_id"], decision="approve", approver="ann"),
        result_type=Decision,
    )
    assert decision.via == "update"
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal())
    await handle.result()
    final = await state_of(handle)
    assert user_messages(final) == [f"m{i}" for i in range(turn + 1)] + ["email:eve"]
    assert [c[0] for c in agents.CALLS] == ["send_email"]


async def test_run_flooded_with_refused_signals_continues_as_new_while_it_waits(
    limited_worker, model_server
):
    """Refused signals wake nothing, but they fill history: once Temporal suggests
    continue-as-new (60 events here), the waiting run switches without a turn, and
    the pending approval carries over."""
    model_server.responder = echo
    handle = await start_session(limited_worker, "assistant", "email:eve")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    for _ in range(30):
        await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="nope", approver="x"))
    async with asyncio.timeout(30):  # without the switch while waiting: never
        while len((await state_of(handle)).workflow_runs) < 2:
            await asyncio.sleep(0.1)
    [pending] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    await handle.signal(
        contract.SIGNAL_APPROVE, DecisionSignal(call_id=pending["call_id"], approver="ann")
    )
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal())
    await handle.result()
    final = await state_of(handle)
    assert (final.turn, [c[0] for c in agents.CALLS]) == (2, ["send_email"])
    assert len(final.refused_decisions) == 30  # the audit carried over too


async def test_history_size_budget_switches_runs(worker, model_server):
    """`frugal` continues as new past 8,000 bytes of history (default server limits)."""
    model_server.responder = echo
    handle = await start_session(worker, "frugal", "m0")
    for i in range(1, 6):
        await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content=f"m{i}"))
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_END_SESSION, EndSessionSignal())
    await handle.result()
    final = await state_of(handle)
    assert user_messages(final) == [f"m{i}" for i in range(6)]
    assert 2 <= len(final.workflow_runs) < final.turn
    for run_id in final.workflow_runs[:-1]:
        run = worker.client.get_workflow_handle(handle.id, run_id=run_id)
        events = (await run.fetch_history()).events
        # The budget counts what a workflow run adds, not the state it starts with
        # (a large state would otherwise switch again at once, forever).
        grown = sum(e.ByteSize() for e in events[1:])
        assert grown >= 8_000, grown


async def test_agentctl_runs_a_session_start_message_end(limited_worker, model_server):
    model_server.responder = echo
    ctl = ["--address", limited_worker.address, "--task-queue", limited_worker.task_queue]
    run_id = f"cli-session-{uuid.uuid4().hex[:6]}"
    assert (await agentctl(*ctl, "start", "assistant", "hello", "--session", "--id", run_id))[
        0
    ] == 0
    handle = limited_worker.client.get_workflow_handle(run_id)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    code, out = await agentctl(*ctl, "message", run_id, "second")
    assert (code, out.strip()) == (0, f"message sent to run {run_id}")
    while (await state_of(handle)).final_output != "echo: second":
        await asyncio.sleep(0.05)
    assert (await agentctl(*ctl, "end", run_id, "--reason", "done"))[0] == 0
    code, out = await agentctl(*ctl, "result", run_id, "--json")
    assert code == 0 and '"status": "completed"' in out
    assert (await state_of(handle)).end_reason == "done"


async def agentctl(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "agentctl"),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    return process.returncode, out.decode() + err.decode()
