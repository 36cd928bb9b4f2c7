"""The Responses API (`POST /responses`) through the official `openai` client: the
second `ModelAPI` (`activities.model_api`), producing the same RunState items as Chat
Completions (`activities.chat_completions`).

Stateless on purpose: every call sends the whole conversation with `store=False`
and never a `previous_response_id`, so nothing of the run lives at the provider
and a snapshot resumes anywhere. The model's reasoning comes back encrypted
(`include=["reasoning.encrypted_content"]`), is kept on the reply in RunState
(`AssistantMessage.reasoning`) and is passed back verbatim on the next calls.
"""

from __future__ import annotations

import contextlib
from typing import Any

import openai
from durable_agents.activities.chat_completions import data_url, truncated
from durable_agents.activities.model_errors import (
    preview,
    reply_error,
    reported_usage,
    unavailable,
)
from durable_agents.activities.model_stream import Deltas
from durable_agents.activities.openai_http import checked_client, post, post_streaming
from durable_agents.activities.user_content import responses_content
from durable_agents.workflows.agent_spec import ModelSettings, OutputSpec
from durable_agents.workflows.contract import ERROR_MODEL_REQUEST
from durable_agents.workflows.payloads import ModelReply, ModelRequest, ModelToolCall, ToolSchema
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Item,
    ReasoningItem,
    ToolResult,
    Usage,
    UserMessage,
)
from durable_agents.workflows.settings import api_problem
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel
from temporalio.exceptions import ApplicationError

RESPONSES_PATH = "/responses"
"""The Responses endpoint, relative to the client's base URL."""
INCLUDE = ["reasoning.encrypted_content"]
"""What each call asks to get back beyond the reply: its reasoning, encrypted."""


class ResponsesAPI:
    """The Responses API through an `openai.AsyncOpenAI` client built with
    `max_retries=0` (Temporal owns retries)."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self._client = checked_client(client)

    async def complete(
        self,
        request: ModelRequest,
        output: OutputSpec | None = None,
        deltas: Deltas | None = None,
    ) -> ModelReply:
        """The model's reply to the conversation in `request` (as `output`, if given);
        with `deltas`, streamed, its text published as it comes."""
        body: dict[str, Any] = {
            "model": request.model,
            "input": to_input(request.items, tool_output_limit=request.tool_output_limit),
            "store": False,
            "include": INCLUDE,
        }
        if request.instructions:
            body["instructions"] = request.instructions
        if request.tools:
            body["tools"] = to_tools(request.tools)
        if output is not None:
            body["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": output.name,
                    "schema": output.json_schema,
                    "strict": True,
                }
            }
        headers: dict[str, str] = {}
        if request.settings is not None:
            body.update(settings_options(request.settings, tools=bool(request.tools)))
            headers = dict(request.settings.extra_headers or {})
        if deltas is not None:
            return to_reply(await self._streamed(body, headers, deltas))
        response = await post(
            self._client, RESPONSES_PATH, body, Response, what="response", headers=headers
        )
        return to_reply(response)

    async def _streamed(
        self, body: dict[str, Any], headers: dict[str, str], deltas: Deltas
    ) -> Response:
        """The response, streamed: output text and function-call arguments go to
        `deltas` as they come; the reply is the `response.completed` event's."""
        calls: dict[str, tuple[str, str]] = {}  # item id -> (call id, tool)
        events = post_streaming(
            self._client, RESPONSES_PATH, body, ResponseStreamEvent, headers=headers
        )
        async with contextlib.aclosing(events):
            async for event in events:
                try:
                    done = _take_event(event, calls, deltas)
                except (AttributeError, TypeError, ValueError, KeyError) as err:
                    raise reply_error(f"a streamed event has an unusable shape: {err}") from err
                if done is not None:
                    return done  # as the same reply, unstreamed, would be read
        raise unavailable("the stream ended before the response was complete")


def _take_event(
    event: ResponseStreamEvent, calls: dict[str, tuple[str, str]], deltas: Deltas
) -> Response | None:
    """Take one streamed event: the finished response, or None (more to come)."""
    if event.type == "response.output_item.added" and event.item.type == "function_call":
        calls[str(event.item.id or "")] = (event.item.call_id, event.item.name)
    elif event.type == "response.output_text.delta":
        deltas.text(event.delta)
    elif event.type == "response.function_call_arguments.delta":
        deltas.text(event.delta, call=calls.get(str(event.item_id), ("", "")))
    elif event.type in ("response.completed", "response.incomplete"):
        return event.response
    elif event.type == "response.failed":
        error = event.response.error
        raise unavailable(f"the response failed: {error.message if error else '?'}")
    elif event.type == "error":
        raise unavailable(f"the stream failed: {event.message}")
    return None


