"""Runs of an agent that speaks the Responses API (`thinker`), on the real dev server,
worker and scripted model: a tool call, an approval and reasoning items kept in the
run across a worker restart and a snapshot export -> resume; the provider refuses
reasoning a forged snapshot altered."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.client import snapshots
from durable_agents.workflows import contract
from durable_agents.workflows.run_items import AssistantMessage
from durable_agents.workflows.state import RunState, RunStatus
from temporalio.client import WorkflowFailureError

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support import agents
from tests.support.runs import refused_start, start, state_of, wait_for_status

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="call_email")
THINKING = "The user wants mail sent; sending needs a person's yes."


def reasoning_sent(body: dict) -> list[dict]:
    return [item for item in body["input"] if item.get("type") == "reasoning"]


def replies(state: RunState) -> list[AssistantMessage]:
    return [item for item in state.items if isinstance(item, AssistantMessage)]


async def test_reasoning_is_kept_across_a_worker_restart_and_an_approval(env, model_server):
    model_server.script(
        Reply(tool_calls=(EMAIL,), reasoning=(THINKING,), usage=(50, 30), reasoning_tokens=24),
        Reply(content="sent", reasoning=("Done.",)),
    )
    async with serving(env.client, model_server) as first:
        handle = await start(first, "mail a@b.c", agent="thinker")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    # no worker: the run waits in Temporal alone; a new worker replays it
    async with serving(env.client, model_server, task_queue=first.task_queue) as second:
        await AgentClient(second.client, task_queue=second.task_queue).approve(
            handle.id, "call_email", approver="ann"
        )
        async with asyncio.timeout(30):
            result = await handle.result()
        state = await state_of(handle)
    assert result.status is RunStatus.COMPLETED and result.final_output == "sent"
    assert model_server.endpoints == ["responses", "responses"] and model_server.errors == []
    asked, answered = replies(state)
    assert [r.summary for r in asked.reasoning] == [[THINKING]]
    assert asked.usage is not None and asked.usage.reasoning_tokens == 24
    [carried] = reasoning_sent(model_server.requests[1])
    assert carried["id"] == asked.reasoning[0].id
    assert carried["encrypted_content"] == asked.reasoning[0].encrypted_content
    assert [r.summary for r in answered.reasoning] == [["Done."]]
    assert state.usage.reasoning_tokens == 24
    assert all(body["store"] is False for body in model_server.requests)
    assert [c[0] for c in agents.CALLS] == ["send_email"]


async def test_a_resumed_snapshot_carries_the_reasoning_to_the_next_call(worker, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,), reasoning=(THINKING,)), Reply(content="sent"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    source = await start(worker, "mail a@b.c", agent="thinker")
    await wait_for_status(source, RunStatus.AWAITING_APPROVAL)
    exported = await client.export(source.id)
    assert THINKING in exported  # readable in the file; the reasoning itself sealed
    resumed = await client.resume(exported)
    await client.cancel(source.id)
    handle = worker.client.get_workflow_handle(resumed.id)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await client.approve(resumed.id, "call_email", approver="ann")
    async with asyncio.timeout(30):
        assert (await client.result(resumed.id)).status is RunStatus.COMPLETED
    [carried] = reasoning_sent(model_server.requests[-1])
    original = replies(snapshots.loads(exported))[0].reasoning[0]
    assert (carried["id"], carried["encrypted_content"]) == (
        original.id,
        original.encrypted_content,
    )
    assert model_server.errors == []


async def test_reasoning_altered_in_a_snapshot_is_refused_by_the_provider(worker, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,), reasoning=(THINKING,)))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    source = await start(worker, "mail a@b.c", agent="thinker")
    await wait_for_status(source, RunStatus.AWAITING_APPROVAL)
    state = await client.state(source.id)
    await client.cancel(source.id)
    replies(state)[0].reasoning[0].encrypted_content = "forged-by-someone"
    resumed = await client.resume(snapshots.dumps(state))
    await client.approve(resumed.id, "call_email", approver="ann")
    handle = worker.client.get_workflow_handle(resumed.id)
    with pytest.raises(WorkflowFailureError) as caught:
        async with asyncio.timeout(30):
            await handle.result()
    assert caught.value.cause.type == contract.ERROR_MODEL_REQUEST
    assert "could not be verified" in caught.value.cause.message
    assert (await state_of(handle)).status is RunStatus.FAILED
    [refused] = model_server.errors  # refused once, not retried
    assert "could not be verified" in refused
    assert [c[0] for c in agents.CALLS] == ["send_email"]


async def test_a_start_input_cannot_ask_the_responses_api_for_a_seed(
    worker, model_server, tmp_path
):
    start_input = {"agent": "thinker", "input": "hi", "model_settings": {"seed": 3}}
    why = await refused_start(worker, tmp_path, start_input)
    assert "the Responses API has no seed" in why
    assert model_server.requests == []


def test_the_snapshot_of_a_responses_run_loads_in_this_build():
    state = snapshots.loads(json.dumps(json.loads(_golden())))
    assert state.agent.model_api == "responses"
    assert replies(state)[-1].reasoning[0].encrypted_content


def _golden() -> str:
    from tests.support.snapshot_golden import golden_text

    return golden_text("single")
