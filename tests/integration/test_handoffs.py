"""Handoffs (`Agent(handoffs=[...])`, workflows/handoffs.py): the run goes on with another
agent inside the same run, against a real dev server, worker and model server."""

from __future__ import annotations

import json

import httpx2
import pytest
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.gateway_auth import load_callers
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.run_items import Handoff
from durable_agents.workflows.state import RunStatus

from durable_agents.plugin import AgentsPlugin, AgentsPluginError
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.cli_support import bound_to
from tests.support.multi_agents import HANDOFF_AGENTS, NOTICES, REFUNDS, billing, triage
from tests.support.runs import tool_results, wait_for_status


@pytest.fixture
async def desk(env, model_server):
    REFUNDS.clear()
    NOTICES.clear()
    async with serving(env.client, model_server, extra_agents=HANDOFF_AGENTS) as running:
        yield running


def to_billing(call_id: str = "h1", reason: str = "a refund") -> Call:
    return Call("transfer_to_billing", {"reason": reason}, call_id)


@pytest.mark.history("handoff")
async def test_triage_hands_over_to_billing_whose_refund_is_approved_through_the_run_id(
    desk, model_server, scenario
):
    model_server.script(
        Reply(tool_calls=(to_billing(),)),
        Reply(tool_calls=(Call("refund", {"order": "A12", "amount": 40}, "r1"),)),
        Reply(content="Refunded 40 on A12."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("triage", "I want my money back for A12")).id
    handle = desk.client.get_workflow_handle(run_id)
    scenario.run(handle)
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


async def test_a_handoff_answers_the_calls_of_its_reply_still_waiting(desk, model_server):
    """The other call waits for a decision under the old agent: taking the handoff
    answers it as not run (the new agent may not have the tool), never wedging the run."""
    model_server.script(
        Reply(tool_calls=(Call("notify", {"to": "ann", "text": "x"}, "n1"), to_billing("h1"))),
        Reply(content="Billing here."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("desk", "refund please")).id
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED and result.final_output == "Billing here."
    state = await client.state(run_id)
    results = tool_results(state)
    assert results["n1"].is_error and results["n1"].content.startswith("Not run: call h1")
    assert state.agent.name == "billing" and NOTICES == []
    assert await client.pending(run_id) == []
    refused = await bound_to(desk)("approve", run_id, "n1", "--as", "ann")
    assert refused.code == 1 and NOTICES == []  # too late: it was answered


async def test_only_the_first_handoff_of_a_reply_can_be_taken(desk, model_server):
    model_server.script(
        Reply(tool_calls=(to_billing("h1"), Call("transfer_to_shipping", {}, "s1"))),
        Reply(content="Billing here."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("careful", "refund please")).id
    await wait_for_status(desk.client.get_workflow_handle(run_id), RunStatus.AWAITING_APPROVAL)
    assert "Not taken: call h1" in tool_results(await client.state(run_id))["s1"].content
    await client.approve(run_id, "h1", approver="ann")
    assert (await client.result(run_id)).final_output == "Billing here."
    assert (await client.state(run_id)).agent.name == "billing"


async def test_a_handoff_that_would_break_the_token_budget_is_refused(desk, model_server):
    model_server.script(
        Reply(tool_calls=(Call("transfer_to_shipping", {}, "s1"),), usage=(10, 5)),
        Reply(content="still thrifty", usage=(10, 5)),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("thrifty", "ship it")).id
    assert (await client.result(run_id)).final_output == "still thrifty"
    state = await client.state(run_id)
    refused = tool_results(state)["s1"]
    assert refused.is_error and "token budget and shipping does not bound its replies" in (
        refused.content
    )
    assert state.agent.name == "thrifty" and model_server.requests[1]["model"] == "thrifty-model"


async def test_a_gateway_caller_must_be_scoped_to_the_agent_answering_now(
    desk, model_server, tmp_path
):
    from tests.integration.test_gateway import gateway, json_type

    file = tmp_path / "callers.json"
    file.write_text(
        json.dumps(
            [
                {"name": "front", "token_env": "T_F", "scopes": ["read", "decide"],
                 "agents": ["triage"]},
                {"name": "both", "token_env": "T_B", "scopes": ["read", "decide"],
                 "agents": ["triage", "billing"]},
            ]
        )
    )  # fmt: skip
    front, both = "front-token-0123456789abcdef", "both-token-0123456789abcdef0"
    known = load_callers({"AGENT_GATEWAY_TOKENS": str(file), "T_F": front, "T_B": both})
    model_server.script(
        Reply(tool_calls=(to_billing(),)),
        Reply(tool_calls=(Call("refund", {"order": "A12", "amount": 999}, "r1"),)),
        Reply(content="done"),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("triage", "refund")).id
    await wait_for_status(desk.client.get_workflow_handle(run_id), RunStatus.AWAITING_APPROVAL)
    [waiting] = await client.pending(run_id)
    body = json.dumps(
        {"call_id": "r1", "decision": "approve", "arguments_sha256": waiting.arguments_sha256}
    )
    async with gateway(desk, known) as url, httpx2.AsyncClient() as http:
        denied = await http.post(
            f"{url}/runs/{run_id}/decisions", content=body, headers=json_type(front)
        )
        assert denied.status_code == 403 and REFUNDS == []
        allowed = await http.post(
            f"{url}/runs/{run_id}/decisions", content=body, headers=json_type(both)
        )
        assert allowed.status_code == 200, allowed.text
    assert (await client.result(run_id)).status is RunStatus.COMPLETED
    assert REFUNDS == [{"order": "A12", "amount": 999}]


async def test_a_handoff_with_an_input_filter_sends_the_new_agent_no_tool_history(
    desk, model_server
):
    """`handoff(billing, input_filter="remove_tools")`: billing's model gets the user's
    messages and the assistant's words, not the calls and results from before the
    handoff; the run keeps every item, and the filter is on its `Handoff` item."""

    def respond(body: dict) -> Reply:
        if body["model"] == "tidy-model":
            said = [m for m in body["messages"] if m["role"] == "tool"]
            if not said:
                return Reply(
                    content="Let me add.", tool_calls=(Call("add", {"a": 2, "b": 3}, "a1"),)
                )
            return Reply(tool_calls=(to_billing("h1", "a refund of 5"),))
        return Reply(content="Billing here: refund noted.")

    model_server.responder = respond
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("tidy", "refund me what 2 + 3 makes")).id
    result = await client.result(run_id)
    assert result.final_output == "Billing here: refund noted."
    [sent] = [r for r in model_server.requests if r["model"] == "billing-model"]
    roles = [m["role"] for m in sent["messages"]]
    assert "tool" not in roles and not any(m.get("tool_calls") for m in sent["messages"])
    assert {"role": "user", "content": "refund me what 2 + 3 makes"} in sent["messages"]
    assert any(m.get("content") == "Let me add." for m in sent["messages"])
    state = await client.state(run_id)
    [handed] = [i for i in state.items if isinstance(i, Handoff)]
    assert handed.input_filter == "remove_tools"
    assert tool_results(state)["a1"].content == "5"  # kept in the run
