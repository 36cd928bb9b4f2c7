"""call_model against a real scripted HTTP server through the real openai client."""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import openai
import pytest
from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.model_errors import (
    MAX_RETRY_AFTER,
    UNUSABLE_REPLY_ATTEMPTS,
    jittered_backoff,
)
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import ModelReply, ModelRequest, ToolSchema
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_agents.testing import EXHAUSTED, Call, Fault, Hang, Raw, Reply, ScriptedModelServer

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


def request(*, instructions: str = "Be brief.", items=None, tools=None) -> ModelRequest:
    return ModelRequest(
        model="gpt-test",
        instructions=instructions,
        items=items if items is not None else [UserMessage(content="hi")],
        tools=tools if tools is not None else [ADD],
        turn=1,
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
async def client(model_server: ScriptedModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    found = openai.AsyncOpenAI(base_url=model_server.base_url, api_key="test", max_retries=0)
    yield found
    await found.close()


async def call(client: openai.AsyncOpenAI, model_request: ModelRequest | None = None):
    activities = ModelActivities(client)
    return await ActivityEnvironment().run(activities.call_model, model_request or request())


async def failure(client: openai.AsyncOpenAI, model_request: ModelRequest | None = None):
    with pytest.raises(ApplicationError) as caught:
        await call(client, model_request)
    return caught.value


# --- replies ----------------------------------------------------------------------


async def test_text_reply_maps_content_usage_and_finish_reason(client, model_server):
    model_server.script(Reply(content="Hello!", usage=(12, 3)))
    reply = await call(client)
    assert reply.content == "Hello!"
    assert reply.tool_calls == []
    assert reply.finish_reason == "stop"
    assert reply.usage == Usage(model_calls=1, input_tokens=12, output_tokens=3, total_tokens=15)


async def test_two_tool_calls_keep_ids_names_and_arguments_verbatim(client, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 2, "b": 3}, "c1"), Call("add", "{oops", "c2")))
    )
    reply = await call(client)
    assert reply.finish_reason == "tool_calls"
    assert reply.content is None
    assert [(c.call_id, c.tool, c.arguments) for c in reply.tool_calls] == [
        ("c1", "add", json.dumps({"a": 2, "b": 3})),
        ("c2", "add", "{oops"),
    ]


async def test_request_carries_instructions_conversation_and_tool_schemas(client, model_server):
    model_server.script(Reply(content="done"))
    items = [
        UserMessage(content="add 2 and 3, then 1 and 1"),
        AssistantMessage(
            turn=1,
            content="adding",
            tool_calls=[
                ToolCall(call_id="c1", tool="add", arguments='{"a": 2, "b": 3}'),
                ToolCall(call_id="c2", tool="add", arguments="{oops", needs_approval=True),
            ],
            at=AT,
        ),
        Decision(call_id="c2", decision="reject", approver="ann", via="signal", at=AT),
        ToolResult(call_id="c1", content="5"),
        ToolResult(call_id="c2", content="rejected by ann", is_error=True),
    ]
    await call(client, request(items=items))
    [sent] = model_server.requests
    assert sent["model"] == "gpt-test"
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "add 2 and 3, then 1 and 1"},
        {
            "role": "assistant",
            "content": "adding",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                },
                {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{oops"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
        {"role": "tool", "tool_call_id": "c2", "content": "rejected by ann"},
    ]
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": ADD.parameters,
            },
        }
    ]


async def test_empty_instructions_and_no_tools_are_left_out_of_the_request(client, model_server):
    model_server.script(Reply(content="ok"))
    await call(client, request(instructions="", tools=[]))
    [sent] = model_server.requests
    assert sent["messages"] == [{"role": "user", "content": "hi"}]
    assert "tools" not in sent


