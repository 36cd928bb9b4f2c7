"""One request to an OpenAI API through the official client, its failures put for
Temporal (`activities.model_errors`): what each `ModelAPI` shares, whatever its
endpoint (`activities.chat_completions`, `activities.responses_api`).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, TypeVar

import httpx2
import openai
from durable_agents.activities.model_errors import (
    preview,
    redact,
    reply_error,
    request_timeout,
    retry_delay,
    unavailable,
)
from durable_agents.workflows.contract import ERROR_MODEL_REQUEST
from temporalio.exceptions import ApplicationError

_TRANSIENT_STATUS = frozenset({408, 409, 429})

_R = TypeVar("_R")


def checked_client(client: openai.AsyncOpenAI) -> openai.AsyncOpenAI:
    """`client`, if built with `max_retries=0`: Temporal's retry policy owns retries
    (with backoff, limits and visibility in history); retries inside the client would
    multiply attempts and hide them from Temporal."""
    if getattr(client, "max_retries", None) != 0:
        raise ValueError(
            "the openai client must be created with max_retries=0 "
            f"(got {getattr(client, 'max_retries', None)!r}): Temporal owns retries"
        )
    return client


async def post_streaming(
    client: openai.AsyncOpenAI,
    path: str,
    body: dict[str, Any],
    item: type[_R],
    *,
    headers: Mapping[str, str] | None = None,
) -> AsyncIterator[_R]:
    """POST `body` (with `stream: true`) to `path` and yield the server-sent events as
    `item`s. A refused request raises `post`'s errors; a stream that breaks off or
    carries an error event or a line that is not JSON is `ModelUnavailable` (retried)."""
    try:
        stream = await client.post(
            path,
            body={**body, "stream": True},
            cast_to=item,
            options=_options(client, headers),
            stream=True,
            stream_cls=openai.AsyncStream[item],  # type: ignore[valid-type]
        )
        try:
            async for event in stream:
                yield event
        finally:  # also when the caller stops early: the connection is not left open
            await stream.close()
    except openai.APIStatusError as err:
        raise _status_error(err) from err
    except openai.APIResponseValidationError as err:
        raise reply_error(f"the reply does not match the API: {err.message}") from err
    except openai.APIError as err:  # an error event in the stream, a dropped connection
        raise unavailable(f"the stream broke off: {err.message}") from err
    except (httpx2.HTTPError, ValueError) as err:  # a cut connection; an event not JSON
        raise unavailable(f"the stream broke off: {type(err).__name__}: {err}") from err


def _options(client: openai.AsyncOpenAI, headers: Mapping[str, str] | None) -> dict[str, Any]:
    timeout = request_timeout(client.timeout)
    sent: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
    if headers:
        sent["headers"] = dict(headers)
    return sent


async def post(
    client: openai.AsyncOpenAI,
    path: str,
    body: dict[str, Any],
    cast_to: type[_R],
    *,
    what: str,
    headers: Mapping[str, str] | None = None,
) -> _R:
    """POST `body` to `path` and parse the reply as `cast_to` (`what`, in errors).

    `client.post` with the finished body, not the typed `create` methods: the same
    request, reply type and errors, without the client's parameter transform, which
    walks every message of the conversation on every call (17x the cost at 300
    turns: bench/RESULTS.md). Failures raise the `ApplicationError`s of
    `activities.model_errors`."""
    try:
        reply = await client.post(
            path, body=body, cast_to=cast_to, options=_options(client, headers)
        )  # type: ignore[arg-type]
    except openai.APIStatusError as err:
        raise _status_error(err) from err
    except openai.APITimeoutError as err:
        raise unavailable(f"request timed out: {err.message}") from err
    except openai.APIConnectionError as err:
        detail = f": {err.__cause__}" if err.__cause__ else ""
        raise unavailable(f"{err.message.rstrip('.')}{detail}") from err
    except openai.APIResponseValidationError as err:
        raise reply_error(f"the reply does not match the API: {err.message}") from err
    except json.JSONDecodeError as err:  # cut off, or a page that is not JSON
        raise unavailable(
            f"the reply is not JSON ({err.msg} at character {err.pos}): {preview(err.doc)}"
        ) from err
    if not isinstance(reply, cast_to):  # a proxy's page, sent as text
        raise unavailable(f"the reply is not a {what}: {preview(reply)}")
    return reply


PROVIDER_MESSAGE_CHARS = 500
"""A provider's error message is kept to this many characters."""


def _status_error(err: openai.APIStatusError) -> ApplicationError:
    status = err.status_code
    provider_message = _provider_message(err)
    details: dict[str, object] = {"status_code": status, "provider_message": provider_message}
    code = err.body.get("code") if isinstance(err.body, Mapping) else None
    if isinstance(code, str) and code:  # e.g. context_length_exceeded: the run compacts
        details["provider_code"] = code[:100]
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
    """The provider's own error message when it sent one, key-like strings redacted, on
    one line of at most PROVIDER_MESSAGE_CHARS (a proxy's HTML page can be megabytes:
    the failure would pass Temporal's size limit)."""
    body = err.body
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        text = body["message"]
    elif isinstance(body, str) and body.strip():
        text = body
    else:
        text = err.message
    flat = " ".join(redact(text).split())
    if len(flat) <= PROVIDER_MESSAGE_CHARS:
        return flat
    return f"{flat[: PROVIDER_MESSAGE_CHARS - 1]}… ({len(flat):,} characters)"
