"""Structured output without Temporal: the output type's strict schema and check, and what
a final reply settles in the pure loop (output, retry, `output_invalid`, resume)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Literal

import pytest
from durable_agents.activities.output_type import output_type
from durable_agents.workflows import loop, output
from durable_agents.workflows.payloads import AgentInput, ModelReply, OutputCheck
from durable_agents.workflows.run_items import UserMessage
from durable_agents.workflows.state import RunStatus
from pydantic import BaseModel

from durable_agents import Agent

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class Verdict(BaseModel):
    approve: bool
    note: str | None = None


class Cat(BaseModel):
    kind: Literal["cat"]
    lives: int


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


def run(type_=Verdict, retries: int = 2):
    agent = Agent(name="typed", instructions="", output_type=type_, output_retries=retries)
    return loop.new_state(agent.spec(), AgentInput(agent="typed", input="hi"), run_id="r", now=T0)


def answer(state, check: OutputCheck | None, content: str = "{}") -> None:
    loop.record_model_reply(state, ModelReply(content=content, output_check=check), now=T0)


def test_every_object_of_the_schema_is_closed_and_fully_required():
    schema = output_type(Verdict).spec.json_schema
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["approve", "note"]  # optional fields too: strict mode


@pytest.mark.parametrize(
    ("type_", "content", "value"),
    [
        (int, '{"output": 7}', 7),
        (list[str], '{"output": ["a", "b"]}', ["a", "b"]),
        (Literal["yes", "no"], '{"output": "no"}', "no"),
        (Cat | Dog, '{"output": {"kind": "dog", "good": true}}', {"kind": "dog", "good": True}),
        (Verdict, '{"approve": false, "note": null}', {"approve": False, "note": None}),
    ],
)
def test_plain_types_are_asked_for_wrapped_and_checked_unwrapped(type_, content, value):
    typed = output_type(type_)
    assert typed.spec.wrapped is (type_ is not Verdict)
    assert typed.check(content) == OutputCheck(valid=True, value=value)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "the reply is empty"),
        ("not json", "Invalid JSON"),
        ('{"approve": "maybe", "note": null}', "approve: Input should be a valid boolean"),
        ('{"output": true}', "approve: Field required"),
        ("[" * 5000, "Invalid JSON"),
    ],
)
def test_a_reply_that_is_not_the_type_says_why(content, problem):
    check = output_type(Verdict).check(content)
    assert not check.valid and problem in check.problem


def test_a_type_pydantic_cannot_ask_for_is_refused_when_the_agent_is_defined():
    with pytest.raises(TypeError, match="cannot be asked for"):
        Agent(name="bad", instructions="", output_type=object())
    with pytest.raises(ValueError, match="output_retries must be 0 to 10"):
        Agent(name="bad", instructions="", output_type=int, output_retries=11)


def test_the_schema_digest_names_the_type_across_builds():
    first, again = output_type(Verdict).spec, run().agent.output
    assert first == again and len(first.sha256) == 64
    assert output_type(Cat).spec.sha256 != output_type(Dog).spec.sha256


def test_a_valid_reply_is_the_output_as_json():
    state = run()
    answer(state, OutputCheck(valid=True, value={"approve": True, "note": None}))
    assert json.loads(state.final_output) == {"approve": True, "note": None}
    assert isinstance(loop.next_step(state), loop.Finish)


def test_invalid_replies_go_back_until_the_retries_are_spent():
    state = run(retries=2)
    for attempt in range(2):
        answer(state, OutputCheck(valid=False, problem=f"wrong {attempt}"))
        assert state.items[-1] == UserMessage(
            content=f"Your reply is not a valid Verdict: wrong {attempt}\n"
            "Reply again with only the JSON that matches the required schema.",
            feedback=True,
        )
        assert isinstance(loop.next_step(state), loop.CallModel)
    answer(state, OutputCheck(valid=False, problem="wrong 2"))
    assert state.status is RunStatus.OUTPUT_INVALID and state.final_output is None
    assert state.error.message == "the final reply is not a valid Verdict after 3 attempts: wrong 2"
    assert isinstance(loop.next_step(state), loop.Finish)


def test_feedback_does_not_reset_max_turns():
    state = run(retries=10)
    state.max_turns = 3
    for _ in range(3):
        answer(state, OutputCheck(valid=False, problem="no"))
    assert loop.next_step(state) == loop.Finish(RunStatus.MAX_TURNS_EXCEEDED)


def test_a_reply_that_came_without_a_check_is_not_taken_as_the_output():
    state = run(retries=0)
    answer(state, None, content='{"approve": true}')
    assert state.status is RunStatus.OUTPUT_INVALID and output.UNCHECKED in state.error.message


def test_a_resumed_output_invalid_run_asks_again_with_fresh_retries():
    state = run(retries=0)
    answer(state, OutputCheck(valid=False, problem="nope"))
    resumed = loop.resume(state, run_id="r2", workflow_run="w2", now=T0)
    assert resumed.status is RunStatus.RUNNING and resumed.error is None
    assert resumed.items[-1].content.startswith("The run was resumed. the final reply is not")
    assert not resumed.items[-1].feedback
    assert isinstance(loop.next_step(resumed), loop.CallModel)
    assert output.retries_used(resumed) == 0


def test_the_error_kept_is_bounded():
    state = run(retries=0)
    answer(state, OutputCheck(valid=False, problem="x" * 100_000))
    assert len(state.error.message) < output.PROBLEM_CHARS + 200


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_number_json_cannot_hold_is_not_an_output(number):
    check = output_type(float).check('{"output": ' + number + "}")
    assert not check.valid and "Invalid JSON" in check.problem