@pytest.mark.parametrize(
    "raw, problem",
    [
        (Raw("<html>502 bad gateway</html>", content_type="text/html"), "not a chat completion"),
        (Raw("<html>proxy error</html>"), "not JSON (Expecting value at character 0)"),
        (Raw('{"id": "x", "choices": [{"ind'), "not JSON (Unterminated string"),
        (Raw("[1, 2]"), "not a chat completion"),
    ],
    ids=["html-page", "html-as-json", "cut-json", "json-array"],
)
async def test_garbled_reply_is_transient_and_says_what_arrived(client, model_server, raw, problem):
    model_server.script(raw)
    error = await failure(client)
    assert error.type == contract.ERROR_MODEL_UNAVAILABLE
    assert not error.non_retryable
    assert problem in error.message
    body = raw.body if isinstance(raw.body, str) else ""
    assert f"{len(body):,} characters" in error.message and body[:10] in error.message


async def test_reply_cut_off_mid_body_is_a_transient_connection_error(client, model_server):
    model_server.script(Raw({"id": "x", "object": "chat.completion", "choices": []}, cut_at=12))
    error = await failure(client)
    assert error.type == contract.ERROR_MODEL_UNAVAILABLE and not error.non_retryable
    assert "peer closed connection" in error.message


@pytest.mark.parametrize(
    "body",
    [{"id": "x", "object": "chat.completion", "created": 0, "choices": []}, {}],
    ids=["no-choices", "empty-object"],
)
async def test_json_reply_without_choices_is_retried_then_fails_for_good(
    client, model_server, body
):
    activities = ModelActivities(client)
    env = ActivityEnvironment()
    for attempt in range(1, UNUSABLE_REPLY_ATTEMPTS + 1):
        env.info = dataclasses.replace(ActivityEnvironment.default_info(), attempt=attempt)
        model_server.script(Raw(body))
        with pytest.raises(ApplicationError) as caught:
            await env.run(activities.call_model, request())
        error = caught.value
        assert "no choices" in error.message
        last = attempt == UNUSABLE_REPLY_ATTEMPTS
        assert error.type == (
            contract.ERROR_MODEL_REPLY if last else contract.ERROR_MODEL_UNAVAILABLE
        )
        assert error.non_retryable == last


async def test_transient_failures_back_off_with_jitter_within_the_policy():
    env = ActivityEnvironment()
    policy = RetryPolicy(
        initial_interval=timedelta(seconds=2), maximum_interval=timedelta(seconds=60)
    )
    delays = []
    for attempt in (1, 3, 10):
        env.info = dataclasses.replace(
            ActivityEnvironment.default_info(), attempt=attempt, retry_policy=policy
        )
        delays.append(env.run(jittered_backoff, random.Random(attempt)).total_seconds())
    assert 1.0 <= delays[0] <= 2.0  # 2 s x [0.5, 1]
    assert 4.0 <= delays[1] <= 8.0  # 8 s x [0.5, 1]
    assert 30.0 <= delays[2] <= 60.0  # capped at 60 s, then jittered
    spread = {env.run(jittered_backoff, random.Random(seed)) for seed in range(20)}
    assert len(spread) == 20  # runs held back by one outage do not return in step


async def test_model_calls_beyond_the_worker_limit_wait_their_turn(client, model_server):
    """Counted inside the responder, which a request leaves before its reply is sent:
    the next request cannot arrive before it has left (the server's own `in_flight`
    drops only once the reply is written, so a quick next request can overlap it)."""
    lock, inside, most, answered = threading.Lock(), [0], [0], []

    def responder(body: dict) -> Reply:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.3)
        with lock:
            inside[0] -= 1
            answered.append(str(len(answered)))
            return Reply(content=answered[-1])

    model_server.responder = responder
    activities = ModelActivities(client, max_concurrent=2)
    started = time.monotonic()
    replies = await asyncio.gather(
        *(ActivityEnvironment().run(activities.call_model, request()) for _ in range(4))
    )
    elapsed = time.monotonic() - started
    assert sorted(r.content for r in replies) == ["0", "1", "2", "3"]
    assert most[0] <= 2  # never more at once than the limit
    assert elapsed >= 0.6  # two rounds of two, not one round of four (load only adds)


