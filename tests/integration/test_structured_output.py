"""Structured output against the real dev server, worker and scripted model: the model is
asked for the agent's output type with a strict JSON Schema, an invalid final reply goes
back to it with the validation error, and a run whose output never validates ends
`output_invalid`."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.output_type import output_type
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentResult, ModelRequest, OutputRef
from durable_agents.workflows.run_items import UserMessage
from durable_agents.workflows.state import RunStatus
from openai import AsyncOpenAI, BadRequestError
from temporalio.api.enums.v1 import EventType
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_agents import AgentClient, RunFailed
from durable_agents.testing import Call, Reply
from tests.support.agents import RefundDecision
from tests.support.cli_support import bound_to
from tests.support.runs import start, state_of


@pytest.fixture
def agents(worker) -> AgentClient:
    return AgentClient(worker.client, task_queue=worker.task_queue)


async def finished(handle) -> AgentResult:
    async with asyncio.timeout(30):
        return await handle.result()


async def model_calls(handle) -> int:
    names = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    return names.count(contract.ACTIVITY_CALL_MODEL)


@pytest.mark.history("structured_output")
async def test_an_invalid_reply_goes_back_once_and_the_valid_one_is_the_typed_output(
    worker, model_server, agents, scenario
):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 20, "b": 20}, "a1"),)),
        Reply(content='{"approve": "maybe", "amount": 40}'),
        Reply(content='{"approve": true, "amount": 40, "reason": "sum checked"}'),
    )
    handle = await start(worker, "refund 40?", agent="decider")
    scenario.run(handle)
    assert (await finished(handle)).status is RunStatus.COMPLETED
    decision = await agents.result(handle.id, output_type=RefundDecision)
    assert decision == RefundDecision(approve=True, amount=40, reason="sum checked")
    assert await model_calls(handle) == 3  # the tool turn, the invalid reply, the retry

    asked = model_server.requests[-1]
    strict = asked["response_format"]
    assert strict["type"] == "json_schema" and strict["json_schema"]["strict"] is True
    assert strict["json_schema"]["name"] == "RefundDecision"
    assert strict["json_schema"]["schema"]["required"] == ["approve", "amount", "reason"]
    feedback = asked["messages"][-1]
    assert feedback["role"] == "user"
    assert feedback["content"].startswith("Your reply is not a valid RefundDecision: approve:")
    state = await state_of(handle)
    assert [i.feedback for i in state.items if isinstance(i, UserMessage)] == [False, True]
    assert state.agent.output.sha256 == output_type(RefundDecision).spec.sha256
    assert json.loads(state.final_output) == decision.model_dump()

    printed = await bound_to(worker)("result", handle.id)
    assert printed.code == 0 and json.loads(printed.stdout.splitlines()[-1]) == {
        "approve": True,
        "amount": 40.0,
        "reason": "sum checked",
    }


async def test_a_plain_type_is_asked_for_wrapped_and_returned_unwrapped(
    worker, model_server, agents
):
    model_server.script(Reply(content='{"output": 42}'))
    handle = await start(worker, "how many?", agent="tally")
    assert (await finished(handle)).final_output == "42"
    assert await agents.result(handle.id, output_type=int) == 42
    schema = model_server.requests[-1]["response_format"]["json_schema"]
    assert schema["name"] == "int" and schema["schema"]["required"] == ["output"]


async def test_an_output_that_never_validates_ends_output_invalid_with_the_error(
    worker, model_server, agents
):
    model_server.script(Reply(content="forty-two"))
    handle = await start(worker, "how many?", agent="tally")
    outcome = await finished(handle)
    assert (outcome.status, outcome.final_output) == (RunStatus.OUTPUT_INVALID, None)
    state = await state_of(handle)
    assert state.error.type == contract.ERROR_OUTPUT_INVALID
    assert state.error.message.startswith("the final reply is not a valid int after 1 attempt:")
    assert "Invalid JSON" in state.error.message
    with pytest.raises(RunFailed, match="ended output_invalid: the final reply is not a valid"):
        await agents.result(handle.id, output_type=int)
    attributes = (await handle.describe()).raw_description.workflow_execution_info
    status = attributes.search_attributes.indexed_fields["AgentStatus"].data
    assert json.loads(status) == "output_invalid"
    assert (await agents.status(handle.id)).status is RunStatus.OUTPUT_INVALID


async def test_a_hostile_reply_cannot_bloat_the_run(worker, model_server):
    # A reply of 200 KB of wrong JSON: the error kept is cut, the run ends cleanly.
    model_server.script(Reply(content=json.dumps({"output": "x" * 200_000})))
    handle = await start(worker, "how many?", agent="tally")
    assert (await finished(handle)).status is RunStatus.OUTPUT_INVALID
    assert len((await state_of(handle)).error.message) < 2_200


async def test_a_worker_without_the_output_type_leaves_the_call_to_one_that_has_it(
    model_server,
):
    # A run of a build whose output type this worker does not define (changed since
    # the run started): retryable, so a worker of the run's build can take it.
    model_server.script(Reply(content='{"output": 1}'))
    client = AsyncOpenAI(base_url=model_server.base_url, api_key="test", max_retries=0)
    activities = ModelActivities(client, output_types=lambda sha: None)
    request = ModelRequest(
        model="m",
        instructions="",
        items=[],
        tools=[],
        turn=1,
        output=OutputRef(name="int", sha256=output_type(int).spec.sha256),
    )
    with pytest.raises(ApplicationError) as raised:
        await ActivityEnvironment().run(activities.call_model, request)
    assert raised.value.type == contract.ERROR_OUTPUT_TYPE_UNKNOWN
    assert not raised.value.non_retryable
    assert "no agent of this worker has the output type int" in str(raised.value)
    await client.close()


async def test_the_scripted_model_refuses_a_schema_strict_mode_cannot_take(model_server):
    client = AsyncOpenAI(base_url=model_server.base_url, api_key="test", max_retries=0)
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(BadRequestError, match="additionalProperties must be false"):
        await client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "loose", "schema": loose, "strict": True},
            },
        )
    await client.close()
