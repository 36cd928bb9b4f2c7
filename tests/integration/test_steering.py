"""Steering a run while it works (issue 48), against the real dev server, worker and
scripted model: a session message's `while_busy` (queue, interrupt, reject) while a tool
runs and while the model call runs; the `interrupt` update during a model call and
during an approval wait; two messages at once; what the next model request holds, what
the tool heard, what the state, events and UI say; hostile input to each entry point."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx2
import pytest
from durable_agents.client import (
    AgentClientError,
    InterruptRefused,
    MessageRefused,
    RunNotFound,
)
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult, InterruptResult, StatusView
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunStatus
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_gateway import READER, STARTER, bearer, callers, gateway
from tests.support import agents as agents_module
from tests.support import steer_agents
from tests.support.cli_support import bound_to, error_lines
from tests.support.multi_agents import NOTICES, by_model
from tests.support.ops_agents import napper
from tests.support.ops_support import worker_process
from tests.support.runs import (
    child_run,
    start,
    state_of,
    temporal_cli,
    wait_for_status,
    workflow_task_failures,
)
from tests.support.updates import admitted, recording

HOLD = Call("hold", {"key": "k1"}, call_id="h1")
EMAIL = Call("send_email", {"to": "ann", "body": "hi"}, call_id="e1")


@pytest.fixture
async def steering(env, model_server):
    """A worker serving the steering agents (`tests.support.steer_agents`)."""
    steer_agents.reset()
    async with serving(env.client, model_server, extra_agents=steer_agents.STEER_AGENTS) as running:
        yield running
    steer_agents.RELEASED.add("*")  # nothing still holding outlives the test
    steer_agents.RELEASED.update(steer_agents.STARTED)


def agents_of(worker) -> AgentClient:
    return AgentClient(worker.client, task_queue=worker.task_queue)


def messages(request: dict) -> list[tuple[str, str]]:
    """(role, what) of each message of a chat-completions request, system left out:
    a user's or tool's content, an assistant's call ids."""
    found = []
    for m in request["messages"]:
        if m["role"] == "assistant":
            calls = ",".join(c["id"] for c in m.get("tool_calls") or [])
            found.append(("assistant", calls or m.get("content") or ""))
        elif m["role"] == "tool":
            found.append((f"tool:{m['tool_call_id']}", m["content"]))
        elif m["role"] != "system":
            found.append((m["role"], m["content"]))
    return found


async def requests_made(model_server, count: int, timeout: float = 30) -> None:
    async with asyncio.timeout(timeout):
        while len(model_server.requests) < count:
            await asyncio.sleep(0.02)


@pytest.mark.history("interrupted")
async def test_an_interrupting_message_stops_the_running_tool_and_is_answered(
    steering, model_server, scenario
):
    model_server.script(Reply(tool_calls=(HOLD,)), Reply("on it: the new thing"))
    agents = agents_of(steering)
    handle = await start(steering, "do the slow thing", agent="steerable", session=True)
    scenario.run(handle)
    await steer_agents.started("k1")
    assert await agents.message(handle.id, "stop, do the new thing", while_busy="interrupt")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    assert steer_agents.STOPPED == ["h1"]  # the cancel reached the tool
    sent = messages(model_server.requests[1])
    assert [role for role, _ in sent] == ["user", "assistant", "tool:h1", "user"]
    assert sent[2][1].startswith("Interrupted by a new message while it ran: the tool was stopped")
    assert sent[3] == ("user", "stop, do the new thing")
    state = await state_of(handle)
    result = next(i for i in state.items if isinstance(i, ToolResult))
    assert result.interrupted and result.is_error
    [record] = state.interruptions
    assert (record.via, record.model_call, record.turn) == ("message", False, 1)
    assert [(c.call_id, c.tool, c.was) for c in record.calls] == [("h1", "hold", "running")]
    events = [e async for e in agents.events(handle.id, follow=False)]
    [shown] = [e for e in events if e["type"] == "interrupted"]
    assert shown["calls"][0]["was"] == "running" and shown["via"] == "message"
    kinds = [e["type"] for e in events]
    assert kinds.index("tool_started") < kinds.index("interrupted") < kinds.index("turn_started", 2)
    await agents.end_session(handle.id)


