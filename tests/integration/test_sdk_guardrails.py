"""OpenAI Agents SDK guardrails through `from_sdk_agent`, against the real dev server,
worker and scripted model (tests/support/sdk_guardrail_agents.py, written as the SDK's
guardrails example writes them): the guardrail's `Runner.run` asks the model through
the worker's client, its tokens count in the run's usage and budgets; a tripwire ends
the run, or, for a guardrail given a refusal, answers and keeps the session."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows import contract
from durable_agents.workflows.run_items import AssistantMessage, GuardrailCheck
from durable_agents.workflows.state import RunStatus
from pydantic import BaseModel

from durable_agents import (
    Agent,
    GuardrailContext,
    GuardrailResult,
    input_guardrail,
    output_guardrail,
)
from durable_agents.openai_agents import from_sdk_agent
from durable_agents.testing import Reply
from tests.conftest import serving
from tests.support import sdk_guardrail_agents as sdk
from tests.support.runs import wait_for_status

HOMEWORK = json.dumps({"reasoning": "solve for x", "is_math_homework": True})
NOT_HOMEWORK = json.dumps({"reasoning": "an account question", "is_math_homework": False})


@pytest.fixture
async def desks(env, model_server):
    sdk.SEEN.clear()
    agents = [sdk.homework_desk, sdk.polite_desk]
    async with serving(env.client, model_server, extra_agents=agents) as running:
        yield running, AgentClient(running.client, task_queue=running.task_queue)


async def answered(client: AgentClient, run_id: str):
    """The state once the model has answered the session's second message."""
    async with asyncio.timeout(30):
        while True:
            state = await client.state(run_id)
            if state.final_output == "Your balance is 40 dollars.":
                return state
            await asyncio.sleep(0.1)


def checks(state) -> list[GuardrailCheck]:
    return [i for i in state.items if isinstance(i, GuardrailCheck)]


async def test_a_guardrail_agent_asks_through_the_worker_and_its_tokens_are_the_runs(
    desks, model_server
):
    _, client = desks
    model_server.script(Reply(content=HOMEWORK, usage=(30, 7)))
    run_id = (await client.start("sdk_homework", "Solve 2x + 3 = 11", context={"user": 7})).id
    result = await client.result(run_id)
    assert result.status is RunStatus.GUARDRAIL_TRIPPED
    [asked] = model_server.requests  # the guardrail's agent; the support model never
    assert asked["model"] == "guardrail-model"
    assert asked["messages"][-1] == {"role": "user", "content": "Solve 2x + 3 = 11"}
    assert sdk.SEEN == [("math_guardrail", {"user": 7})]
    state = await client.state(run_id)
    [check] = checks(state)
    assert (check.name, check.tripped) == ("math_guardrail", True)
    assert json.loads(check.reason)["is_math_homework"] is True
    assert check.usage is not None and (check.usage.model_calls, check.usage.total_tokens) == (
        1,
        37,
    )
    assert (state.usage.model_calls, state.usage.total_tokens) == (1, 37)
    assert state.error.type == contract.ERROR_GUARDRAIL_TRIPPED


async def test_a_guardrail_agents_tokens_are_held_to_the_runs_budget(desks, model_server):
    _, client = desks
    model_server.script(Reply(content=NOT_HOMEWORK, usage=(300, 20)))
    run_id = (
        await client.start(
            "sdk_homework",
            "What is my balance?",
            token_budget=200,
            model_settings={"max_output_tokens": 50},
        )
    ).id
    result = await client.result(run_id)
    assert result.status is RunStatus.BUDGET_EXCEEDED
    assert [r["model"] for r in model_server.requests] == ["guardrail-model"]
    assert (await client.state(run_id)).usage.total_tokens == 320


@pytest.mark.history("sdk_guardrail_refused")
async def test_a_refusing_guardrail_answers_and_the_session_goes_on(desks, model_server, scenario):
    running, client = desks
    model_server.script(
        Reply(content=HOMEWORK),
        Reply(content=NOT_HOMEWORK),
        Reply(content="Your balance is 40 dollars."),
    )
    run_id = (await client.start("sdk_polite", "Solve 2x + 3 = 11", session=True)).id
    handle = running.client.get_workflow_handle(run_id)
    scenario.run(handle)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    state = await client.state(run_id)
    assert state.final_output == "Sorry, I can only help with your account."
    refusal = state.items[-1]
    assert isinstance(refusal, AssistantMessage) and refusal.refused_by == "math_guardrail"
    assert [r["model"] for r in model_server.requests] == ["guardrail-model"]

    await client.message(run_id, "What is my balance?")
    state = await answered(client, run_id)
    assert state.status is RunStatus.AWAITING_INPUT
    assert [(c.name, c.tripped) for c in checks(state)] == [
        ("math_guardrail", True),
        ("math_guardrail", False),
    ]
    models = [r["model"] for r in model_server.requests]
    assert models == ["guardrail-model", "guardrail-model", "support-model"]
    said = [(m["role"], m["content"]) for m in model_server.requests[2]["messages"]]
    assert said[1:] == [  # the model reads the refused question and the refusal
        ("user", "Solve 2x + 3 = 11"),
        ("assistant", "Sorry, I can only help with your account."),
        ("user", "What is my balance?"),
    ]
    assert state.usage.model_calls == 3


