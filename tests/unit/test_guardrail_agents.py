"""A guardrail's own agent: refused where it could not be counted, or where it would do
more than answer (`GuardrailContext.run_agent`, an SDK guardrail's `Runner.run`)."""

from __future__ import annotations

import pytest
from agents import (
    Agent as SDKAgent,
)
from agents import (
    GuardrailFunctionOutput,
    RunConfig,
    Runner,
    input_guardrail,
)
from agents.models.openai_provider import OpenAIProvider
from agents.run import AgentRunner, get_default_agent_runner
from durable_agents.activities.guardrail_models import GuardrailModels
from durable_agents.activities.model_api import ModelActivities
from openai import AsyncOpenAI

from durable_agents import Agent, GuardrailContext
from durable_agents.openai_agents import from_sdk_agent
from tests.support.agents import assistant

CHECKER = SDKAgent(name="checker", instructions="Check.", model="m")
HOW: dict[str, object] = {}


@input_guardrail
async def checked(ctx, agent, text) -> GuardrailFunctionOutput:
    if HOW.get("streamed"):
        Runner.run_streamed(CHECKER, text)
    config = RunConfig(model_provider=OpenAIProvider(api_key="x")) if HOW.get("own") else None
    await Runner.run(CHECKER, text, run_config=config)
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered=False)


guarded = from_sdk_agent(SDKAgent(name="guarded", input_guardrails=[checked]))


def _models() -> GuardrailModels:
    client = AsyncOpenAI(base_url="http://127.0.0.1:1", api_key="x", max_retries=0)
    return GuardrailModels(ModelActivities(client))


def _context(models: GuardrailModels | None) -> GuardrailContext:
    return GuardrailContext(run_id="r", agent="guarded", models=models)


async def test_a_guardrail_agent_with_tools_is_refused_before_any_model_call():
    with pytest.raises(ValueError, match="answers in one model call: assistant has tools"):
        await _context(_models()).run_agent(assistant, "hi")


async def test_a_worker_without_a_model_api_refuses_guardrail_agents():
    with pytest.raises(RuntimeError, match="no model API"):
        await _context(None).run_agent(Agent(name="x", instructions="x"), "hi")
    [guardrail] = guarded.input_guardrails
    with pytest.raises(RuntimeError, match="needs the worker's openai client"):
        await guardrail.check("hi", _context(None))


@pytest.mark.parametrize(
    ("how", "why"),
    [
        ({"own": True}, "leave run_config.model_provider unset"),
        ({"streamed": True}, "not streamed"),
    ],
)
async def test_an_sdk_guardrail_cannot_ask_a_model_around_the_worker(how, why):
    HOW.clear()
    HOW.update(how)
    [guardrail] = guarded.input_guardrails
    with pytest.raises(RuntimeError, match=why):
        await guardrail.check("hi", _context(_models()))


def test_outside_a_guardrail_the_sdk_runner_is_the_sdks():
    runner = get_default_agent_runner()
    assert type(runner).__name__ == "_CountedRunner" and type(runner.inner) is AgentRunner