async def test_an_interrupting_message_cuts_the_model_call_and_the_next_request_holds_both(
    steering, model_server
):
    model_server.script(Reply("too late", delay_seconds=60), Reply("both answered"))
    agents = agents_of(steering)
    handle = await start(steering, "first", agent="impatient", session=True)
    await requests_made(model_server, 1)
    await agents.message(handle.id, "second")  # the agent's default: interrupt (signal)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    assert messages(model_server.requests[1]) == [("user", "first"), ("user", "second")]
    state = await state_of(handle)
    [record] = state.interruptions
    assert record.model_call and record.calls == [] and record.turn == 0
    assert state.final_output == "both answered" and state.turn == 1
    await agents.end_session(handle.id)


async def test_a_queued_message_waits_for_the_tool_and_a_rejected_one_changes_nothing(
    steering, model_server
):
    model_server.script(Reply(tool_calls=(HOLD,)), Reply("done"), Reply("and the rest"))
    agents = agents_of(steering)
    handle = await start(steering, "slow", agent="steerable", session=True)
    await steer_agents.started("k1")
    with pytest.raises(MessageRefused, match=r"working on turn 2 .*while_busy=reject"):
        await agents.message(handle.id, "not now", while_busy="reject")
    await handle.signal(
        contract.SIGNAL_SEND_MESSAGE, {"content": "nor now", "while_busy": "reject"}
    )
    assert await agents.message(handle.id, "after it", while_busy="queue")
    state = await state_of(handle)
    [refused] = [r for r in state.refused_signals if r.signal == "send_message"]
    assert "while_busy=reject" in refused.refused_because
    assert state.queued_messages == ["after it"] and state.interruptions == []
    steer_agents.RELEASED.add("k1")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    assert steer_agents.STOPPED == []  # never cancelled: it finished
    sent = messages(model_server.requests[1])
    assert sent[2:] == [("tool:h1", "released k1"), ("user", "after it")]
    assert all("now" not in text for _, text in sent)
    await agents.end_session(handle.id)


async def test_the_interrupt_update_during_a_model_call_ends_a_single_run_interrupted(
    steering, model_server
):
    model_server.script(Reply("too slow", delay_seconds=60))
    handle = await start(steering, "think hard", agent="steerable")
    await requests_made(model_server, 1)
    done = await bound_to(steering)("interrupt", handle.id, "--reason", "wrong task", "--json")
    assert done.code == 0, done.stderr
    answer = InterruptResult.model_validate_json(done.stdout)
    assert answer.status.status is RunStatus.INTERRUPTED
    assert answer.interruption is not None and answer.interruption.model_call
    assert answer.interruption.via == "update" and answer.interruption.reason == "wrong task"
    assert (await handle.result()).status is RunStatus.INTERRUPTED
    described = (await handle.describe()).raw_description.workflow_execution_info
    status = described.search_attributes.indexed_fields["AgentStatus"].data
    assert json.loads(status) == "interrupted"
    again = await bound_to(steering)("interrupt", handle.id)
    assert again.code != 0 and "has already ended" in again.stderr
    listed = await bound_to(steering)("list", "--status", "interrupted", "--json")
    assert listed.code == 0 and handle.id in listed.stdout


