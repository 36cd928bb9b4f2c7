"""The token ledger and budget against the real dev server, worker and scripted model:
cached and reasoning tokens per call and in total, the `AgentTotalTokens` search
attribute, and a budget that stops a run before the call that could pass it."""

from __future__ import annotations

import asyncio
import json

from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.run_items import AssistantMessage
from durable_agents.workflows.state import RunStatus

from durable_agents.testing import Call, Reply
from tests.support.cli_support import bound_to
from tests.support.runs import refused_start, start, state_of


async def finished(handle) -> AgentResult:
    async with asyncio.timeout(30):
        return await handle.result()


async def test_each_call_s_tokens_are_kept_with_cached_and_reasoning_ones(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),), usage=(100, 20), cached_tokens=60),
        Reply(content="3", usage=(130, 40), cached_tokens=100, reasoning_tokens=25),
    )
    handle = await start(worker, "add", agent="assistant")
    assert (await finished(handle)).status is RunStatus.COMPLETED
    state = await state_of(handle)
    replies = [i.usage for i in state.items if isinstance(i, AssistantMessage)]
    assert [(u.input_tokens, u.cached_input_tokens, u.reasoning_tokens) for u in replies] == [
        (100, 60, 0),
        (130, 100, 25),
    ]
    usage = state.usage
    assert (usage.total_tokens, usage.cached_input_tokens, usage.reasoning_tokens) == (290, 160, 25)
    shown = await bound_to(worker)("status", handle.id)
    assert "· 290 tokens (160 cached, 25 reasoning) · definition " in shown.stdout
    described = (await handle.describe()).raw_description.workflow_execution_info
    total = described.search_attributes.indexed_fields["AgentTotalTokens"].data
    assert json.loads(total) == 290


async def test_a_budget_stops_the_run_before_the_call_that_could_pass_it(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),), usage=(200, 50)),
        Reply(content="3"),
    )
    ctl = bound_to(worker)
    started = await ctl("start", "tuned", "add", "--token-budget", "600")
    assert started.code == 0, started.stderr
    handle = worker.client.get_workflow_handle(started.stdout.strip(), result_type=AgentResult)
    assert (await finished(handle)).status is RunStatus.BUDGET_EXCEEDED
    assert len(model_server.requests) == 1  # the second call could have passed 600
    state = await state_of(handle)
    assert state.token_budget == 600 and state.usage.total_tokens == 250
    assert state.error.type == contract.ERROR_BUDGET_EXCEEDED
    assert state.error.message.startswith("the next model call could use up to ")
    assert state.error.message.endswith("the run has used 250 of its budget of 600")
    assert state.error.details["next_call_bound"] >= 256 + 250  # max output + what it re-reads


async def test_a_run_cannot_take_a_budget_it_cannot_keep(worker, model_server, tmp_path):
    # `assistant` sets no max_output_tokens: one reply has no bound, so no budget holds.
    start_input = {"agent": "assistant", "input": "hi", "token_budget": 1000}
    assert "a token budget needs model_settings.max_output_tokens" in await refused_start(
        worker, tmp_path, start_input
    )
    refused = await bound_to(worker)("start", "tuned", "add", "--token-budget", "0")
    assert refused.code != 0 and "--token-budget: must be at least 1, not 0" in refused.stderr
