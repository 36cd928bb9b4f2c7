"""Instructions a function gives (`Agent(instructions=FUNCTION)`): the agent's spec, the
request the loop builds, the text recorded from the reply, and `call_model`'s part
(activities/instructions.py) against what a forged or broken request holds (issue 46)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.activities import instructions as asked
from durable_agents.activities.instructions import InstructionsContext, instructions_for
from durable_agents.activities.model_api import ModelActivities
from durable_agents.workflows import instructions, loop
from durable_agents.workflows.payloads import (
    AgentInput,
    InstructionsScope,
    ModelReply,
    ModelRequest,
)
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_agents import Agent
from tests.support.native_agents import greeter, greeting


def make_state(agent, context=None):
    start = AgentInput(agent=agent.name, input="hello", context=context)
    return loop.new_state(agent, start, run_id="run-1", now=datetime(2026, 1, 1, tzinfo=UTC))


def test_the_spec_names_the_function_and_carries_no_text():
    spec = greeter.spec()
    assert (spec.instructions, spec.instructions_function) == (
        "",
        "tests.support.native_agents.greeting",
    )
    assert "instructions_function" not in Agent(name="a", instructions="hi").spec().model_dump()


@pytest.mark.parametrize("bad", [None, 42, ["a list"]])
def test_instructions_that_are_neither_text_nor_a_function_are_refused(bad):
    with pytest.raises(TypeError, match="instructions are a text or a function"):
        Agent(name="a", instructions=bad)


def test_the_request_asks_the_function_and_the_reply_s_text_is_kept():
    state = make_state(agent=greeter.spec(), context={"user": "Ann"})
    request = loop.model_request(state)
    assert request.instructions == ""
    assert request.instructions_from == InstructionsScope(
        agent="greeter", run_id=state.run_id, context={"user": "Ann"}
    )
    instructions.record(state, ModelReply(content="hi", instructions="Greet Ann."))
    assert state.dynamic_instructions == "Greet Ann."
    assert loop.model_request(state).instructions == "Greet Ann."  # the estimates' text
    instructions.record(state, ModelReply(content="again"))  # nothing asked: kept
    assert state.dynamic_instructions == "Greet Ann."


def test_an_agent_with_text_instructions_asks_nothing():
    state = make_state(agent=Agent(name="a", instructions="Be brief.").spec())
    request = loop.model_request(state)
    assert (request.instructions, request.instructions_from) == ("Be brief.", None)
    assert "instructions_from" not in request.model_dump()


def _scope(context=None, agent="greeter") -> InstructionsScope:
    return InstructionsScope(agent=agent, run_id="r1", context=context)


async def test_the_function_is_given_the_run_s_context():
    found = {"greeter": greeting}.get
    text = await instructions_for(_scope({"user": "Ann"}), found)
    assert text == "Greet Ann by name. Turn of agent greeter."


@pytest.mark.parametrize(
    ("fn", "reason"),
    [
        (lambda ctx: None, "returned NoneType, not a str"),
        (lambda ctx: b"bytes", "returned bytes, not a str"),
        (lambda ctx: 1 / 0, "raised ZeroDivisionError: division by zero"),
        (lambda ctx: "x" * 100_001, "gave 100,001 characters, more than 100,000"),
        (lambda: "no parameter", "raised TypeError:"),
    ],
)
async def test_a_function_that_gives_no_text_fails_the_call_for_good_with_the_reason(fn, reason):
    with pytest.raises(ApplicationError) as failed:
        await instructions_for(_scope(), {"greeter": fn}.get)
    assert failed.value.type == "InstructionsFailed" and failed.value.non_retryable
    assert f"the instructions function of agent 'greeter' {reason}" in failed.value.message


async def test_a_request_for_an_agent_without_a_function_is_refused():
    with pytest.raises(ApplicationError, match="this worker has no instructions function"):
        await instructions_for(_scope(agent="nobody"), {"greeter": greeting}.get)
    with pytest.raises(ApplicationError, match="this worker has no instructions function"):
        await instructions_for(_scope(), None)


async def test_a_function_that_never_answers_fails_at_its_timeout(monkeypatch):
    monkeypatch.setattr(asked, "INSTRUCTIONS_TIMEOUT", timedelta(milliseconds=10))
    never = asyncio.Event()

    async def stuck(ctx: InstructionsContext) -> str:
        await never.wait()
        return "never"

    with pytest.raises(ApplicationError, match=r"did not answer within 0\.01 s"):
        await instructions_for(_scope(), {"greeter": stuck}.get)


def test_a_forged_scope_is_refused_by_the_payload_itself():
    base = loop.model_request(make_state(agent=greeter.spec())).model_dump()
    for forged in ({"agent": ""}, {"agent": "a" * 201}, {"agent": "g", "extra": 1}):
        with pytest.raises(ValidationError):
            ModelRequest.model_validate({**base, "instructions_from": {"run_id": "r", **forged}})
    with pytest.raises(ValidationError):
        ModelReply.model_validate({"instructions": 42})


class _Canned:
    """A ModelAPI of the test's own: records the instructions each call was sent."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    async def complete(self, request: ModelRequest) -> ModelReply:
        self.sent.append(request.instructions)
        return ModelReply(content="ok")


async def test_call_model_sends_the_function_s_text_and_returns_it_only_when_it_changed():
    api = _Canned()
    model = ModelActivities(api, instructions={"greeter": greeting}.get)
    state = make_state(greeter.spec(), context={"user": "Ann"})
    text = "Greet Ann by name. Turn of agent greeter."
    first = await ActivityEnvironment().run(model.call_model, loop.model_request(state))
    assert first.instructions == text
    instructions.record(state, first)
    second = await ActivityEnvironment().run(model.call_model, loop.model_request(state))
    assert second.instructions is None  # the same text: the history does not carry it again
    instructions.record(state, second)
    assert api.sent == [text, text] and state.dynamic_instructions == text
    state.context = {"user": "Bo"}
    third = await ActivityEnvironment().run(model.call_model, loop.model_request(state))
    assert third.instructions == "Greet Bo by name. Turn of agent greeter."