async def test_the_interrupt_update_during_an_approval_wait_withdraws_the_call(
    steering, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply("dropped the email"))
    agents = agents_of(steering)
    handle = await start(steering, "mail ann", agent="steerable", session=True)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    done = await agents.interrupt(handle.id, by="oncall", reason="not that one")
    assert done.status.status is RunStatus.AWAITING_INPUT
    assert done.interruption is not None
    [call] = done.interruption.calls
    assert (call.call_id, call.was) == ("e1", "awaiting_approval")
    assert "by oncall: not that one" in call.note and "withdrawn" in call.note
    assert await agents.pending(handle.id) == []
    state = await state_of(handle)
    assert [i.call_id for i in state.items if isinstance(i, ToolResult) and i.interrupted] == ["e1"]
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "**Interrupted** by `oncall`" in metadata.current_details
    assert "withdrawn `e1`" in metadata.current_details
    shown = await bound_to(steering)("state", handle.id)
    assert "tool interrupted [e1]" in shown.stdout
    assert "e1 withdrawn (waited for approval)" in shown.stdout
    events = [e async for e in agents.events(handle.id, follow=False)]
    [gone] = [e for e in events if e["type"] == "approval_expired"]
    assert gone["call_id"] == "e1" and gone["via"] == "interrupted"
    with pytest.raises(Exception, match="e1"):  # withdrawn: no decision can run it now
        await agents.decide(handle.id, "e1", "approve", approver="ann")
    await agents.message(handle.id, "write to bob instead")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    sent = messages(model_server.requests[1])
    assert sent[1:] == [
        ("assistant", "e1"),
        ("tool:e1", call.note),
        ("user", "write to bob instead"),
    ]
    await agents.end_session(handle.id)


async def test_two_interrupting_messages_at_once_are_both_answered_after_one_interruption(
    steering, model_server
):
    model_server.script(Reply(tool_calls=(HOLD,)), Reply("both"))
    agents = agents_of(steering)
    handle = await start(steering, "slow", agent="impatient", session=True)
    await steer_agents.started("k1")
    await asyncio.gather(
        handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "one"}),
        handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "two"}),
    )
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    sent = messages(model_server.requests[1])
    assert sorted(sent[3:]) == [("user", "one"), ("user", "two")]
    state = await state_of(handle)
    assert len(state.interruptions) == 1 and steer_agents.STOPPED == ["h1"]
    await agents.end_session(handle.id)


async def test_hostile_and_pointless_steering_is_refused_with_why(steering, model_server):
    model_server.script(Reply("hello"))
    agents = agents_of(steering)
    handle = await start(steering, "hi", agent="steerable", session=True)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    with pytest.raises(InterruptRefused, match="waits for the user's next message"):
        await agents.interrupt(handle.id)
    with pytest.raises(WorkflowUpdateFailedError):  # not a policy: refused, nothing kept
        await handle.execute_update(
            contract.UPDATE_SEND_MESSAGE, {"content": "x", "while_busy": "sometimes"}
        )
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(
            contract.UPDATE_INTERRUPT, {"reason": "r" * 3_000}, result_type=InterruptResult
        )
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(contract.UPDATE_INTERRUPT, {"by": "x", "halt_everything": True})
    for wrong in ("stop", [1, 2], {"by": 7}, {"by": ""}):
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(contract.UPDATE_INTERRUPT, wrong)
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(contract.UPDATE_SEND_MESSAGE, ["not", "a", "message"])
    await temporal_cli(
        steering, "workflow", "signal", "--workflow-id", handle.id, "--name", "send_message",
        "--input", '{"content": "y", "while_busy": 7}',
    )  # fmt: skip
    with pytest.raises(MessageRefused, match="32,000"):
        await agents.message(handle.id, "z" * 40_000, while_busy="queue")
    state = await state_of(handle)
    assert [r.signal for r in state.refused_signals] == ["send_message"]
    assert state.queued_messages == [] and state.interruptions == []
    assert [i.content for i in state.items if i.type == "user_message"] == ["hi"]
    with pytest.raises(RunNotFound):
        await agents.interrupt(f"nobody-{uuid.uuid4().hex[:8]}")
    elsewhere = await Client.connect(
        steering.address, namespace="elsewhere", data_converter=pydantic_data_converter
    )
    with pytest.raises(AgentClientError, match="elsewhere"):  # ids are a namespace's own
        await AgentClient(elsewhere, task_queue=steering.task_queue).interrupt(handle.id)
    view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
    assert view.status is RunStatus.AWAITING_INPUT
    assert await workflow_task_failures(handle) == 0  # nothing wedged the run
    await agents.end_session(handle.id)
    await handle.result()
    with pytest.raises(InterruptRefused, match="has already ended"):
        await agents.interrupt(handle.id)
    with pytest.raises(MessageRefused, match="has already ended"):
        await agents.message(handle.id, "late", while_busy="interrupt")


