"""Prices and cost budgets against the real dev server, worker and scripted model:
each reply priced from its recorded tokens at the worker's price (`spender`, priced
in euros by the test workers), the run's cost in RunState, `get_status`, agentctl,
the UI details and the `AgentTotalCost` search attribute; a cost budget that stops
a run before the call that could pass it, and budgets a run cannot take."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentResult, StatusView
from durable_agents.workflows.run_items import AssistantMessage
from durable_agents.workflows.state import RunStatus
from temporalio.api.sdk.v1 import WorkflowMetadata

from durable_agents import Agent, ModelSettings
from durable_agents.plugin import AgentsPlugin, AgentsPluginError
from durable_agents.testing import Call, Reply
from tests.support.cli_support import bound_to
from tests.support.priced_agents import PRICES
from tests.support.runs import refused_start, start, state_of

PRICE = PRICES["priced-model"]


async def finished(handle) -> AgentResult:
    async with asyncio.timeout(30):
        return await handle.result()


async def test_each_reply_is_priced_and_the_run_shows_its_cost(worker, model_server):
    model_server.script(
        Reply(
            tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),), usage=(1000, 100), cached_tokens=400
        ),
        Reply(content="3", usage=(1200, 50)),
    )
    handle = await start(worker, "add", agent="spender")
    assert (await finished(handle)).status is RunStatus.COMPLETED
    state = await state_of(handle)
    costs = [i.usage.cost for i in state.items if isinstance(i, AssistantMessage)]
    # 600 at 1000/M, 400 cached at 500/M, 100 out at 2000/M; then 1200 in, 50 out
    assert costs == [pytest.approx(0.6 + 0.2 + 0.2), pytest.approx(1.2 + 0.1)]
    assert state.usage.cost == pytest.approx(2.3)
    assert state.agent.price == PRICE and state.cost_budget == 50.0
    view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
    assert (view.currency, view.usage.cost) == ("EUR", pytest.approx(2.3))
    shown = await bound_to(worker)("status", handle.id)
    assert "· 2350 tokens (400 cached) · 2.3000 EUR · definition " in shown.stdout
    described = (await handle.describe()).raw_description.workflow_execution_info
    total = described.search_attributes.indexed_fields["AgentTotalCost"].data
    assert json.loads(total) == pytest.approx(2.3)
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert metadata.current_details.startswith(
        "**completed** · spender · turn 2 · 2350 tokens · 2 model calls · 2.3000 EUR"
    )


async def test_an_unpriced_run_has_no_cost_and_no_cost_attribute(worker, model_server):
    model_server.script(Reply(content="hi", usage=(1000, 100)))
    handle = await start(worker, "hi", agent="assistant")
    await finished(handle)
    state = await state_of(handle)
    assert state.agent.price is None and state.usage.cost == 0
    described = (await handle.describe()).raw_description.workflow_execution_info
    assert "AgentTotalCost" not in described.search_attributes.indexed_fields
    view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
    assert view.currency is None


async def test_a_cost_budget_stops_the_run_before_the_call_that_could_pass_it(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),), usage=(2000, 50)),
        Reply(content="3"),
    )
    started = await bound_to(worker)("start", "spender", "add", "--cost-budget", "4")
    assert started.code == 0, started.stderr
    handle = worker.client.get_workflow_handle(started.stdout.strip(), result_type=AgentResult)
    assert (await finished(handle)).status is RunStatus.BUDGET_EXCEEDED
    assert len(model_server.requests) == 1  # the second call could have passed 4 EUR
    state = await state_of(handle)
    assert state.cost_budget == 4.0 and state.usage.cost == pytest.approx(2.1)
    assert state.error.type == contract.ERROR_BUDGET_EXCEEDED
    assert state.error.message.endswith("the run has spent 2.100000 of its budget of 4 EUR")
    bound = state.error.details["next_call_cost_bound"]
    assert bound >= (2050 * PRICE.input + 100 * PRICE.output) / 1e6  # re-read + max output
    assert state.error.details["currency"] == "EUR"


async def test_a_run_only_lowers_the_agents_cost_budget(worker, model_server):
    model_server.script(Reply(content="ok"))
    handle = await start(worker, "hi", agent="spender", cost_budget=500.0)
    await finished(handle)
    assert (await state_of(handle)).cost_budget == 50.0


@pytest.mark.parametrize(
    "start_input, why",
    [
        (  # the model has no price on this worker
            {"agent": "tuned", "input": "hi", "cost_budget": 1.0},
            "a cost budget needs a price for the model 'test-model'",
        ),
        ({"agent": "spender", "input": "hi", "cost_budget": -1}, "cost_budget"),
        ({"agent": "spender", "input": "hi", "cost_budget": 0}, "cost_budget"),
        ({"agent": "spender", "input": "hi", "cost_budget": "1e400"}, "cost_budget"),
        ({"agent": "spender", "input": "hi", "cost_budget": [5]}, "cost_budget"),
    ],
)
async def test_a_run_cannot_take_a_cost_budget_it_cannot_keep(
    worker, model_server, tmp_path, start_input, why
):
    assert why in await refused_start(worker, tmp_path, start_input)
    assert model_server.requests == []


@pytest.mark.parametrize("amount", ["0", "-2", "inf", "nan", "ten"])
async def test_agentctl_refuses_an_amount_that_is_no_budget(worker, amount):
    refused = await bound_to(worker)("start", "spender", "hi", "--cost-budget", amount)
    assert refused.code != 0 and "--cost-budget" in refused.stderr


def test_a_worker_refuses_an_agent_whose_cost_budget_has_no_price():
    budgeted = Agent(
        name="b",
        instructions="",
        model="unpriced",
        cost_budget=1.0,
        model_settings=ModelSettings(max_output_tokens=10),
    )
    with pytest.raises(AgentsPluginError, match=r"need their model's price.*b \(unpriced\)"):
        AgentsPlugin(agents=[budgeted], prices=PRICES)
    with pytest.raises(ValueError, match=r"cost_budget needs model_settings\.max_output_tokens"):
        Agent(name="c", instructions="", cost_budget=1.0)
    with pytest.raises(ValueError, match="cost_budget must be a positive amount"):
        Agent(name="d", instructions="", cost_budget=float("inf"))
