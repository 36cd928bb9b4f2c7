"""Budget extensions (`on_budget="ask"`) against the real dev server, worker and scripted
model: at its budget the `asker` agent waits with an `extend_budget` request, pending
like a tool call and decided with the same update and signals (who may, up to what,
by when); approved it goes on, rejected or left past its deadline it ends
`budget_exceeded`; hostile decisions are refused."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import uuid
from datetime import timedelta

import pytest
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client import snapshots
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult, DecisionSignal
from durable_agents.workflows.run_items import BudgetRequest, Decision, ToolResult
from durable_agents.workflows.state import RunStatus
from openai import AsyncOpenAI
from temporalio.api.sdk.v1 import WorkflowMetadata

from durable_agents import AgentClient, DecisionRefused
from durable_agents.testing import Call, Reply
from durable_agents.worker import build_worker
from tests.support import agents
from tests.support.cli_support import bound_to
from tests.support.runs import start, state_of, wait_for_status

FIRST = Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),), usage=(300, 40))
"""After it, the next call could pass 600 tokens: the run asks."""


async def finished(handle) -> AgentResult:
    async with asyncio.timeout(30):
        return await handle.result()


async def asking(worker, model_server, *replies: Reply):
    model_server.script(FIRST, *replies)
    handle = await start(worker, "add", agent="asker")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    return handle, AgentClient(worker.client, task_queue=worker.task_queue)


async def test_an_approved_extension_lets_the_run_go_on(worker, model_server):
    handle, client = await asking(worker, model_server, Reply(content="3", usage=(400, 10)))
    [pending] = await client.pending(handle.id)
    assert (pending.call_id, pending.tool) == ("budget/1", "extend_budget")
    assert pending.args == {"token_budget": 1200}  # by the agent's budget again
    state = await state_of(handle)
    [asked] = [i for i in state.items if isinstance(i, BudgetRequest)]
    assert (asked.kind, asked.budget, asked.proposed) == ("tokens", 600, 1200)
    assert 600 < asked.needed <= 1200 and "could use up to" in asked.message
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "- `extend_budget(token_budget=1200)` — call id `budget/1`" in (metadata.current_details)
    listed = await bound_to(worker)("pending", handle.id)
    assert "extend_budget" in listed.stdout and "budget/1" in listed.stdout
    shown = await bound_to(worker)("state", handle.id)
    assert "budget request [budget/1]: tokens budget 600 reached" in shown.stdout, shown.stdout

    decision = await client.decide(handle.id, "budget/1", "approve", approver="ann")
    assert decision.call_id == "budget/1"
    assert (await finished(handle)).status is RunStatus.COMPLETED
    state = await state_of(handle)
    assert state.token_budget == 1200 and len(model_server.requests) == 2
    assert not any(isinstance(i, ToolResult) and i.call_id == "budget/1" for i in state.items)
    sent = model_server.requests[1]["messages"]  # the model never sees the request
    assert "budget/1" not in json.dumps(sent)


async def test_an_approver_may_set_another_budget_within_the_limits(worker, model_server):
    handle, client = await asking(worker, model_server, Reply(content="3"))
    asked = next(i for i in (await state_of(handle)).items if isinstance(i, BudgetRequest))
    for edit, why in [
        ({"token_budget": int(asked.needed) - 1}, "must be at least"),
        ({"token_budget": 6000}, "token_budget must be <= 5000"),
        ({"token_budget": 900.5}, "must be a whole number"),
        ({"token_budget": True}, "must be a whole number"),
        ({"token_budget": 900, "amount": 1}, "takes one argument, token_budget"),
        ({"cost_budget": 900}, "takes one argument, token_budget"),
    ]:
        with pytest.raises(DecisionRefused, match=why):
            await client.decide(handle.id, "budget/1", "approve", approver="ann", arguments=edit)
    approved = await bound_to(worker)(
        "approve", handle.id, "budget/1", "--as", "alice", "--args", '{"token_budget": 2000}',
        "--wait",
    )  # fmt: skip
    assert approved.code == 0, approved.stderr
    assert (await finished(handle)).status is RunStatus.COMPLETED
    assert (await state_of(handle)).token_budget == 2000


async def test_a_rejected_extension_ends_the_run_budget_exceeded(worker, model_server):
    handle, client = await asking(worker, model_server)
    await client.reject(handle.id, "budget/1", approver="ann", reason="too dear")
    result = await finished(handle)
    assert result.status is RunStatus.BUDGET_EXCEEDED
    state = await state_of(handle)
    assert state.error.type == contract.ERROR_BUDGET_EXCEEDED and state.token_budget == 600
    [decision] = [i for i in state.items if isinstance(i, Decision)]
    assert (decision.call_id, decision.decision, decision.reason) == (
        "budget/1",
        "reject",
        "too dear",
    )
    assert len(model_server.requests) == 1


@pytest.mark.parametrize(
    "decision, why",
    [
        ({"approver": "mallory"}, "mallory may not decide extend_budget calls"),
        ({"approver": "ann", "always": True}, "`always` is refused"),
        ({"approver": "ann", "arguments_sha256": "0" * 64}, "arguments_sha256"),
    ],
)
async def test_who_may_not_extend_a_budget_is_refused(worker, model_server, decision, why):
    handle, client = await asking(worker, model_server)
    with pytest.raises(DecisionRefused, match=why):
        await client.decide(handle.id, "budget/1", "approve", **decision)
    signal = DecisionSignal(call_id="budget/1", **decision)
    await handle.signal(contract.SIGNAL_APPROVE, signal)  # the same as a signal: refused
    async with asyncio.timeout(30):
        while not (await state_of(handle)).refused_decisions:
            await asyncio.sleep(0.1)
    [refused] = (await state_of(handle)).refused_decisions
    assert why in (refused.refused_because or "")
    assert (await state_of(handle)).status is RunStatus.AWAITING_APPROVAL
    await client.reject(handle.id, "budget/1", approver="ann")
    await finished(handle)


async def test_an_extension_named_before_it_is_asked_is_refused(worker, model_server):
    model_server.script(Reply(content="3", usage=(30, 5)))
    handle = await start(worker, "add", agent="asker")
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    await finished(handle)
    with pytest.raises(DecisionRefused):
        await client.decide(handle.id, "budget/1", "approve", approver="ann")
    assert not [i for i in (await state_of(handle)).items if isinstance(i, BudgetRequest)]


@contextlib.asynccontextmanager
async def serving_one(env, model_server, agent):
    """A worker for `agent` alone; yields a function that starts a run of it."""
    client = AsyncOpenAI(base_url=model_server.base_url, api_key="t", max_retries=0)
    queue = f"{agent.name}-{uuid.uuid4().hex[:8]}"
    registry = AgentRegistry([agent])

    async def run(text: str):
        return await env.client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent=agent.name, input=text),
            id=queue,
            task_queue=queue,
            result_type=AgentResult,
        )

    async with build_worker(env.client, registry=registry, model_client=client, task_queue=queue):
        yield run
    await client.close()


async def test_a_request_left_past_its_deadline_counts_as_rejected(env, model_server):
    policy = agents.asker.budget_approval.model_copy(update={"timeout": timedelta(seconds=1)})
    hasty = dataclasses.replace(agents.asker, name="hasty", budget_approval=policy)
    model_server.script(FIRST)
    async with serving_one(env, model_server, hasty) as run:
        handle = await run("add")
        assert (await finished(handle)).status is RunStatus.BUDGET_EXCEEDED
        state = await state_of(handle)
    [decision] = [i for i in state.items if isinstance(i, Decision)]
    assert (decision.call_id, decision.via, decision.approver) == ("budget/1", "timeout", "system")
    assert state.error.type == contract.ERROR_BUDGET_EXCEEDED


async def test_a_pending_request_and_its_extension_survive_continue_as_new(env, model_server):
    switching = dataclasses.replace(agents.asker, name="switching", turns_per_workflow_run=1)
    model_server.script(FIRST, Reply(content="3", usage=(400, 10)))
    async with serving_one(env, model_server, switching) as run:
        handle = await run("add")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        client = AgentClient(env.client)
        async with asyncio.timeout(15):  # the request waits in a later workflow run
            while (await handle.describe()).run_id == handle.first_execution_run_id:
                await asyncio.sleep(0.1)
        [pending] = await client.pending(handle.id)
        assert pending.call_id == "budget/1"
        await client.decide(handle.id, "budget/1", "approve", approver="ann")
        assert (await finished(handle)).status is RunStatus.COMPLETED
        state = await state_of(handle)
    assert state.token_budget == 1200 and state.turn == 2


async def test_a_number_no_budget_can_be_is_refused_and_the_run_goes_on(worker, model_server):
    handle, client = await asking(worker, model_server, Reply(content="3"))
    huge = {"call_id": "budget/1", "approver": "ann", "arguments": {"token_budget": 10**400}}
    await handle.signal(contract.SIGNAL_APPROVE, huge)
    async with asyncio.timeout(30):
        while not (await state_of(handle)).refused_decisions:
            await asyncio.sleep(0.1)
    [refused] = (await state_of(handle)).refused_decisions
    assert "token_budget must be at most 9,007,199,254,740,992" in (refused.refused_because or "")
    await client.approve(handle.id, "budget/1", approver="ann")  # the run still listens
    assert (await finished(handle)).status is RunStatus.COMPLETED


async def test_a_resumed_snapshot_asks_again_with_its_own_numbers(worker, model_server):
    handle, client = await asking(worker, model_server, Reply(content="3"))
    exported = await client.export(handle.id)
    await client.cancel(handle.id)
    resumed = await client.resume(exported)
    resumed_handle = worker.client.get_workflow_handle(resumed.id, result_type=AgentResult)
    await wait_for_status(resumed_handle, RunStatus.AWAITING_APPROVAL)
    [pending] = await client.pending(resumed.id)
    state = await state_of(resumed_handle)
    [asked] = [i for i in state.items if isinstance(i, BudgetRequest)]
    assert pending.call_id == asked.call_id == "budget/1"
    assert asked.at > snapshots.loads(exported).updated_at  # asked anew, not carried
    await client.approve(resumed.id, "budget/1", approver="ann")
    assert (await finished(resumed_handle)).status is RunStatus.COMPLETED
