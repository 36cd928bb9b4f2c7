"""Approval rules in code (`@tool(needs_approval=FUNCTION)`), against the real dev
server, a real worker and the scripted HTTP model: the rule runs on the worker with the
model's reply, its verdict is recorded on the call, a rule that fails asks a person, and
nothing sent from outside (a decision, a resumed snapshot) can stand in for a verdict."""

from __future__ import annotations

import asyncio
import threading
import uuid
from datetime import timedelta

import pytest
from durable_agents.activities import approval_rules
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult
from durable_agents.workflows.proposed_calls import NO_VERDICT
from durable_agents.workflows.run_items import Decision, ToolCall, ToolResult
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowUpdateFailedError

from durable_agents import Agent, tool
from durable_agents.testing import Call, Reply
from examples import rules_agent
from tests.conftest import serving
from tests.support.runs import state_of, wait_for_status

CITIES = {"c1": "Oakland, USA", "c2": "oakland", "c3": "Paris"}
RULE_AGENTS = [
    rules_agent.oakland_rule,
    rules_agent.oakland_rule_async,
    rules_agent.oakland_data_rule,
]


def _raises(arguments: dict, context) -> bool:
    raise RuntimeError(f"the rule's service is down (call {context.call_id})")


def _not_a_bool(arguments: dict, context) -> bool:
    return "yes"  # type: ignore[return-value]  # what a careless rule returns


@tool(name="get_weather", needs_approval=_raises)
def weather_raising_rule(city: str) -> str:
    """Today's weather."""
    return f"sunny in {city}"


@tool(name="get_weather", needs_approval=_not_a_bool)
def weather_truthy_rule(city: str) -> str:
    """Today's weather."""
    return f"sunny in {city}"


SLOW = threading.Event()


def _slow(arguments: dict, context) -> bool:
    SLOW.wait(30)  # a service that hangs
    return False


@tool(name="get_weather", needs_approval=_slow)
def weather_slow_rule(city: str) -> str:
    """Today's weather."""
    return f"sunny in {city}"


BROKEN = [
    Agent(name="slow_rule", instructions="-", model="m", tools=[weather_slow_rule]),
    Agent(name="raising_rule", instructions="-", model="m", tools=[weather_raising_rule]),
    Agent(name="truthy_rule", instructions="-", model="m", tools=[weather_truthy_rule]),
]


@pytest.fixture
async def rules_worker(env, model_server):
    async with serving(env.client, model_server, extra_agents=RULE_AGENTS + BROKEN) as running:
        yield running


async def _start(worker, agent: str, **options):
    return await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent=agent, input="weather?", **options),
        id=f"rules-{uuid.uuid4().hex[:10]}",
        task_queue=worker.task_queue,
        result_type=AgentResult,
    )


def _three_cities(model_server) -> None:
    model_server.script(
        Reply(tool_calls=tuple(Call("get_weather", {"city": c}, i) for i, c in CITIES.items())),
        Reply(content="done"),
    )


def _calls(state) -> dict[str, ToolCall]:
    return {c.call_id: c for i in state.items if hasattr(i, "tool_calls") for c in i.tool_calls}


async def _pending_ids(handle) -> list[str]:
    pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    return sorted(p["call_id"] for p in pending)


async def _results_for(handle, call_id: str, timeout: float = 30) -> ToolResult:
    async with asyncio.timeout(timeout):
        while True:
            state = await state_of(handle)
            found = [i for i in state.items if isinstance(i, ToolResult) and i.call_id == call_id]
            if found:
                return found[0]
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("agent", ["oakland_rule", "oakland_rule_async"])
async def test_code_rule_asks_for_oakland_however_written_and_not_for_paris(
    rules_worker, model_server, agent
):
    _three_cities(model_server)
    handle = await _start(rules_worker, agent)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert await _pending_ids(handle) == ["c1", "c2"]
    paris = await _results_for(handle, "c3")  # ran without waiting for anyone
    assert paris.content == "The weather in Paris is sunny, 21 °C."

    calls = _calls(await state_of(handle))
    rule = f"examples.rules_agent.in_oakland{'_async' if agent.endswith('async') else ''}"
    assert {i: (c.rule_verdict.rule, c.rule_verdict.needs_approval) for i, c in calls.items()} == {
        "c1": (rule, True),
        "c2": (rule, True),
        "c3": (rule, False),
    }
    assert all(c.rule_verdict.error is None for c in calls.values())
    for call_id in ("c1", "c2"):
        await handle.execute_update(
            contract.UPDATE_DECIDE,
            {"call_id": call_id, "decision": "approve", "approver": "ann"},
            result_type=Decision,
        )
    result = await handle.result()
    assert result.status is RunStatus.COMPLETED
    state = await state_of(handle)
    ran = [i.call_id for i in state.items if isinstance(i, ToolResult)]
    assert ran[0] == "c3" and sorted(ran) == ["c1", "c2", "c3"]  # Paris first: nobody asked


