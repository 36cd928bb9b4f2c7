"""call_model over the Responses API: the real openai client against the scripted
server's stateless `/v1/responses`, reasoning items carried back and forth."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import openai
import pytest
from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.output_type import output_type
from durable_agents.workflows import contract
from durable_agents.workflows.agent_spec import ModelSettings
from durable_agents.workflows.payloads import ModelReply, ModelRequest, OutputRef, ToolSchema
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ReasoningItem,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_agents.testing import Call, Raw, Reply, ScriptedModelServer

AT = datetime(2025, 1, 1, tzinfo=UTC)
ADD = ToolSchema(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


class Verdict(BaseModel):
    approve: bool
    note: str


VERDICT = output_type(Verdict)


def request(items=None, *, api="responses", **fields) -> ModelRequest:
    return ModelRequest(
        model="o-test",
        instructions="Be brief.",
        items=items if items is not None else [UserMessage(content="hi")],
        tools=[ADD],
        turn=1,
        api=api,
        **fields,
    )


@pytest.fixture
async def client(model_server: ScriptedModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    found = openai.AsyncOpenAI(base_url=model_server.base_url, api_key="test", max_retries=0)
    yield found
    await found.close()


async def call(client, model_request: ModelRequest, **options) -> ModelReply:
    activities = ModelActivities(client, output_types=lambda sha: VERDICT, **options)
    return await ActivityEnvironment().run(activities.call_model, model_request)


async def failure(client, model_request: ModelRequest) -> ApplicationError:
    with pytest.raises(ApplicationError) as caught:
        await call(client, model_request)
    return caught.value


async def test_a_reply_with_reasoning_and_calls_maps_to_our_items(client, model_server):
    model_server.script(
        Reply(
            tool_calls=(Call("add", {"a": 1, "b": 2}, call_id="c1"),),
            usage=(40, 25),
            cached_tokens=8,
            reasoning_tokens=20,
            reasoning=("Adding is what the tool does.",),
        )
    )
    reply = await call(client, request())
    assert model_server.endpoints == ["responses"]
    assert [(c.call_id, c.tool, c.arguments) for c in reply.tool_calls] == [
        ("c1", "add", '{"a": 1, "b": 2}')
    ]
    assert reply.content is None and reply.finish_reason == "tool_calls"
    assert reply.usage == Usage(
        model_calls=1,
        input_tokens=40,
        output_tokens=25,
        total_tokens=65,
        cached_input_tokens=8,
        reasoning_tokens=20,
    )
    [thought] = reply.reasoning
    assert thought.summary == ["Adding is what the tool does."]
    assert thought.id.startswith("rs_") and thought.encrypted_content


async def test_the_request_is_stateless_and_carries_the_conversation(client, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, call_id="c1"),), reasoning=("r1",)),
        Reply(content="3"),
    )
    first = await call(client, request())
    items = [
        UserMessage(content="hi"),
        AssistantMessage(
            turn=1,
            content=None,
            tool_calls=[ToolCall(call_id="c1", tool="add", arguments='{"a": 1, "b": 2}')],
            at=AT,
            reasoning=first.reasoning,
        ),
        Decision(call_id="c1", decision="approve", approver="ann", via="signal", at=AT),
        ToolResult(call_id="c1", content="3"),
    ]
    second = await call(client, request(items))
    assert second.content == "3" and second.finish_reason == "stop" and second.reasoning == []
    body = model_server.requests[1]
    assert body["store"] is False and "previous_response_id" not in body
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["instructions"] == "Be brief."
    assert body["tools"] == [
        {
            "type": "function",
            "name": "add",
            "description": "Add two integers.",
            "parameters": ADD.parameters,
            "strict": False,
        }
    ]
    [thought] = first.reasoning
    assert body["input"] == [  # the decision is ours, not the model's: left out
        {"role": "user", "content": "hi"},
        {
            "type": "reasoning",
            "id": thought.id,
            "summary": [{"type": "summary_text", "text": "r1"}],
            "encrypted_content": thought.encrypted_content,
        },
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
    ]
    assert model_server.errors == []


async def test_reasoning_without_encrypted_content_is_kept_but_not_sent_back(client, model_server):
    model_server.script(Reply(content="ok"))
    items = [
        UserMessage(content="hi"),
        AssistantMessage(turn=1, content="hello", at=AT, reasoning=[ReasoningItem(id="rs_x")]),
        UserMessage(content="again"),
    ]
    await call(client, request(items))
    assert [i.get("type", i.get("role")) for i in model_server.requests[0]["input"]] == [
        "user",
        "assistant",
        "user",
    ]


@pytest.mark.parametrize(
    "tamper, refusal",
    [
        (lambda r: r.model_copy(update={"encrypted_content": "forged"}), "could not be verified"),
        (lambda r: r.model_copy(update={"id": "rs_unknown"}), "not found"),
    ],
)
async def test_tampered_reasoning_is_refused_by_the_provider_not_retried(
    client, model_server, tamper, refusal
):
    model_server.script(Reply(content="thinking", reasoning=("r1",)))
    first = await call(client, request())
    items = [
        UserMessage(content="hi"),
        AssistantMessage(turn=1, content="thinking", at=AT, reasoning=[tamper(first.reasoning[0])]),
        UserMessage(content="and?"),
    ]
    err = await failure(client, request(items))
    assert err.type == contract.ERROR_MODEL_REQUEST and err.non_retryable
    assert refusal in str(err)


async def test_structured_output_goes_as_a_strict_text_format(client, model_server):
    model_server.script(Reply(content='{"approve": true, "note": "fine"}'))
    reply = await call(
        client, request(output=OutputRef(name="Verdict", sha256=VERDICT.spec.sha256))
    )
    assert model_server.requests[0]["text"] == {
        "format": {
            "type": "json_schema",
            "name": "Verdict",
            "schema": VERDICT.spec.json_schema,
            "strict": True,
        }
    }
    assert reply.output_check is not None and reply.output_check.problem is None


async def test_settings_take_the_responses_names(client, model_server):
    model_server.script(Reply(content="ok"))
    settings = ModelSettings(
        temperature=0.2,
        top_p=0.5,
        max_output_tokens=300,
        tool_choice="add",
        parallel_tool_calls=False,
        reasoning_effort="high",
        metadata={"team": "billing"},
        extra_headers={"X-Tenant": "acme"},
        extra_body={"truncation": "auto"},
    )
    await call(client, request(settings=settings))
    body = model_server.requests[0]
    sent = {k: body[k] for k in body if k not in ("model", "input", "instructions", "tools")}
    assert sent == {
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "temperature": 0.2,
        "top_p": 0.5,
        "max_output_tokens": 300,
        "tool_choice": {"type": "function", "name": "add"},
        "parallel_tool_calls": False,
        "reasoning": {"effort": "high"},
        "metadata": {"team": "billing"},
        "truncation": "auto",
    }
    assert model_server.headers[0]["x-tenant"] == "acme"


@pytest.mark.parametrize("setting", [{"seed": 7}, {"stop": ["END"]}])
async def test_a_setting_the_responses_api_lacks_is_refused_not_dropped(
    client, model_server, setting
):
    err = await failure(client, request(settings=ModelSettings(**setting)))
    assert err.type == contract.ERROR_MODEL_REQUEST and err.non_retryable
    assert "the Responses API has no" in str(err)
    assert model_server.requests == []


async def test_the_worker_default_picks_the_api_of_a_request_that_names_none(client, model_server):
    model_server.script(Reply(content="a"), Reply(content="b"), Reply(content="c"))
    await call(client, request(api=None))
    await call(client, request(api=None), default_api="responses")
    await call(client, request(api="chat_completions"), default_api="responses")
    assert model_server.endpoints == ["chat_completions", "responses", "chat_completions"]


def test_an_unknown_default_api_is_refused(client):
    with pytest.raises(ValueError, match="default_api"):
        ModelActivities(client, default_api="completions")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "body, problem",
    [
        (
            {
                "id": "r",
                "object": "response",
                "output": [{"type": "web_search_call", "id": "w"}],
                "status": "completed",
                "created_at": 1,
                "model": "m",
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
            },
            "web_search_call",
        ),
        (
            {
                "id": "r",
                "object": "response",
                "output": [],
                "status": "in_progress",
                "created_at": 1,
                "model": "m",
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
            },
            "in_progress",
        ),
    ],
)
async def test_an_unusable_response_is_an_unusable_reply(client, model_server, body, problem):
    model_server.script(Raw(body))
    err = await failure(client, request())  # first attempt: retried (a gateway's hiccup)
    assert err.type == contract.ERROR_MODEL_UNAVAILABLE and "unusable reply" in str(err)
    assert problem in str(err)


async def test_a_failed_response_is_retryable(client, model_server):
    body = {
        "id": "r",
        "object": "response",
        "output": [],
        "status": "failed",
        "error": {"code": "server_error", "message": "overloaded"},
        "created_at": 1,
        "model": "m",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    model_server.script(Raw(body))
    err = await failure(client, request())
    assert err.type == contract.ERROR_MODEL_UNAVAILABLE and not err.non_retryable
    assert "overloaded" in str(err)


async def test_an_incomplete_response_says_why(client, model_server):
    body = {
        "id": "r",
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "created_at": 1,
        "model": "m",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "message",
                "id": "m1",
                "role": "assistant",
                "status": "incomplete",
                "content": [{"type": "output_text", "text": "half", "annotations": []}],
            }
        ],
    }
    model_server.script(Raw(body))
    reply = await call(client, request())
    assert reply.content == "half" and reply.finish_reason == "length"


def test_the_scripted_server_refuses_a_previous_response_id(model_server):
    problem = model_server.input_problem({"input": [], "previous_response_id": "resp_1"})
    assert problem is not None and "not found" in problem


def test_the_scripted_server_refuses_reasoning_without_its_following_item(model_server):
    model_server.script(Reply(content="x", reasoning=("r",)))
    with openai.OpenAI(base_url=model_server.base_url, api_key="t", max_retries=0) as sync:
        first = sync.responses.create(model="m", input="hi", store=False)
    thought = first.output[0].model_dump(exclude_none=True)
    problem = model_server.input_problem({"input": [{"role": "user", "content": "hi"}, thought]})
    assert problem is not None and "without its required following item" in problem
    answered = [thought, {"role": "assistant", "content": "x"}]
    assert model_server.input_problem({"input": answered}) is None