def settings_options(settings: ModelSettings, *, tools: bool) -> dict[str, Any]:
    """The request-body parameters of `settings` (those set), as the Responses API
    names them; `extra_body` last. A setting it has no parameter for (`seed`, `stop`)
    is refused (non-retryable), never dropped."""
    problem = api_problem(settings, "responses")
    if problem is not None:
        raise ApplicationError(
            f"model request refused: {problem}", type=ERROR_MODEL_REQUEST, non_retryable=True
        )
    body: dict[str, Any] = settings.model_dump(
        exclude_none=True, include={"temperature", "top_p", "max_output_tokens", "metadata"}
    )
    if tools and settings.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.reasoning_effort is not None:
        body["reasoning"] = {"effort": settings.reasoning_effort}
    choice = settings.tool_choice
    if choice is not None:
        named = {"type": "function", "name": choice}
        body["tool_choice"] = choice if choice in ("auto", "none", "required") else named
    return body | dict(settings.extra_body or {})


def to_input(items: list[Item], *, tool_output_limit: int | None = None) -> list[dict[str, Any]]:
    """The Responses `input` items for the conversation (decisions and guardrail
    checks are left out). A reply's reasoning goes first, as the provider sent it,
    when it came with its encrypted content and something follows it."""
    sent: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, UserMessage):
            sent.append({"role": "user", "content": responses_content(item)})
        elif isinstance(item, AssistantMessage):
            if item.content or item.tool_calls:
                sent.extend(
                    {
                        "type": "reasoning",
                        "id": thought.id,
                        "summary": [{"type": "summary_text", "text": t} for t in thought.summary],
                        "encrypted_content": thought.encrypted_content,
                    }
                    for thought in item.reasoning
                    if thought.encrypted_content
                )
            if item.content:
                sent.append({"role": "assistant", "content": item.content})
            sent.extend(
                {
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": call.tool,
                    "arguments": call.arguments,
                }
                for call in item.tool_calls
            )
        elif isinstance(item, ToolResult):
            text = truncated(item.content, tool_output_limit)
            output: str | list[dict[str, Any]] = text
            if item.attachments:  # the output's parts: its text, then its images
                output = [{"type": "input_text", "text": text}] + [
                    {"type": "input_image", "image_url": data_url(a)} for a in item.attachments
                ]
            sent.append({"type": "function_call_output", "call_id": item.call_id, "output": output})
    return sent


def to_tools(tools: list[ToolSchema]) -> list[dict[str, Any]]:
    """The Responses `tools` parameter: function tools, not strict (a tool's schema
    may have optional parameters; the activity validates the arguments)."""
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "strict": False,
        }
        for t in tools
    ]


def to_reply(response: Response) -> ModelReply:
    """Our ModelReply from a Response; an unusable one is a ModelReplyError, a failed
    one a retryable ModelUnavailable."""
    if response.status == "failed":
        error = response.error
        detail = f"{error.code}: {error.message}" if error is not None else "no error given"
        raise unavailable(f"the response failed: {detail}")
    if response.status not in (None, "completed", "incomplete"):
        raise reply_error(f"the response is {response.status}, not completed")
    text: list[str] = []
    calls: list[ModelToolCall] = []
    reasoning: list[ReasoningItem] = []
    try:
        for part in response.output:
            if part.type == "reasoning":
                reasoning.append(
                    ReasoningItem(
                        id=part.id,
                        summary=[s.text for s in part.summary],
                        encrypted_content=part.encrypted_content,
                    )
                )
            elif part.type == "message":
                for piece in part.content:
                    text.append(piece.text if piece.type == "output_text" else piece.refusal)
            elif part.type == "function_call":
                calls.append(
                    ModelToolCall(call_id=part.call_id, tool=part.name, arguments=part.arguments)
                )
            else:
                raise TypeError(f"an output item of type {part.type!r}, which was not asked for")
        incomplete = response.incomplete_details
    except (AttributeError, TypeError, ValueError) as err:
        raise reply_error(f"the reply has an unusable shape: {err}") from err
    if response.status == "incomplete":
        reason = incomplete.reason if incomplete is not None else None
        finish = "length" if reason == "max_output_tokens" else reason or "incomplete"
    else:
        finish = "tool_calls" if calls else "stop"
    try:
        content = "".join(text) if text else None
    except TypeError as err:  # a text part that is not text
        raise reply_error(f"the reply has an unusable shape: {err}") from err
    return ModelReply(
        content=content,
        tool_calls=calls,
        usage=_usage(response),
        finish_reason=finish,
        reasoning=reasoning,
    )


def _usage(response: Response) -> Usage:
    """The call's usage as reported; absent counts as 0."""
    usage = response.usage
    if usage is None:
        return Usage(model_calls=1)
    if not isinstance(usage, BaseModel):
        raise reply_error(f"its usage is not an object: {preview(usage)}")
    return reported_usage(
        input_tokens=getattr(usage, "input_tokens", 0),
        output_tokens=getattr(usage, "output_tokens", 0),
        total_tokens=getattr(usage, "total_tokens", 0),
        cached_input_tokens=getattr(
            getattr(usage, "input_tokens_details", None), "cached_tokens", 0
        ),
        reasoning_tokens=getattr(
            getattr(usage, "output_tokens_details", None), "reasoning_tokens", 0
        ),
    )
