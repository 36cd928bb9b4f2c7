"""The `call_model` activity: one Chat Completions request through the `openai` client.

Failures are sorted for Temporal's retry policy: transient ones (429, 5xx,
timeouts, connection errors) are retryable and honour the provider's
`retry-after`; the rest are non-retryable `ApplicationError`s with a `type`.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import openai
from durable_agents.activities import telemetry
from durable_agents.activities.heartbeat import heartbeating
from durable_agents.workflows.contract import (
    ACTIVITY_CALL_MODEL,
    ERROR_MODEL_REPLY,
    ERROR_MODEL_REQUEST,
    ERROR_MODEL_UNAVAILABLE,
)
from durable_agents.workflows.payloads import ModelReply, ModelRequest, ModelToolCall, ToolSchema
from durable_agents.workflows.state import AssistantMessage, Item, ToolResult, Usage, UserMessage
from openai.types.chat import ChatCompletion
from temporalio import activity
from temporalio.exceptions import ApplicationError

MAX_RETRY_AFTER = timedelta(seconds=300)
"""Longest provider-requested wait we honour; a longer `retry-after` is cut to this."""

COMPLETIONS_PATH = "/chat/completions"
"""The Chat Completions endpoint, relative to the client's base URL."""

REQUEST_TIMEOUT_MARGIN = timedelta(seconds=2)
"""How much sooner than the activity's start-to-close timeout the HTTP request gives up."""

_TRANSIENT_STATUS = frozenset({408, 409, 429})

DEFAULT_MAX_CONCURRENT = 64
"""Model calls one worker has in flight at once to one endpoint, by default."""

UNUSABLE_REPLY_ATTEMPTS = 3
"""Attempts after which a JSON reply that is not a completion fails the call."""

PREVIEW_CHARS = 120
"""Characters of an unusable reply quoted in the error."""


class ModelActivities:
    """Holds the `openai` client for the `call_model` activity.

    The client must be built with `max_retries=0`: Temporal's retry policy owns
    retries (with backoff, limits and visibility in history); retries inside the
    client would multiply attempts and hide them from Temporal.
    """

    def __init__(
        self, client: openai.AsyncOpenAI, *, max_concurrent: int | None = DEFAULT_MAX_CONCURRENT
    ) -> None:
        """`max_concurrent`: model calls this worker has in flight at once to this
        client's endpoint (others wait, heartbeating); None: no limit of its own."""
        if getattr(client, "max_retries", None) != 0:
            raise ValueError(
                "the openai client must be created with max_retries=0 "
                f"(got {getattr(client, 'max_retries', None)!r}): Temporal owns retries"
            )
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, not {max_concurrent}")
        self._client = client
        self._slots = asyncio.Semaphore(max_concurrent) if max_concurrent else None

    @activity.defn(name=ACTIVITY_CALL_MODEL)
    async def call_model(self, request: ModelRequest) -> ModelReply:
        """Ask the model for its next reply to the conversation in `request`."""
        try:
            async with heartbeating():
                if self._slots is None:
                    reply = await self._ask(request)
                else:
                    async with self._slots:
                        reply = await self._ask(request)
        except ApplicationError as err:
            telemetry.count_model_call(request.model, outcome=err.type or "error")
            raise
        except BaseException as err:  # cancelled, timed out, or a bug: counted all the same
            outcome = telemetry.failure_reason(err, default=type(err).__name__)
            telemetry.count_model_call(request.model, outcome=outcome)
            raise
        telemetry.count_model_call(request.model, usage=reply.usage)
        return reply

    async def _ask(self, request: ModelRequest) -> ModelReply:
        options: dict[str, Any] = {
            "model": request.model,
            "messages": to_messages(
                request.instructions, request.items, tool_output_limit=request.tool_output_limit
            ),
        }
        if request.tools:
            options["tools"] = to_tools(request.tools)
        timeout = request_timeout(self._client.timeout)
        try:
            # `client.post` with the finished body, not `chat.completions.create`:
            # the same request, response type and errors, without the client's
            # parameter transform, which walks every message of the conversation
            # on every call (17x the cost at 300 turns: bench/RESULTS.md).
            completion = await self._client.post(
                COMPLETIONS_PATH,
                body=options,
                cast_to=ChatCompletion,
                options={} if timeout is None else {"timeout": timeout},
            )
        except openai.APIStatusError as err:
            raise _status_error(err) from err
        except openai.APITimeoutError as err:
            raise unavailable(f"request timed out: {err.message}") from err
        except openai.APIConnectionError as err:
            detail = f": {err.__cause__}" if err.__cause__ else ""
            raise unavailable(f"{err.message.rstrip('.')}{detail}") from err
        except openai.APIResponseValidationError as err:
            raise _reply_error(f"the reply does not match the API: {err.message}") from err
        except json.JSONDecodeError as err:  # cut off, or a page that is not JSON
            raise unavailable(
                f"the reply is not JSON ({err.msg} at character {err.pos}): {_preview(err.doc)}"
            ) from err
        if not isinstance(completion, ChatCompletion):  # a proxy's page, sent as text
            raise unavailable(f"the reply is not a chat completion: {_preview(completion)}")
        return to_reply(completion)


