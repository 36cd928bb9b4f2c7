"""Pause and resume against the real dev server, worker and scripted model: a paused run
starts no new model or tool call (the running one finishes, its result kept), takes
decisions and messages meanwhile and acts on them once resumed; the `pause`/`resume`
signals and updates, agentctl, the UI and the search attribute show it; it survives a
worker restart and a snapshot; hostile or pointless pauses are refused."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.client import PauseRefused
from durable_agents.client import snapshots as snapshot_files
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentResult, StatusView
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunStatus
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowHandle

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support import agents
from tests.support.cli_support import bound_to
from tests.support.runs import activities_scheduled, start, state_of, wait_for_status

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="mail")


async def finished(handle) -> AgentResult:
    async with asyncio.timeout(30):
        return await handle.result()


async def status_of(handle: WorkflowHandle) -> StatusView:
    return await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)


async def test_a_pause_lets_the_running_tool_finish_and_starts_nothing_new(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("nap", {"seconds": 1.5}, "n1"),)), Reply("rested"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "nap", agent="assistant")
    async with asyncio.timeout(30):
        while not [c for c in agents.CALLS if c[0] == "nap"]:
            await asyncio.sleep(0.05)
    view = await client.pause(handle.id, by="oncall", reason="checking the naps")
    assert view.paused and view.status is RunStatus.RUNNING  # the nap still runs
    await wait_for_status(handle, RunStatus.PAUSED)
    state = await state_of(handle)
    assert [i.content for i in state.items if i.type == "tool_result"] == ["slept 1.5"]
    assert state.paused is not None and state.paused.by == "oncall"
    await asyncio.sleep(0.5)
    assert len(model_server.requests) == 1  # nothing new started while paused
    described = (await handle.describe()).raw_description.workflow_execution_info
    assert json.loads(described.search_attributes.indexed_fields["AgentStatus"].data) == "paused"
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "**Paused** by `oncall`: `checking the naps`" in metadata.current_details
    shown = await bound_to(worker)("status", handle.id)
    assert f"{handle.id} · paused · turn 1" in shown.stdout
    watched = await bound_to(worker)("watch", handle.id)
    assert watched.code == 0 and f"run {handle.id} is paused: agentctl unpause" in watched.stdout
    resumed = await bound_to(worker)("unpause", handle.id, "--as", "oncall")
    assert resumed.code == 0, resumed.stderr
    assert (await finished(handle)).status is RunStatus.COMPLETED
    assert (await state_of(handle)).paused is None


@pytest.mark.history("pause_resume")
async def test_a_decision_made_while_paused_takes_effect_on_resume(worker, model_server, scenario):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply("sent"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "mail", agent="assistant")
    scenario.run(handle)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    paused = await bound_to(worker)("pause", handle.id, "--reason", "audit", "--json")
    assert paused.code == 0 and paused.json()["paused"] is True
    await wait_for_status(handle, RunStatus.PAUSED)
    await client.approve(handle.id, "mail", approver="ann")
    async with asyncio.timeout(30):
        while not [i for i in (await state_of(handle)).items if isinstance(i, Decision)]:
            await asyncio.sleep(0.1)
    # the task that recorded the decision has completed: it scheduled no tool
    assert "run_tool" not in await activities_scheduled(handle)
    assert [c[0] for c in agents.CALLS] == []  # approved, but paused: not run yet
    assert (await status_of(handle)).status is RunStatus.PAUSED
    await client.unpause(handle.id)
    assert (await finished(handle)).status is RunStatus.COMPLETED
    assert [c[0] for c in agents.CALLS] == ["send_email"]


async def test_a_paused_session_takes_messages_and_answers_them_once_resumed(worker, model_server):
    model_server.script(Reply("hello"), Reply("about that"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "hi", agent="assistant", session=True)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await client.pause(handle.id)
    await client.message(handle.id, "and another thing")
    await wait_for_status(handle, RunStatus.PAUSED)
    await asyncio.sleep(0.3)
    assert len(model_server.requests) == 1
    await client.unpause(handle.id)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    assert len(model_server.requests) == 2
    await client.end_session(handle.id)
    await finished(handle)


async def test_a_pause_survives_a_worker_restart_and_a_snapshot(env, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply("sent"))
    async with serving(env.client, model_server) as first:
        client = AgentClient(first.client, task_queue=first.task_queue)
        handle = await start(first, "mail", agent="assistant")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        await client.pause(handle.id, by="oncall")
    async with serving(env.client, model_server, task_queue=first.task_queue):
        assert (await status_of(handle)).status is RunStatus.PAUSED  # replayed: still paused
        exported = await client.export(handle.id)
        assert snapshot_files.loads(exported).paused is not None
        still = await client.resume(exported)
        await wait_for_status(
            worker_handle := env.client.get_workflow_handle(still.id), RunStatus.PAUSED
        )
        unpaused = await client.resume(exported, unpause=True)
        await wait_for_status(
            env.client.get_workflow_handle(unpaused.id), RunStatus.AWAITING_APPROVAL
        )
        for run_id in (handle.id, still.id, unpaused.id):
            await client.cancel(run_id)
        assert (await status_of(worker_handle)).status is RunStatus.CANCELLED


async def test_pauses_that_cannot_apply_are_refused(worker, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply("sent"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "mail", agent="assistant")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    with pytest.raises(PauseRefused, match="is not paused"):
        await client.unpause(handle.id)
    await client.pause(handle.id, by="ann")
    with pytest.raises(PauseRefused, match="is paused already by ann"):
        await client.pause(handle.id)
    refused = await bound_to(worker)("pause", handle.id)
    assert refused.code != 0 and "is paused already by ann" in refused.stderr
    # Signals get no answer: what the run cannot take is recorded, and changes nothing.
    await handle.signal(contract.SIGNAL_PAUSE, {})
    await handle.signal(contract.SIGNAL_PAUSE, {"by": "x"})
    async with asyncio.timeout(30):
        while len((await state_of(handle)).refused_signals) < 2:
            await asyncio.sleep(0.1)
    reasons = [r.refused_because for r in (await state_of(handle)).refused_signals]
    assert all("is paused already by ann" in r for r in reasons)
    await handle.signal(contract.SIGNAL_RESUME, {"by": "ann"})
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    state = await state_of(handle)
    assert [(e.action, e.by) for e in state.pause_log] == [("pause", "ann"), ("resume", "ann")]
    await client.approve(handle.id, "mail", approver="ann")
    await finished(handle)
    with pytest.raises(PauseRefused, match="has already ended"):
        await client.pause(handle.id)


@pytest.mark.parametrize(
    "payload, kept, dropped",
    [
        ({"by": 7, "reason": "stop"}, (None, "stop"), "by: Input should be a valid string"),
        ({"by": "oncall", "why": "x"}, ("oncall", None), "why: Extra inputs are not permitted"),
        ({"reason": "r" * 2_001}, (None, "r" * 2_000), "at most 2000 characters"),
        ("stop now", (None, None), "Input should be an object"),
    ],
)
async def test_a_pause_signal_with_a_bad_field_still_pauses(
    worker, model_server, payload, kept, dropped
):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply("sent"))
    handle = await start(worker, "mail", agent="assistant")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.signal(contract.SIGNAL_PAUSE, payload)  # an emergency stop is not refused
    await wait_for_status(handle, RunStatus.PAUSED)
    state = await state_of(handle)
    assert (state.paused.by, state.paused.reason) == kept
    [note] = state.refused_signals
    assert note.refused_because.startswith("applied without the parts it could not use: ")
    assert dropped in note.refused_because
    await handle.execute_update(contract.UPDATE_RESUME)  # no payload: all fields optional
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.cancel()


async def test_a_paused_run_continues_as_new_paused(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)),
        Reply(tool_calls=(Call("nap", {"seconds": 1.5}, "n1"),)),
        Reply("done"),
    )
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "go", agent="concierge")  # a new workflow run every 2 calls
    async with asyncio.timeout(30):
        while not [c for c in agents.CALLS if c[0] == "nap"]:
            await asyncio.sleep(0.05)
    await client.pause(handle.id, reason="look first")
    async with asyncio.timeout(15):  # the switch falls due while it waits: it switches paused
        while (await handle.describe()).run_id == handle.first_execution_run_id:
            await asyncio.sleep(0.1)
    await wait_for_status(handle, RunStatus.PAUSED)
    assert (await state_of(handle)).paused.reason == "look first"
    assert len(model_server.requests) == 2
    await client.unpause(handle.id)
    assert (await finished(handle)).status is RunStatus.COMPLETED