async def test_interrupting_a_caller_cancels_the_agent_it_called_as_a_tool(team, model_server):
    model_server.responder = by_model(
        {
            "lead-model": [Reply(tool_calls=(Call("ask_mailer", {"input": "notify"}, "c1"),))],
            "mail-model": [Reply(tool_calls=(Call("notify", {"to": "x", "text": "y"}, "n1"),))],
        }
    )
    agents = agents_of(team)
    run_id = (await agents.start("lead", "go")).id
    child_id = await child_run(team.client, run_id, "c1")
    child = team.client.get_workflow_handle(child_id)
    await wait_for_status(child, RunStatus.AWAITING_APPROVAL)
    # seen from the top once the child's report has reached the caller (a signal of its
    # own, after the child's status changed: not at the same moment on a loaded machine)
    async with asyncio.timeout(30):
        while [p.call_id for p in await agents.pending(run_id)] != ["n1"]:
            await asyncio.sleep(0.05)
    done = await agents.interrupt(run_id, reason="never mind")
    assert done.status.status is RunStatus.INTERRUPTED
    assert done.interruption is not None
    [call] = done.interruption.calls
    assert call.was == "running" and f"its run {child_id} was cancelled" in call.note
    # the child was cancelled and waited for before the interrupt was answered
    assert (await child.describe()).status is WorkflowExecutionStatus.CANCELED
    assert await agents.pending(run_id) == [] and NOTICES == []


async def test_a_paused_session_takes_an_interrupting_message_and_answers_it_once_resumed(
    steering, model_server
):
    model_server.script(Reply(tool_calls=(HOLD,)), Reply("answered"))
    agents = agents_of(steering)
    handle = await start(steering, "slow", agent="steerable", session=True)
    await steer_agents.started("k1")
    await agents.pause(handle.id, by="ops")
    await agents.message(handle.id, "change of plan", while_busy="interrupt")
    await wait_for_status(handle, RunStatus.PAUSED)
    state = await state_of(handle)
    assert steer_agents.STOPPED == ["h1"] and len(state.interruptions) == 1
    assert len(model_server.requests) == 1  # paused: the model is not asked yet
    await agents.unpause(handle.id)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    assert messages(model_server.requests[1])[-1] == ("user", "change of plan")
    await agents.end_session(handle.id)