def to_messages(
    instructions: str, items: list[Item], *, tool_output_limit: int | None = None
) -> list[dict[str, Any]]:
    """The Chat Completions messages for the conversation (decisions are left out).

    A tool result longer than `tool_output_limit` characters is cut, with a
    marker that tells the model how much it does not see."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for item in items:
        if isinstance(item, UserMessage):
            messages.append({"role": "user", "content": item.content})
        elif isinstance(item, AssistantMessage):
            message: dict[str, Any] = {"role": "assistant", "content": item.content}
            if item.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": call.call_id,
                        "type": "function",
                        "function": {"name": call.tool, "arguments": call.arguments},
                    }
                    for call in item.tool_calls
                ]
            messages.append(message)
        elif isinstance(item, ToolResult):
            content = _truncated(item.content, tool_output_limit)
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": content})
        # Decision items are our audit trail, not conversation: the model never sees them.
    return messages


def _truncated(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return (
        f"{text[:limit]}\n[output truncated: showing the first {limit:,} of "
        f"{len(text):,} characters]"
    )


def to_tools(tools: list[ToolSchema]) -> list[dict[str, Any]]:
    """The Chat Completions `tools` parameter for the agent's tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def to_reply(completion: Any) -> ModelReply:
    """Our ModelReply from a ChatCompletion; an unusable shape is a ModelReplyError."""
    choices = getattr(completion, "choices", None)
    if not choices:
        raise _reply_error("the reply has no choices")
    try:
        choice = choices[0]
        message = choice.message
        calls = []
        for call in message.tool_calls or []:
            if call.type != "function" or not isinstance(call.function.arguments, str):
                raise TypeError(f"unsupported tool call {call!r}")
            calls.append(
                ModelToolCall(
                    call_id=call.id, tool=call.function.name, arguments=call.function.arguments
                )
            )
        usage = completion.usage  # absent, or counts left out: counted as 0
        prompt = (usage.prompt_tokens if usage else 0) or 0
        output = (usage.completion_tokens if usage else 0) or 0
        return ModelReply(
            content=message.content,
            tool_calls=calls,
            usage=Usage(
                model_calls=1,
                input_tokens=prompt,
                output_tokens=output,
                total_tokens=(usage.total_tokens if usage else 0) or prompt + output,
            ),
            finish_reason=choice.finish_reason,
        )
    except (AttributeError, TypeError, ValueError) as err:
        raise _reply_error(f"the reply has an unusable shape: {err}") from err