def test_max_concurrent_must_be_positive(client):
    with pytest.raises(ValueError, match="max_concurrent must be at least 1, not 0"):
        ModelActivities(client, max_concurrent=0)


# --- transient failures: retryable ------------------------------------------------


@pytest.mark.parametrize("status", [408, 409, 500, 503])
async def test_transient_status_is_retryable_model_unavailable(client, model_server, status):
    model_server.script(Fault(status, "overloaded"))
    error = await failure(client)
    assert error.type == contract.ERROR_MODEL_UNAVAILABLE
    assert not error.non_retryable
    assert error.next_retry_delay is None  # the retry policy's backoff applies
    assert f"HTTP {status}" in error.message and "overloaded" in error.message


async def test_exhausted_script_fails_loudly_as_a_server_error(client, model_server):
    error = await failure(client)
    assert error.type == contract.ERROR_MODEL_UNAVAILABLE
    assert EXHAUSTED in error.message
    assert model_server.errors == [EXHAUSTED]


async def test_rate_limit_honours_retry_after_seconds(client, model_server):
    model_server.script(Fault(429, "slow down", headers={"retry-after": "2"}))
    error = await failure(client)
    assert error.type == contract.ERROR_MODEL_UNAVAILABLE
    assert not error.non_retryable
    assert error.next_retry_delay == timedelta(seconds=2)


async def test_retry_after_ms_takes_precedence_over_retry_after(client, model_server):
    headers = {"retry-after-ms": "1500", "retry-after": "9"}
    model_server.script(Fault(429, "slow down", headers=headers))
    error = await failure(client)
    assert error.next_retry_delay == timedelta(milliseconds=1500)


async def test_retry_after_as_http_date_is_honoured(client, model_server):
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    model_server.script(Fault(503, "maintenance", headers={"retry-after": when}))
    error = await failure(client)
    assert error.next_retry_delay is not None
    assert timedelta(seconds=25) <= error.next_retry_delay <= timedelta(seconds=31)


async def test_retry_after_is_capped(client, model_server):
    model_server.script(Fault(429, "come back tomorrow", headers={"retry-after": "86400"}))
    error = await failure(client)
    assert error.next_retry_delay == MAX_RETRY_AFTER


async def test_connection_refused_is_retryable_model_unavailable():
    refused = openai.AsyncOpenAI(
        base_url=f"http://127.0.0.1:{closed_port()}/v1", api_key="test", max_retries=0
    )
    error = await failure(refused)
    assert error.type == contract.ERROR_MODEL_UNAVAILABLE
    assert not error.non_retryable
    assert error.next_retry_delay is None
    await refused.close()


async def test_dropped_connection_is_retryable_model_unavailable(client, model_server):
    model_server.script(Hang(0))
    error = await failure(client)
    assert error.type == contract.ERROR_MODEL_UNAVAILABLE
    assert not error.non_retryable
    assert "Connection error" in error.message


async def test_timeout_is_retryable_model_unavailable(model_server):
    model_server.script(Hang(60))  # ends when the server stops
    impatient = openai.AsyncOpenAI(
        base_url=model_server.base_url, api_key="test", max_retries=0, timeout=0.3
    )
    error = await failure(impatient)
    assert model_server.in_flight == 1  # the client gave up while the server still hung
    assert error.type == contract.ERROR_MODEL_UNAVAILABLE
    assert "timed out" in error.message
    assert not error.non_retryable
    await impatient.close()