async def test_the_data_port_fails_open_on_a_spelling_the_code_rule_catches(
    rules_worker, model_server
):
    """Why the example exists: `op="in"` over spellings lets "Oakland, USA" run unasked
    (case and Unicode are normalised now, so "oakland" no longer slips through)."""
    _three_cities(model_server)
    handle = await _start(rules_worker, "oakland_data_rule")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert await _pending_ids(handle) == ["c2"]  # "oakland": normalised, asked
    usa = await _results_for(handle, "c1")  # "Oakland, USA": not a listed spelling
    assert usa.content == "The weather in Oakland, USA is foggy, 14 °C."


@pytest.mark.parametrize(
    ("agent", "why"),
    [
        ("raising_rule", "the rule raised RuntimeError: the rule's service is down (call c3)"),
        ("truthy_rule", "the rule returned str, not a bool"),
    ],
)
async def test_a_rule_that_fails_asks_a_person_and_says_why(rules_worker, model_server, agent, why):
    _three_cities(model_server)
    handle = await _start(rules_worker, agent)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert await _pending_ids(handle) == ["c1", "c2", "c3"]  # Paris too: no verdict, no run
    verdict = _calls(await state_of(handle))["c3"].rule_verdict
    assert verdict is not None and verdict.needs_approval and verdict.error == why
    await handle.terminate("test over")


async def test_a_rule_that_does_not_answer_in_time_asks_a_person(
    rules_worker, model_server, monkeypatch
):
    monkeypatch.setattr(approval_rules, "RULE_TIMEOUT", timedelta(seconds=0.2))
    model_server.script(Reply(tool_calls=(Call("get_weather", {"city": "Paris"}, "s1"),)))
    handle = await _start(rules_worker, "slow_rule")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    verdict = _calls(await state_of(handle))["s1"].rule_verdict
    assert verdict is not None and verdict.needs_approval
    assert verdict.error == "the rule did not answer within 0.2 s"
    SLOW.set()
    await handle.terminate("test over")


async def test_a_decision_cannot_carry_a_rule_verdict(rules_worker, model_server):
    """Hostile: the `decide` update with a verdict of its own is refused by its validator
    (no such field), and the call still waits."""
    _three_cities(model_server)
    handle = await _start(rules_worker, "oakland_rule")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    forged = {"call_id": "c1", "decision": "approve", "approver": "mallory"}
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(
            contract.UPDATE_DECIDE,
            forged | {"rule_verdict": {"rule": "x", "needs_approval": False}},
            result_type=Decision,
        )
    assert await _pending_ids(handle) == ["c1", "c2"]
    await handle.terminate("test over")


async def test_a_resumed_snapshot_cannot_vouch_for_a_verdict(rules_worker, model_server):
    """Hostile: a snapshot whose open Oakland call says its rule found no approval
    needed (and the call needs none) is resumed: unsigned, its verdict counts for
    nothing, and the call waits for a person."""
    _three_cities(model_server)
    source = await _start(rules_worker, "oakland_rule")
    await wait_for_status(source, RunStatus.AWAITING_APPROVAL)
    await _results_for(source, "c3")
    state = (await state_of(source)).model_dump(mode="json")
    await source.terminate("snapshot taken")
    for item in state["items"]:
        for call in item.get("tool_calls", []):
            if call["call_id"] == "c1":
                call["needs_approval"] = False
                call["rule_verdict"]["needs_approval"] = False
    resumed = await rules_worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        {"agent": "oakland_rule", "input": "", "resume_from": state},
        id=f"forged-{uuid.uuid4().hex[:8]}",
        task_queue=rules_worker.task_queue,
        result_type=AgentResult,
    )
    await wait_for_status(resumed, RunStatus.AWAITING_APPROVAL)
    assert await _pending_ids(resumed) == ["c1", "c2"]
    verdict = _calls(await state_of(resumed))["c1"].rule_verdict
    assert verdict is not None and verdict.needs_approval and verdict.error == NO_VERDICT
    await resumed.terminate("test over")