def request_timeout(client_timeout: object) -> float | None:
    """Seconds the HTTP request may take: the client's own timeout, but no more than
    the attempt's start-to-close timeout less a margin, so that a slow provider ends
    as a retryable timeout of ours rather than an attempt Temporal has already given
    up on. None: the client's timeout as it is (no budget, or the client has none)."""
    if not activity.in_activity():  # called directly (client.local_run, tests)
        return None
    budget = activity.info().start_to_close_timeout
    own = getattr(client_timeout, "read", client_timeout)  # an httpx.Timeout, or seconds
    if budget is None or not isinstance(own, int | float):
        return None
    return min(float(own), max((budget - REQUEST_TIMEOUT_MARGIN).total_seconds(), 1.0))


def retry_delay(headers: Mapping[str, str], *, now: float | None = None) -> timedelta | None:
    """The wait the provider asks for (`retry-after-ms`, then `retry-after` in seconds
    or as an HTTP date), capped at MAX_RETRY_AFTER; None if absent or unusable."""
    seconds: float | None = None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
            break
        except ValueError:
            if name == "retry-after":
                parsed = email.utils.parsedate_tz(value)
                if parsed is not None:
                    seconds = email.utils.mktime_tz(parsed) - (time.time() if now is None else now)
    if seconds is None or math.isnan(seconds) or seconds <= 0:
        return None
    return min(timedelta(seconds=min(seconds, 1e9)), MAX_RETRY_AFTER)


def _status_error(err: openai.APIStatusError) -> ApplicationError:
    status = err.status_code
    provider_message = _provider_message(err)
    details = {"status_code": status, "provider_message": provider_message}
    if status in _TRANSIENT_STATUS or status >= 500:
        return unavailable(
            f"HTTP {status}: {provider_message}",
            details,
            delay=retry_delay(err.response.headers),
        )
    return ApplicationError(
        f"model request refused: HTTP {status}: {provider_message}",
        details,
        type=ERROR_MODEL_REQUEST,
        non_retryable=True,
    )


def _provider_message(err: openai.APIStatusError) -> str:
    """The provider's own error message, verbatim when it sent one."""
    body = err.body
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body.strip():
        return body.strip()
    return err.message


def unavailable(
    message: str, details: dict[str, Any] | None = None, *, delay: timedelta | None = None
) -> ApplicationError:
    """A transient failure (retried within the call's retry policy and time budget)
    after `delay` (the provider's `retry-after`), else after the policy's backoff
    with jitter, so that runs an outage held back do not all return at once."""
    return ApplicationError(
        f"model unavailable: {message}",
        *([details] if details is not None else []),
        type=ERROR_MODEL_UNAVAILABLE,
        next_retry_delay=delay or jittered_backoff(),
    )


def jittered_backoff(rng: random.Random | None = None) -> timedelta | None:
    """The retry policy's delay before the next attempt, times a random 0.5-1.0
    ("equal jitter"); None outside an activity or without a policy."""
    if not activity.in_activity():
        return None
    info = activity.info()
    policy = info.retry_policy
    if policy is None:
        return None
    base = policy.initial_interval.total_seconds() * policy.backoff_coefficient ** (
        min(info.attempt, 64) - 1
    )
    if policy.maximum_interval is not None:
        base = min(base, policy.maximum_interval.total_seconds())
    return timedelta(seconds=base * (rng or random).uniform(0.5, 1.0))


def _reply_error(message: str) -> ApplicationError:
    """A JSON reply that is not a usable completion: tried again a few times (a
    gateway's hiccup), then a non-retryable ModelReplyError (a broken endpoint)."""
    attempt = activity.info().attempt if activity.in_activity() else UNUSABLE_REPLY_ATTEMPTS
    if attempt < UNUSABLE_REPLY_ATTEMPTS:
        return unavailable(f"unusable reply (attempt {attempt}): {message}")
    return ApplicationError(
        f"unusable model reply: {message}", type=ERROR_MODEL_REPLY, non_retryable=True
    )


def _preview(body: object) -> str:
    """What arrived, for an error message: its kind, size and start."""
    text = body if isinstance(body, str) else json.dumps(body, default=repr)
    start = " ".join(text[:PREVIEW_CHARS].split())
    more = "…" if len(text) > PREVIEW_CHARS else ""
    return f"{len(text):,} characters: {start!r}{more}"