async def test_agentctl_and_the_gateway_steer_a_run_and_refuse_what_they_must(
    steering, model_server, tmp_path
):
    model_server.script(Reply(tool_calls=(HOLD,)), Reply("ok"), Reply(tool_calls=(EMAIL,)))
    handle = await start(steering, "slow", agent="steerable", session=True)
    await steer_agents.started("k1")
    ctl = bound_to(steering)
    refused = await ctl("message", handle.id, "later", "--while-busy", "reject")
    assert refused.code == 1 and "while_busy=reject" in error_lines(refused.stderr)[0]
    odd = await ctl("message", handle.id, "x", "--while-busy", "sometimes")
    assert odd.code == 2 and "invalid choice" in odd.stderr
    async with (
        gateway(steering, callers(tmp_path)) as url,
        httpx2.AsyncClient(base_url=url, timeout=60) as http,
    ):
        path = f"/runs/{handle.id}"
        bogus = {"content": "x", "while_busy": "sometimes"}
        answer = await http.post(f"{path}/messages", json=bogus, headers=bearer(STARTER))
        assert answer.status_code == 400 and "while_busy" in answer.text
        rejected = {"content": "x", "while_busy": "reject"}
        answer = await http.post(f"{path}/messages", json=rejected, headers=bearer(STARTER))
        assert answer.status_code == 409
        assert answer.json()["error"]["code"] == "message_refused"
        reader = await http.post(f"{path}/interrupt", json={}, headers=bearer(READER))
        assert reader.status_code == 403
        extra = {"reason": "x", "everything": True}
        answer = await http.post(f"{path}/interrupt", json=extra, headers=bearer(STARTER))
        assert answer.status_code == 400
        huge = {"reason": "r" * 3_000}
        answer = await http.post(f"{path}/interrupt", json=huge, headers=bearer(STARTER))
        assert answer.status_code == 400
        posing = await http.post(f"{path}/interrupt", json={"by": "ann"}, headers=bearer(STARTER))
        assert posing.status_code == 403 and "may not interrupt as 'ann'" in posing.text
        taken = await http.post(
            f"{path}/messages",
            json={"content": "now this", "while_busy": "interrupt"},
            headers=bearer(STARTER),
        )
        assert taken.status_code == 202, taken.text
        await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        idle = await http.post(f"{path}/interrupt", json={}, headers=bearer(STARTER))
        assert idle.status_code == 409
        assert idle.json()["error"]["code"] == "interrupt_refused"
        await http.post(f"{path}/messages", json={"content": "mail"}, headers=bearer(STARTER))
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        stopped = await http.post(
            f"{path}/interrupt", json={"reason": "no mail"}, headers=bearer(STARTER)
        )
        assert stopped.status_code == 200, stopped.text
        body = stopped.json()
        assert body["status"]["status"] == "awaiting_input"
        assert body["interruption"]["by"] == "bot"  # the caller, named by the gateway
        assert [c["was"] for c in body["interruption"]["calls"]] == ["awaiting_approval"]
    state = await state_of(handle)
    assert [r.via for r in state.interruptions] == ["message", "update"]
    await agents_of(steering).end_session(handle.id)


async def test_messages_around_a_continue_as_new_are_all_answered(steering, model_server):
    model_server.script(Reply(tool_calls=(HOLD,)), Reply("all three"))
    agents = agents_of(steering)
    handle = await start(steering, "slow", agent="switching", session=True)
    await steer_agents.started("k1")
    await asyncio.gather(  # the cut, then a switch to a new workflow run before the model
        agents.message(handle.id, "one", while_busy="interrupt"),
        handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "two"}),
        handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "three", "while_busy": "queue"}),
    )
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    state = await state_of(handle)
    assert len(state.workflow_runs) >= 2  # it continued as new on the way
    sent = messages(model_server.requests[1])
    assert sorted(text for role, text in sent[3:]) == ["one", "three", "two"]
    assert len(state.interruptions) == 1 and state.queued_messages == []
    await agents.end_session(handle.id)


async def test_an_approved_call_that_had_not_started_is_never_run(steering, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply("fine"))
    agents = agents_of(steering)
    handle = await start(steering, "mail", agent="steerable", session=True)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await agents.pause(handle.id)
    await agents.approve(handle.id, "e1", approver="ann")  # approved, paused: not started
    done = await agents.interrupt(handle.id, reason="cancel the mail")
    assert [(c.call_id, c.was) for c in done.interruption.calls] == [("e1", "approved")]
    await agents.unpause(handle.id)
    await agents.message(handle.id, "anything else?")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    assert [name for name, *_ in agents_module.CALLS] == []  # never ran
    await agents.end_session(handle.id)


