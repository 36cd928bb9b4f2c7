"""Snapshots against real servers: export ended runs, resume (also on a second Temporal
server), fork, the golden fixture on a worker, and the in-process driver."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest
from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client import (
    AgentClient,
    AgentClientError,
    InvalidSnapshot,
    RunFailed,
    snapshots,
)
from durable_agents.client.local_run import run_locally
from durable_agents.workflows import decisions, loop, search_attributes, snapshot
from durable_agents.workflows.agent_spec import ModelPrice
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelRequest,
    ModelToolCall,
    StatusView,
)
from durable_agents.workflows.run_items import Decision, UserMessage
from durable_agents.workflows.state import RunOrigin, RunState, RunStatus
from openai import AsyncOpenAI
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents.testing import Call, Fault, Reply
from durable_agents.worker import build_worker
from tests.conftest import serving
from tests.support import agents
from tests.support.dev_servers import local_server
from tests.support.priced_agents import PRICES
from tests.support.snapshot_golden import golden_text

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="call_email")
ADD = Call("add", {"a": 2, "b": 3}, call_id="call_add")
WAIT_SECONDS = 30.0  # bounds a failing test only: a loaded machine takes seconds


@pytest.fixture
def client(worker) -> AgentClient:
    return AgentClient(worker.client, task_queue=worker.task_queue)


async def wait_for(client: AgentClient, run_id: str, status: RunStatus) -> StatusView:
    """Poll `get_status` until the run reaches `status` (bounded)."""
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    last: object = None
    while asyncio.get_running_loop().time() < deadline:
        try:
            last = await client.status(run_id)
        except AgentClientError as err:  # the first workflow task may not have run yet
            last = err
        if isinstance(last, StatusView) and last.status == status:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not reach {status.value}: {last!r}")


async def waiting_run(client: AgentClient) -> tuple[str, str]:
    """A run waiting for approval of EMAIL, and its snapshot taken while it waits."""
    run_id = (await client.start("assistant", "mail a@b.c")).id
    await wait_for(client, run_id, RunStatus.AWAITING_APPROVAL)
    return run_id, await client.export(run_id)


def executions() -> list[tuple[str, dict]]:
    return [(tool, arguments) for tool, arguments, _ in agents.CALLS]


# --- export ------------------------------------------------------------------------------


async def test_export_of_completed_failed_and_cancelled_runs_loads(client, worker, model_server):
    model_server.script(
        Reply(content="hello"), Fault(400, "bad request"), Reply(tool_calls=(EMAIL,))
    )
    done = (await client.start("assistant", "hi")).id
    await client.result(done)
    failed = (await client.start("assistant", "break")).id
    with pytest.raises(RunFailed):
        await client.result(failed)
    cancelled, _ = await waiting_run(client)
    await worker.client.get_workflow_handle(cancelled).cancel()
    with pytest.raises(RunFailed, match="cancelled"):
        await client.result(cancelled)

    states = [snapshot.loads(await client.export(r)) for r in (done, failed, cancelled)]

    assert [s.status for s in states] == [
        RunStatus.COMPLETED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
    ]
    assert states[0].final_output == "hello"
    assert states[1].error is not None and states[1].error.details["status_code"] == 400
    assert [i.type for i in states[2].items] == ["user_message", "assistant_message"]
    assert executions() == []


async def test_export_is_signed_with_the_key_from_the_environment(
    client, model_server, monkeypatch
):
    model_server.script(Reply(content="hello"))
    run_id = (await client.start("assistant", "hi")).id
    await client.result(run_id)
    monkeypatch.setenv("AGENT_SNAPSHOT_KEY", "s3cret")

    text = await client.export(run_id)

    assert json.loads(text)["integrity"]["algorithm"] == "hmac-sha256"
    assert snapshot.loads(text, key=b"s3cret").run_id == run_id
    monkeypatch.setenv("AGENT_SNAPSHOT_KEY", "another")
    with pytest.raises(InvalidSnapshot, match="signed with another key"):
        await client.resume(text)


# --- resume --------------------------------------------------------------------------------


async def test_resumed_run_keeps_the_pending_approval_and_runs_the_tool_once(
    client, worker, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    source, text = await waiting_run(client)
    await worker.client.get_workflow_handle(source).cancel()
    with pytest.raises(RunFailed, match="cancelled"):
        await client.result(source)

    resumed = (await client.resume(text)).id

    view = await wait_for(client, resumed, RunStatus.AWAITING_APPROVAL)
    assert (view.turn, view.usage.model_calls) == (1, 1)
    assert [p.call_id for p in await client.pending(resumed)] == ["call_email"]
    state = await client.state(resumed)
    assert state.origin == RunOrigin(run_id=source, turn=1, mode="resume")
    await client.approve(resumed, "call_email", approver="ann")
    result = await client.result(resumed)
    assert (result.status, result.final_output, result.turn) == (RunStatus.COMPLETED, "sent", 2)
    # proposed in the source run: it keeps the source's idempotency key across the resume
    assert agents.CALLS == [("send_email", {"to": "a@b.c", "body": "hi"}, f"{source}:call_email")]


async def test_a_decision_carried_in_a_snapshot_is_asked_again_then_the_call_runs_once(
    client, worker, model_server
):
    """Anyone may write a snapshot, so a decision it carries on a call still open does
    not count: the resumed run records it as dropped and asks again."""
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    source, text = await waiting_run(client)
    await worker.client.get_workflow_handle(source).terminate("moved")
    state = snapshot.loads(text)
    edit = {"to": "a@b.c", "body": "edited"}
    approval = DecideInput(call_id="call_email", decision="approve", approver="ann", arguments=edit)
    decisions.apply(state, approval, via="update", now=datetime.now(UTC))
    assert isinstance(loop.next_step(state), loop.RunTools)  # decided, not executed

    resumed = (await client.resume(snapshot.dumps(state))).id

    await wait_for(client, resumed, RunStatus.AWAITING_APPROVAL)
    dropped = (await client.state(resumed)).refused_decisions[-1]
    assert (dropped.call_id, dropped.via, dropped.arguments) == ("call_email", "snapshot", edit)
    assert executions() == []
    await client.decide(resumed, "call_email", "approve", approver="ann", arguments=edit)
    async with asyncio.timeout(30):
        assert (await client.result(resumed)).final_output == "sent"
    assert executions() == [("send_email", edit)]
    [decision] = [i for i in (await client.state(resumed)).items if isinstance(i, Decision)]
    assert (decision.approver, decision.arguments) == ("ann", edit)


async def test_resume_on_a_second_temporal_server_under_the_same_id(client, worker, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    source, text = await waiting_run(client)
    await worker.client.get_workflow_handle(source).terminate("moved to another cluster")
    second = await local_server(
        data_converter=pydantic_data_converter,
        search_attributes=search_attributes.ALL,
    )
    openai_client = AsyncOpenAI(base_url=model_server.base_url, api_key="test", max_retries=0)
    registry = AgentRegistry.from_modules(["tests.support.agents"])
    try:
        async with build_worker(
            second.client, registry=registry, model_client=openai_client, task_queue="agents-b"
        ):
            other = AgentClient(second.client, task_queue="agents-b")
            resumed = (await other.resume(text, run_id=source)).id  # a fresh server: a resume
            await wait_for(other, resumed, RunStatus.AWAITING_APPROVAL)
            decision = await other.decide(resumed, "call_email", "approve", approver="ann")
            result = await other.result(resumed)
            state = await other.state(resumed)
    finally:
        await openai_client.close()
        await second.shutdown()

    assert (decision.via, result.status, result.final_output) == ("update", "completed", "sent")
    assert resumed == source and state.run_id == source
    assert state.origin == RunOrigin(run_id=source, turn=1, mode="resume")
    assert executions() == [("send_email", {"to": "a@b.c", "body": "hi"})]
    assert second.client.service_client.config.target_host != worker.address


# --- fork and the golden fixture -------------------------------------------------------------


async def test_fork_at_an_earlier_turn_with_new_input_continues_from_there(client, model_server):
    model_server.script(
        Reply(tool_calls=(ADD,)), Reply(content="5"), Reply(content="you asked again: 5")
    )
    source = (await client.start("assistant", "add 2 and 3")).id
    assert (await client.result(source)).turn == 2
    text = await client.export(source)

    forked = (await client.fork(text, at_turn=1, input="are you sure?")).id

    result = await client.result(forked)
    assert (result.final_output, result.turn) == ("you asked again: 5", 2)
    state = await client.state(forked)
    assert state.origin == RunOrigin(run_id=source, turn=1, mode="fork")
    assert [i.type for i in state.items] == [
        "user_message",
        "assistant_message",
        "tool_result",
        "user_message",
        "assistant_message",
    ]
    assert state.items[3] == UserMessage(content="are you sure?")
    assert state.usage.model_calls == 1  # the fork's own spend
    assert model_server.requests[-1]["messages"][-1] == {"role": "user", "content": "are you sure?"}
    assert len(agents.CALLS) == 1  # the source's add; the fork kept its result


async def test_fork_refusal_is_a_clear_error(client, worker, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    source, text = await waiting_run(client)
    await worker.client.get_workflow_handle(source).terminate("test over")
    with pytest.raises(InvalidSnapshot, match="tool calls call_email of that turn have no result"):
        await client.fork(text, at_turn=1, input="hurry")


@pytest.mark.parametrize("shape", ["single", "tree"])
async def test_golden_fixture_resumes_on_the_worker_and_completes(env, model_server, shape):
    model_server.script(Reply(content="all done", usage=(20, 4)))
    # The worker prices the golden agent's model: the snapshot keeps a cost budget,
    # which a worker without the price refuses to resume.
    prices = {**PRICES, "test-model": ModelPrice(input=1.0, output=2.0)}
    async with serving(env.client, model_server, prices=prices) as worker:
        client = AgentClient(worker.client, task_queue=worker.task_queue)
        await _resume_golden(client, shape)


async def test_a_snapshot_with_a_cost_budget_does_not_resume_where_it_has_no_price(client):
    with pytest.raises(RunFailed, match="a cost budget needs a price for the model 'test-model'"):
        await client.result((await client.resume(golden_text("single"))).id)


async def test_the_tree_fixtures_pending_interrupt_is_applied_when_it_resumes(env, model_server):
    """The tree fixture holds an interrupt asked and not applied when it was written: the
    resumed run applies it first, and, a single run, ends `interrupted` by who asked."""
    prices = {**PRICES, "test-model": ModelPrice(input=1.0, output=2.0)}
    async with serving(env.client, model_server, prices=prices) as worker:
        client = AgentClient(worker.client, task_queue=worker.task_queue)
        resumed = (await client.resume(golden_text("tree"), unpause=True)).id
        result = await client.result(resumed)
        state = await client.state(resumed)
    assert result.status == state.status == "interrupted"
    assert (state.interruptions[-1].by, state.interruptions[-1].reason) == ("oncall", "wrong order")
    assert model_server.requests == []  # no model call: the turn was interrupted first


async def _resume_golden(client: AgentClient, shape: str) -> None:
    # The tree fixture's pending interrupt is taken out: the run is to go on here (the test
    # above resumes it with its interrupt).
    golden = snapshot.loads(golden_text(shape))
    text = snapshot.dumps(golden.model_copy(update={"interrupt": None}))
    resumed = (await client.resume(text, unpause=True)).id  # it is paused

    result = await client.result(resumed)
    assert (result.status, result.final_output, result.turn) == ("completed", "all done", 3)
    state = await client.state(resumed)
    assert state.origin == RunOrigin(run_id="support-7", turn=2, mode="resume")
    assert state.usage.model_calls == 3 and state.usage.total_tokens == 909 + 24
    assert state.held_decisions == []  # its call was never proposed: now refused, with why
    assert state.refused_decisions[-1].call_id == "c5"


# --- in process, no Temporal ------------------------------------------------------------------


async def test_run_locally_drives_an_exported_snapshot_to_completion(client, worker, model_server):
    model_server.script(Reply(tool_calls=(EMAIL, ADD)), Reply(content="sent and added"))
    source = (await client.start("assistant", "mail and add")).id
    await wait_for(client, source, RunStatus.AWAITING_APPROVAL)
    state = snapshot.loads(await client.export(source))
    await worker.client.get_workflow_handle(source).terminate("debugging locally")
    assert [c[0] for c in agents.CALLS] == ["add"]  # the source ran add itself
    agents.CALLS.clear()
    asked: list[str] = []

    def approve(pending) -> DecideInput:
        asked.append(pending.call_id)
        return DecideInput(call_id=pending.call_id, decision="approve", approver="local")

    async with AsyncOpenAI(base_url=model_server.base_url, api_key="t", max_retries=0) as openai:
        finished = await run_locally(
            state,
            model=ModelActivities(openai).call_model,
            registry=AgentRegistry.from_modules(["tests.support.agents"]),
            approve=approve,
        )

    assert (finished.status, finished.final_output, finished.turn) == (
        RunStatus.COMPLETED,
        "sent and added",
        2,
    )
    assert asked == ["call_email"]
    assert agents.CALLS == [("send_email", {"to": "a@b.c", "body": "hi"}, f"{source}:call_email")]
    assert [d.via for d in finished.items if isinstance(d, Decision)] == ["update"]
    assert finished.origin == RunOrigin(run_id=source, turn=1, mode="resume")
    assert snapshot.loads(snapshot.dumps(finished)) == finished


async def test_run_locally_stops_where_a_decision_is_needed(model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    agents.CALLS.clear()
    start = loop.new_state(
        agents.assistant.spec(),
        AgentInput(agent="assistant", input="mail"),
        run_id="local-1",
        now=datetime.now(UTC),
    )
    async with AsyncOpenAI(base_url=model_server.base_url, api_key="t", max_retries=0) as openai:
        waiting = await run_locally(
            start,
            model=ModelActivities(openai).call_model,
            registry=AgentRegistry([agents.assistant]),
        )
    assert waiting.status == RunStatus.AWAITING_APPROVAL
    assert [p.call_id for p in decisions.pending_approvals(waiting)] == ["call_email"]
    assert agents.CALLS == []


def _email_waiting(run_id: str) -> RunState:
    """A run of `assistant` whose email waits for approval, as a snapshot has it."""
    state = loop.new_state(
        agents.assistant.spec(),
        AgentInput(agent="assistant", input="mail"),
        run_id=run_id,
        now=datetime.now(UTC),
    )
    arguments = json.dumps({"to": "x@evil.example", "body": "hi"})
    call = ModelToolCall(call_id="call_email", tool="send_email", arguments=arguments)
    loop.record_model_reply(state, ModelReply(tool_calls=[call]), now=datetime.now(UTC))
    return state


async def _answer(request: ModelRequest) -> ModelReply:
    return ModelReply(content="not sent")


@pytest.mark.parametrize("forgery", ["no-approval-needed", "approved-in-the-file"])
async def test_run_locally_takes_approval_rules_from_the_registry_not_the_snapshot(forgery):
    # Anyone can edit a snapshot and reseal it (`agentctl seal`): the local runner, like
    # a worker, believes the registry's rules and asks `approve` again.
    document = json.loads(snapshot.dumps(_email_waiting("forged-1")))
    if forgery == "no-approval-needed":
        for item in document["items"]:
            for call in item.get("tool_calls", []):
                call["needs_approval"] = False
        for tool in document["agent"]["tools"]:
            tool["needs_approval"] = False
    else:
        document["items"].append(
            Decision(
                call_id="call_email",
                decision="approve",
                approver="ann",
                via="signal",
                at=datetime.now(UTC),
            ).model_dump(mode="json")
        )
    forged = snapshots.loads(snapshots.reseal(json.dumps(document)).text)
    agents.CALLS.clear()
    asked: list[str] = []

    def refuse(pending) -> DecideInput:
        asked.append(pending.call_id)
        return DecideInput(call_id=pending.call_id, decision="reject", approver="local")

    registry = AgentRegistry([agents.assistant])
    waiting = await run_locally(forged, model=_answer, registry=registry)
    assert waiting.status == RunStatus.AWAITING_APPROVAL
    assert [p.call_id for p in decisions.pending_approvals(waiting)] == ["call_email"]
    ended = await run_locally(forged, model=_answer, registry=registry, approve=refuse)
    assert (ended.status, ended.final_output) == (RunStatus.COMPLETED, "not sent")
    assert asked == ["call_email"]
    assert agents.CALLS == []


async def test_run_locally_refuses_an_agent_the_registry_does_not_serve():
    with pytest.raises(ValueError, match="unknown agent 'assistant'; this worker serves: none"):
        await run_locally(_email_waiting("local-3"), model=_answer, registry=AgentRegistry([]))


@pytest.mark.parametrize(
    ("script", "session", "max_steps", "status"),
    [
        ([Fault(400, "bad request")], False, 100, RunStatus.FAILED),
        ([Reply(content="hi")], True, 100, RunStatus.AWAITING_INPUT),
        ([Reply(tool_calls=(Call("add", {"a": 1, "b": 2}),)), Reply("3")], False, 2, "running"),
    ],
    ids=["model-refuses", "session-waits", "max-steps"],
)
async def test_run_locally_stops_where_the_driver_says(
    model_server, script, session, max_steps, status
):
    model_server.script(*script)
    start = loop.new_state(
        agents.assistant.spec(),
        AgentInput(agent="assistant", input="go", session=session),
        run_id="local-2",
        now=datetime.now(UTC),
    )
    async with AsyncOpenAI(base_url=model_server.base_url, api_key="t", max_retries=0) as openai:
        ended = await run_locally(
            start,
            model=ModelActivities(openai).call_model,
            registry=AgentRegistry([agents.assistant]),
            max_steps=max_steps,
        )
    assert ended.status == status
    if status is RunStatus.FAILED:
        assert ended.error is not None and "HTTP 400: bad request" in ended.error.message
