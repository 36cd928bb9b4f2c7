"""Handoffs (`Agent(handoffs=[...])`, workflows/handoffs.py): the run goes on with another
agent inside the same run, against a real dev server, worker and model server."""

from __future__ import annotations

import json

import pytest
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.state import Handoff, RunStatus

from durable_agents.plugin import AgentsPlugin, AgentsPluginError
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.cli_support import bound_to
from tests.support.multi_agents import REFUNDS, billing, careful, shipping, triage
from tests.support.runs import tool_results, wait_for_status


@pytest.fixture
async def desk(env, model_server):
    REFUNDS.clear()
    async with serving(
        env.client, model_server, extra_agents=[triage, billing, shipping, careful]
    ) as running:
        yield running


def to_billing(call_id: str = "h1", reason: str = "a refund") -> Call:
    return Call("transfer_to_billing", {"reason": reason}, call_id)


async def test_triage_hands_over_to_billing_whose_refund_is_approved_through_the_run_id(
    desk, model_server
):
    model_server.script(
        Reply(tool_calls=(to_billing(),)),
        Reply(tool_calls=(Call("refund", {"order": "A12", "amount": 40}, "r1"),)),
        Reply(content="Refunded 40 on A12."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("triage", "I want my money back for A12")).id
    handle = desk.client.get_workflow_handle(run_id)
    view = await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert (view.agent, view.current_agent) == ("triage", "billing")
    [pending] = await client.pending(run_id)
    assert (pending.call_id, pending.tool) == ("r1", "refund")
    shown = await bound_to(desk)("status", run_id)
    assert " · agent triage → billing · " in shown.stdout

    assert (await bound_to(desk)("approve", run_id, "r1", "--as", "ann")).code == 0
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED and result.final_output == "Refunded 40 on A12."
    assert REFUNDS == [{"order": "A12", "amount": 40}]

    first, second, third = model_server.requests
    assert first["model"] == "triage-model"
    assert first["messages"][0] == {"role": "system", "content": "Route the customer."}
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert sorted(tools) == ["transfer_to_billing", "transfer_to_shipping"]
    assert tools["transfer_to_billing"]["description"] == (
        "Hand the conversation over to the billing agent. Refunds and invoices."
    )
    assert tools["transfer_to_billing"]["parameters"]["required"] == ["reason"]
    assert second["model"] == "billing-model"
    assert second["messages"][0] == {"role": "system", "content": "You handle refunds."}
    assert [t["function"]["name"] for t in second["tools"]] == ["refund"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert json.loads(second["messages"][3]["content"]) == {"assistant": "billing"}
    assert third["model"] == "billing-model"

    state = await client.state(run_id)
    [moved] = [i for i in state.items if isinstance(i, Handoff)]
    assert (moved.from_agent, moved.to_agent, moved.turn, moved.reason) == (
        "triage",
        "billing",
        1,
        "a refund",
    )
    assert state.agent.name == "billing" and len(state.workflow_runs) >= 2  # continued as new
    shown = await bound_to(desk)("state", run_id)
    assert "  handed over [h1] from triage to billing (turn 1): a refund" in shown.stdout
    described = await handle.describe()
    assert described.typed_search_attributes.get(sa.AGENT_NAME) == "triage"
    events = [e async for e in client.events(run_id, follow=False)]
    [event] = [e for e in events if e["type"] == "handoff"]
    assert (event["from_agent"], event["to_agent"], event["call_id"]) == ("triage", "billing", "h1")
    assert event["agent"] == "triage"  # stamped by the agent that took it


async def test_a_handoff_that_needs_approval_waits_and_a_rejection_keeps_the_agent(
    desk, model_server
):
    model_server.script(
        Reply(tool_calls=(to_billing("h1"),)),
        Reply(content="I will handle it myself."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("careful", "refund please")).id
    await wait_for_status(desk.client.get_workflow_handle(run_id), RunStatus.AWAITING_APPROVAL)
    [pending] = await client.pending(run_id)
    assert pending.tool == "transfer_to_billing"
    await client.reject(run_id, "h1", approver="ann", reason="not billing's")
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED
    state = await client.state(run_id)
    assert state.agent.name == "careful" and not any(isinstance(i, Handoff) for i in state.items)
    assert model_server.requests[1]["model"] == "triage-model"


async def test_of_two_handoffs_in_one_reply_the_first_is_taken(desk, model_server):
    model_server.script(
        Reply(
            tool_calls=(
                Call("transfer_to_shipping", {}, "s1"),
                to_billing("h2"),
            )
        ),
        Reply(content="Shipping here."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("triage", "where is my parcel")).id
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED
    state = await client.state(run_id)
    assert state.agent.name == "shipping"
    results = tool_results(state)
    assert json.loads(results["s1"].content) == {"assistant": "shipping"}
    assert results["h2"].is_error and "Not taken: call s1" in results["h2"].content
    assert model_server.requests[1]["model"] == "ship-model"


def test_a_worker_refuses_an_agent_that_hands_over_to_one_it_does_not_serve():
    with pytest.raises(AgentsPluginError, match="triage hands over to 'shipping'"):
        AgentsPlugin(agents=AgentRegistry([triage, billing]), model_client=None)