async def test_request_gives_up_before_the_attempts_start_to_close_timeout(client, model_server):
    model_server.script(Hang(60))  # ends when the server stops
    environment = ActivityEnvironment()  # enforces no timeout itself: the request must
    environment.info = dataclasses.replace(
        environment.info, start_to_close_timeout=timedelta(seconds=3)
    )
    began = time.monotonic()
    with pytest.raises(ApplicationError) as caught:
        await environment.run(ModelActivities(client).call_model, request())
    assert time.monotonic() - began > 0.5  # not at once: after its 1 s (3 s less 2 s)
    assert model_server.in_flight == 1  # the request gave up while the server still hung
    assert caught.value.type == contract.ERROR_MODEL_UNAVAILABLE
    assert "timed out" in caught.value.message


# --- bad requests: non-retryable -------------------------------------------------


@pytest.mark.parametrize(
    "status, provider_message",
    [
        (400, "context_length_exceeded: too long"),
        (401, "Incorrect API key provided: sk-***"),
        (403, "You are not allowed to sample from this model"),
        (404, "The model `gpt-nope` does not exist"),
        (422, "Unprocessable: bad tool schema"),
    ],
)
async def test_client_error_is_non_retryable_with_provider_message_and_status(
    client, model_server, status, provider_message
):
    model_server.script(Fault(status, provider_message), Reply(content="never reached"))
    error = await failure(client)
    assert error.type == contract.ERROR_MODEL_REQUEST
    assert error.non_retryable
    assert f"HTTP {status}" in error.message
    assert provider_message in error.message
    assert error.details == ({"status_code": status, "provider_message": provider_message},)
    assert model_server.remaining() == 1  # one request, not retried by the client


async def test_a_credential_in_the_providers_error_text_is_redacted(client, model_server):
    leaked = "Incorrect API key provided: sk-proj-4f9a8b7c6d5e4f3a2b1c. Bearer abcdefgh12345678"
    model_server.script(Fault(401, leaked))
    error = await failure(client)
    assert error.message == (
        "model request refused: HTTP 401: Incorrect API key provided: [redacted] [redacted]"
    )
    assert "4f9a8b7c" not in str(error.details)


def test_client_with_its_own_retries_is_refused():
    with pytest.raises(ValueError, match="max_retries=0"):
        ModelActivities(openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="test"))


# --- the scripted server itself ------------------------------------------------------


def test_scripted_server_answers_unknown_paths_404_and_bad_json_400(model_server):
    def post(path: str, data: bytes) -> tuple[int, dict]:
        url = model_server.base_url.removesuffix("/v1") + path
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=data)) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    status, body = post("/v1/embeddings", b"{}")
    assert status == 404 and body["error"]["code"] == "not_found"
    status, body = post("/v1/chat/completions", b"{not json")
    assert status == 400 and "malformed JSON" in body["error"]["message"]
    assert model_server.requests == []


async def test_scripted_server_generates_unique_call_ids(client, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {}), Call("add", {}))), Reply(tool_calls=(Call("add", {}),))
    )
    first, second = await call(client), await call(client)
    ids = [c.call_id for c in first.tool_calls + second.tool_calls]
    assert ids == ["call_1", "call_2", "call_3"]


class _CannedAPI:
    """A ModelAPI of the test's own: what the seam asks of a second API."""

    def __init__(self) -> None:
        self.seen: list[ModelRequest] = []

    async def complete(self, model_request: ModelRequest) -> ModelReply:
        self.seen.append(model_request)
        return ModelReply(content=f"{len(model_request.items)} items", usage=Usage(model_calls=1))


async def test_another_model_api_plugs_into_the_same_activity():
    api = _CannedAPI()
    reply = await ActivityEnvironment().run(ModelActivities(api).call_model, request())
    assert reply.content == "1 items"
    assert [r.model for r in api.seen] == ["gpt-test"]


def test_an_openai_client_that_retries_on_its_own_is_refused(model_server):
    retrying = openai.AsyncOpenAI(base_url=model_server.base_url, api_key="test")  # 2 retries
    with pytest.raises(ValueError, match=r"max_retries=0 \(got 2\): Temporal owns retries"):
        ModelActivities(retrying)