async def test_a_tool_that_ignores_its_cancel_holds_the_interrupt_and_keeps_its_result(
    steering, model_server
):
    model_server.script(Reply(tool_calls=(Call("stubborn", {"key": "s"}, "s1"),)), Reply("ok"))
    agents = agents_of(steering)
    handle = await start(steering, "go", agent="steerable", session=True)
    await steer_agents.started("s")
    sending = asyncio.create_task(agents.message(handle.id, "stop", while_busy="interrupt"))
    async with asyncio.timeout(30):
        while not steer_agents.STOPPED:  # the cancel reached it: it works on
            await asyncio.sleep(0.02)
    assert (await state_of(handle)).interruptions == []  # waits for the tool to stop
    steer_agents.RELEASED.add("s")
    await sending
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    state = await state_of(handle)
    [record] = state.interruptions
    assert (record.calls[0].call_id, record.calls[0].was) == ("s1", "finished")
    assert record.calls[0].note.endswith("had finished; it keeps its own result: finished s anyway")
    [result] = [i for i in state.items if isinstance(i, ToolResult)]
    # it finished: its real result, neither an error nor interrupted
    assert (result.content, result.is_error) == ("finished s anyway", False)
    assert not result.interrupted
    sent = messages(model_server.requests[1])
    assert sent[2] == ("tool:s1", "finished s anyway")
    events = [e async for e in agents.events(handle.id, follow=False)]
    [done] = [e for e in events if e["type"] == "tool_finished"]
    assert done["is_error"] is False and "interrupted" not in done
    [shown] = [e for e in events if e["type"] == "interrupted"]
    assert [(c["call_id"], c["was"]) for c in shown["calls"]] == [("s1", "finished")]
    await agents.end_session(handle.id)


async def test_a_tool_a_cancel_cannot_reach_is_recorded_as_maybe_still_running(
    steering, model_server
):
    model_server.script(Reply(tool_calls=(Call("deaf", {"key": "d"}, "d1"),)), Reply("ok"))
    agents = agents_of(steering)
    handle = await start(steering, "go", agent="steerable", session=True)
    await steer_agents.started("d")
    await agents.message(handle.id, "stop", while_busy="interrupt")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)  # not waiting for the tool
    assert "d" not in steer_agents.RELEASED
    [record] = (await state_of(handle)).interruptions
    assert "cannot hear it" in record.calls[0].note and "may still run" in record.calls[0].note
    steer_agents.RELEASED.add("d")
    await agents.end_session(handle.id)


async def test_an_interrupt_survives_a_worker_killed_mid_tool(env, model_server, tmp_path):
    """kill -9 of the worker running the tool, the `interrupt` update sent while no worker
    is up: the next worker replays the run, stops the tool (its retry hears the cancel)
    and ends the run interrupted; the tool never finishes."""
    model_server.script(Reply(tool_calls=(Call("nap", {"seconds": 60}, call_id="n1"),)))
    queue = f"steer-kill-{uuid.uuid4().hex[:8]}"
    run_id = f"steer-kill-{uuid.uuid4().hex[:8]}"
    async with worker_process(
        env, model_server, AGENT_MODULES="tests.support.ops_agents", AGENT_TASK_QUEUE=queue
    ) as process:
        await env.client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="napper", input="nap", context={"marks": str(tmp_path)}),
            id=run_id,
            task_queue=queue,
        )
        async with asyncio.timeout(30):
            while not (tmp_path / "started").exists():
                await asyncio.sleep(0.05)
        process.kill()
        await process.wait()
    client, sent = recording(env.client)
    agents = AgentClient(client, task_queue=queue)
    asked = asyncio.create_task(agents.interrupt(run_id, by="oncall"))
    await admitted(env.client, run_id, sent)  # the server holds it
    assert not asked.done()  # no worker: the update waits for one
    async with serving(env.client, model_server, task_queue=queue, extra_agents=[napper]):
        async with asyncio.timeout(60):
            done = await asked
        assert done.status.status is RunStatus.INTERRUPTED
        assert [(c.call_id, c.was) for c in done.interruption.calls] == [("n1", "running")]
        ended = env.client.get_workflow_handle(run_id, result_type=AgentResult)
        assert (await ended.result()).status is RunStatus.INTERRUPTED
    assert not (tmp_path / "finished").exists()
