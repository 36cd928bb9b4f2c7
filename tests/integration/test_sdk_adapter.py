"""OpenAI Agents SDK agents converted by `from_sdk_agent` (tests/support/sdk_agents.py)
and served by a real worker against the dev server and the scripted model server:
the SDK's tools run in our activities, its handoffs and agents-as-tools are ours, its
`needs_approval` waits for a decision sent from outside."""

from __future__ import annotations

import json

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows.run_items import Handoff
from durable_agents.workflows.state import RunStatus

from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support import sdk_agents
from tests.support.runs import tool_results, wait_for_status

CONTEXT = {"passenger_name": "Ann", "confirmation_number": "ABC123"}


@pytest.fixture
async def desk(env, model_server):
    sdk_agents.CALLS.clear()
    async with serving(env.client, model_server, extra_agents=[sdk_agents.desk]) as running:
        yield running


async def test_triage_translates_hands_over_and_the_approved_seat_change_runs_once(
    desk, model_server
):
    model_server.script(
        Reply(tool_calls=(Call("translate_to_spanish", {"input": "my seat"}, "t1"),)),
        Reply(content="mi asiento"),  # the translator, a child run
        Reply(tool_calls=(Call("transfer_to_sdk_seat_booking", {}, "h1"),)),
        Reply(
            tool_calls=(
                Call("update_seat", {"confirmation_number": "ABC123", "new_seat": "12A"}, "s1"),
            )
        ),
        Reply(content="Your seat is now 12A."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("sdk_triage", "Change my seat", context=CONTEXT)).id
    handle = desk.client.get_workflow_handle(run_id)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    [pending] = await client.pending(run_id)
    assert (pending.call_id, pending.tool) == ("s1", "update_seat")
    assert sdk_agents.CALLS == []  # nothing ran before the decision

    await client.approve(run_id, "s1", approver="ann")
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED
    assert result.final_output == "Your seat is now 12A."
    assert sdk_agents.CALLS == [("update_seat", ("ABC123", "12A", "Ann", "s1"))]

    state = await client.state(run_id)
    results = tool_results(state)
    assert results["t1"].content == "mi asiento"
    assert results["s1"].content == "Updated seat to 12A for Ann (ABC123)"
    [moved] = [i for i in state.items if isinstance(i, Handoff)]
    assert (moved.from_agent, moved.to_agent) == ("sdk_triage", "sdk_seat_booking")

    first, child, _, seat, _ = model_server.requests
    assert (first["model"], first["temperature"]) == ("triage-model", 0.2)
    assert first["messages"][0]["content"] == "You are a helpful triaging agent."
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert sorted(tools) == [
        "transfer_to_sdk_faq",
        "transfer_to_sdk_seat_booking",
        "translate_to_spanish",
    ]
    assert tools["transfer_to_sdk_faq"]["description"] == "Questions about the airline."
    assert tools["transfer_to_sdk_seat_booking"]["description"] == (
        "Handoff to the sdk_seat_booking agent to handle the request. "
        "A helpful agent that can update a seat on a flight."
    )
    assert child["model"] == "translator-model"
    assert child["messages"][-1] == {"role": "user", "content": "my seat"}
    [update] = [t["function"] for t in seat["tools"] if t["function"]["name"] == "update_seat"]
    assert update["parameters"]["properties"]["new_seat"]["description"] == (
        "The new seat to update to."
    )


async def test_unknown_tools_and_bad_arguments_reach_the_model_and_run_nothing(desk, model_server):
    model_server.script(
        Reply(tool_calls=(Call("transfer_to_sdk_faq", {}, "h1"),)),
        Reply(
            tool_calls=(
                Call("update_seat", {"confirmation_number": "X", "new_seat": "1A"}, "u1"),
                Call("faq_lookup", "{not json", "b1"),
                Call("faq_lookup", {"query": "bags"}, "b2"),
            )
        ),
        Reply(tool_calls=(Call("faq_lookup", {"question": "bag allowance"}, "f1"),)),
        Reply(content="One bag under 50 pounds."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("sdk_triage", "How many bags?", context=CONTEXT)).id
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED
    assert sdk_agents.CALLS == [("faq_lookup", "bag allowance")]
    results = tool_results(await client.state(run_id))
    assert results["u1"].is_error and "update_seat" in results["u1"].content
    assert results["b1"].is_error and "JSON" in results["b1"].content
    assert results["b2"].is_error and "missing required argument(s): question" in (
        results["b2"].content
    )
    assert results["f1"].content == "You may bring one bag under 50 pounds."
    third = model_server.requests[2]
    said = {m.get("tool_call_id"): m["content"] for m in third["messages"] if m["role"] == "tool"}
    assert set(said) >= {"u1", "b1", "b2"}
    assert json.loads(model_server.requests[1]["messages"][3]["content"]) == {
        "assistant": "sdk_faq"
    }


async def test_the_sdk_human_in_the_loop_rule_asks_on_the_worker(env, model_server):
    """The SDK example's `needs_approval=lambda ctx, args, _: "Oakland" in args["city"]`,
    converted: our code rule, asked on the worker; "Oakland, USA" waits for a person,
    "Paris" runs (issue 45's measured failure was the data port letting the first run)."""
    from agents import Agent as SDKAgent
    from agents import function_tool

    from durable_agents.openai_agents import from_sdk_agent

    @function_tool(needs_approval=lambda ctx, args, _: "Oakland" in args["city"])
    def get_weather(city: str) -> str:
        """Get the weather for a city."""
        return f"The weather in {city} is sunny."

    weather = from_sdk_agent(SDKAgent(name="sdk_weather", tools=[get_weather]))
    model_server.script(
        Reply(
            tool_calls=(
                Call("get_weather", {"city": "Oakland, USA"}, "w1"),
                Call("get_weather", {"city": "Paris"}, "w2"),
            )
        ),
        Reply(content="done"),
    )
    async with serving(env.client, model_server, extra_agents=[weather]) as worker:
        client = AgentClient(worker.client, task_queue=worker.task_queue)
        run_id = (await client.start("sdk_weather", "weather?")).id
        handle = worker.client.get_workflow_handle(run_id)
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        assert [p.call_id for p in await client.pending(run_id)] == ["w1"]
        await client.approve(run_id, "w1", approver="ann")
        assert (await client.result(run_id)).status is RunStatus.COMPLETED
        state = await client.state(run_id)
    calls = {c.call_id: c for i in state.items for c in getattr(i, "tool_calls", [])}
    assert calls["w1"].rule_verdict.needs_approval and not calls["w2"].rule_verdict.needs_approval
    assert tool_results(state)["w2"].content == "The weather in Paris is sunny."