async def test_an_sdk_output_guardrail_withholds_a_typed_output(desks, model_server):
    _, client = desks
    leaked = json.dumps({"reasoning": "their number", "response": "Call me at 650-123-4567"})
    model_server.script(Reply(content=NOT_HOMEWORK), Reply(content=leaked))
    run_id = (await client.start("sdk_homework", "How do I reach you?")).id
    result = await client.result(run_id)
    assert (result.status, result.final_output) == (RunStatus.GUARDRAIL_TRIPPED, None)
    [_, seen] = sdk.SEEN
    assert seen == ("sensitive_data_check", sdk.MessageOutput.model_validate_json(leaked))
    state = await client.state(run_id)
    assert [(c.kind, c.tripped) for c in checks(state)] == [("input", False), ("output", True)]
    assert json.loads(checks(state)[1].reason)["phone_number_in_response"] is True


async def test_a_guardrail_agent_reply_that_is_no_output_trips_closed(desks, model_server):
    """A reply from the model the guardrail's agent cannot read fails each attempt (the
    SDK raises); after its retries the guardrail counts as tripped."""
    _, client = desks
    model_server.script(*[Reply(content="{not json")] * 3)
    run_id = (await client.start("sdk_homework", "hello")).id
    result = await client.result(run_id)
    assert result.status is RunStatus.GUARDRAIL_TRIPPED
    [check] = checks(await client.state(run_id))
    assert check.tripped and check.reason.startswith("the guardrail failed")
    assert [r["model"] for r in model_server.requests] == ["guardrail-model"] * 3


class Topic(BaseModel):
    off_topic: bool


checker = Agent(
    name="topic_checker",
    instructions="Say whether the message is off topic.",
    model="checker-model",
    output_type=Topic,
)


@input_guardrail(on_trip="refuse", refusal="Let's stay on topic.")
async def on_topic(text: str, ctx: GuardrailContext) -> GuardrailResult:
    topic = await ctx.run_agent(checker, text)
    return GuardrailResult(tripped=topic.off_topic, reason="off topic" if topic.off_topic else None)


native = Agent(
    name="native_topic",
    instructions="Answer account questions.",
    model="support-model",
    input_guardrails=[on_topic],
)


async def test_our_guardrail_runs_an_agent_counted_and_a_single_run_ends_with_its_refusal(
    env, model_server
):
    model_server.script(Reply(content=json.dumps({"off_topic": True}), usage=(12, 3)))
    async with serving(env.client, model_server, extra_agents=[native]) as running:
        client = AgentClient(running.client, task_queue=running.task_queue)
        run_id = (await client.start("native_topic", "Tell me a joke")).id
        result = await client.result(run_id)
        state = await client.state(run_id)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "Let's stay on topic.")
    [asked] = model_server.requests
    assert asked["model"] == "checker-model"
    assert asked["messages"][0]["content"] == "Say whether the message is off topic."
    assert asked["response_format"]["json_schema"]["name"] == "Topic"
    assert (state.usage.model_calls, state.usage.total_tokens) == (1, 15)
    [check] = checks(state)
    assert (check.tripped, check.reason, check.usage.total_tokens) == (True, "off topic", 15)


def test_a_guardrails_tripwire_action_is_checked_when_it_is_defined():
    with pytest.raises(ValueError, match="on_trip must be 'end' or 'refuse', not 'ignore'"):
        input_guardrail(on_trip="ignore")
    with pytest.raises(ValueError, match="with on_trip='refuse'"):
        input_guardrail(refusal="no")
    with pytest.raises(ValueError, match="1 to 2,000 characters"):
        output_guardrail(on_trip="refuse", refusal="x" * 2_001)
    with pytest.raises(ValueError, match=r"names no guardrail of these agents: \['typo'\]"):
        from_sdk_agent(sdk.polite_agent, guardrail_refusals={"typo": "no"})
    with pytest.raises(ValueError, match="1 to 2,000 characters"):
        from_sdk_agent(sdk.polite_agent, guardrail_refusals={"math_guardrail": ""})
