"""Context management against the real dev server and a scripted model that enforces a
small window (it answers `context_length_exceeded` past it, as OpenAI does): a long
session with big tool outputs completes with either strategy, every request inside
the window, while RunState keeps every item; a provider refusal is met with one
compaction and one more call, not a retry loop."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from durable_agents.workflows import contract, snapshot
from durable_agents.workflows.agent_spec import ContextPolicy
from durable_agents.workflows.context import SUMMARY_INSTRUCTIONS
from durable_agents.workflows.payloads import AgentResult, StatusView
from durable_agents.workflows.run_items import Compaction, ToolResult
from durable_agents.workflows.state import RunStatus
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowFailureError

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply, ScriptedModelServer, request_tokens
from tests.conftest import serving
from tests.support import agents
from tests.support.cli_support import bound_to
from tests.support.runs import start, state_of, wait_for_status

WINDOW = 3_000
"""The scripted model's window, in its own estimate (`request_tokens`)."""
BLOB = 2_400
"""Characters of each tool output: a few of them fill the window."""


def talker(body: dict) -> Reply:
    """Each user message gets a tool call with a big output, then a short answer; a
    summary request gets a summary. Usage is the server's own count of the request."""
    messages = body["messages"]
    tokens = request_tokens(body)
    if messages[0]["content"] == SUMMARY_INSTRUCTIONS:
        return Reply(
            content=f"summary of {len(messages[-1]['content'])} characters", usage=(tokens, 20)
        )
    if messages[-1]["role"] == "user":
        return Reply(tool_calls=(Call("blob", {"size": BLOB}),), usage=(tokens, 15))
    return Reply(content="noted", usage=(tokens, 5))


async def converse(client: AgentClient, agent: str, exchanges: int) -> str:
    run = await client.start(agent, "message 0", session=True)
    handle = client.client.get_workflow_handle(run.id, result_type=AgentResult)
    for n in range(1, exchanges):
        await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
        await client.message(run.id, f"message {n}")
    await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
    await client.end_session(run.id)
    async with asyncio.timeout(30):
        result = await handle.result()
    assert result.status is RunStatus.COMPLETED
    return run.id


async def long_session(env, agent: str, exchanges: int) -> None:
    with ScriptedModelServer(talker, context_window=WINDOW) as model:
        async with serving(env.client, model) as worker:
            client = AgentClient(worker.client, task_queue=worker.task_queue)
            run_id = await converse(client, agent, exchanges)
            state = await client.state(run_id)
            handle = worker.client.get_workflow_handle(run_id)
            view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
            shown = await bound_to(worker)("status", run_id)
            metadata = await handle.query(
                "__temporal_workflow_metadata", result_type=WorkflowMetadata
            )
    assert model.errors == []  # no request was refused as too long
    assert max(model.sizes) <= WINDOW
    assert state.turn == 2 * exchanges
    results = [i for i in state.items if isinstance(i, ToolResult)]
    assert len(results) == exchanges and all(len(r.content) == BLOB for r in results)
    assert state.items[0].content == "message 0"  # the run keeps turn 1
    compacted = [i for i in state.items if isinstance(i, Compaction)]
    assert compacted and all(c.reason == "window" for c in compacted)
    assert all(c.tokens_after < c.tokens_before for c in compacted)
    if agent == "digester":
        assert all(c.summary and c.summary.startswith("summary of ") for c in compacted)
        assert state.usage.model_calls == 2 * exchanges + len(compacted)
    else:
        assert any(c.stubbed for c in compacted)
    assert view.compactions == len(compacted) and 0 < view.context_tokens <= 2_500
    assert f"({len(compacted)} compactions)" in shown.stdout and "context ~" in shown.stdout
    assert f"**Context** {len(compacted)} compactions" in metadata.current_details
    late = snapshot.fork(state, at_turn=2 * exchanges - 4, new_input=None)
    assert late.items[0].content == "message 0"  # a late fork still holds turn 1


@pytest.mark.parametrize("agent", ["forgetful", "digester"])
async def test_a_long_session_stays_inside_the_window_and_keeps_everything(env, agent):
    await long_session(env, agent, 10)  # 20 model calls, five windows' worth of output


@pytest.mark.soak
@pytest.mark.parametrize("agent", ["forgetful", "digester"])
async def test_a_300_turn_session_stays_inside_the_window(env, agent):
    await long_session(env, agent, 150)  # 300 model calls, three workflow runs


async def test_a_refusal_as_too_long_compacts_once_and_calls_again(env):
    # The agent's window is set too high for the model: the provider refuses, the run
    # compacts (keeping fewer turns) and the next attempt fits.
    optimistic = dataclasses.replace(
        agents.forgetful,
        name="optimistic",
        context=ContextPolicy(max_input_tokens=100_000, keep_recent_turns=2),
    )
    with ScriptedModelServer(talker, context_window=WINDOW) as model:
        async with serving(env.client, model, extra_agents=[optimistic]) as worker:
            client = AgentClient(worker.client, task_queue=worker.task_queue)
            run_id = await converse(client, "optimistic", 6)
            state = await client.state(run_id)
    assert model.errors and all("maximum context length" in e for e in model.errors)
    compacted = [i for i in state.items if isinstance(i, Compaction)]
    assert [c.reason for c in compacted] == ["context_length_exceeded"] * len(model.errors)
    assert len(compacted) >= 1 and state.status is RunStatus.COMPLETED


async def test_a_call_still_too_long_after_compacting_fails_the_run(env, model_server):
    model_server.context_window = 50  # nothing fits: not even the instructions and tools
    model_server.responder = talker
    async with serving(env.client, model_server) as worker:
        handle = await start(worker, "hello", agent="forgetful")
        with pytest.raises(WorkflowFailureError) as caught:
            async with asyncio.timeout(30):
                await handle.result()
        state = await state_of(handle)
    assert caught.value.cause.type == contract.ERROR_MODEL_REQUEST
    assert "maximum context length is 50 tokens" in caught.value.cause.message
    assert len(model_server.errors) == 1  # nothing to compact on the first call: no retry
    assert state.status is RunStatus.FAILED
