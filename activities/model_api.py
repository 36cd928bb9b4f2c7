"""The `call_model` activity, over a small seam for model APIs (`ModelAPI`).

The activity owns what every API shares: heartbeats (a dead worker is noticed in
seconds), the worker's limit on model calls in flight, telemetry. A `ModelAPI`
owns one provider API: turning the conversation into a request, the call, the
reply and the error taxonomy (`activities.model_errors`). Chat Completions
(`activities.chat_completions`) is the first; the Responses API is a second
implementation, not branches in here.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import openai
from durable_agents.activities import telemetry
from durable_agents.activities.chat_completions import ChatCompletionsAPI
from durable_agents.activities.heartbeat import heartbeating
from durable_agents.workflows.contract import ACTIVITY_CALL_MODEL
from durable_agents.workflows.payloads import ModelReply, ModelRequest
from temporalio import activity
from temporalio.exceptions import ApplicationError

DEFAULT_MAX_CONCURRENT = 64
"""Model calls one worker has in flight at once to one endpoint, by default."""


class ModelAPI(Protocol):
    """One provider API, as `call_model` uses it."""

    async def complete(self, request: ModelRequest) -> ModelReply:
        """The model's next reply to the conversation in `request`.

        Raises `ApplicationError`s built by `activities.model_errors`: retryable
        (`ModelUnavailable`) for transient failures, non-retryable with a contract
        type for requests the provider refuses and unusable replies."""
        ...


class ModelActivities:
    """Holds the model API for the `call_model` activity."""

    def __init__(
        self,
        api: ModelAPI | openai.AsyncOpenAI,
        *,
        max_concurrent: int | None = DEFAULT_MAX_CONCURRENT,
    ) -> None:
        """`api`: a `ModelAPI`, or an `openai` client (built with `max_retries=0`)
        spoken to through Chat Completions. `max_concurrent`: model calls this
        worker has in flight at once (others wait, heartbeating); None: no limit."""
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, not {max_concurrent}")
        self._api: ModelAPI = (
            ChatCompletionsAPI(api) if isinstance(api, openai.AsyncOpenAI) else api
        )
        self._slots = asyncio.Semaphore(max_concurrent) if max_concurrent else None

    @activity.defn(name=ACTIVITY_CALL_MODEL)
    async def call_model(self, request: ModelRequest) -> ModelReply:
        """Ask the model for its next reply to the conversation in `request`."""
        try:
            async with heartbeating():
                if self._slots is None:
                    reply = await self._api.complete(request)
                else:
                    async with self._slots:
                        reply = await self._api.complete(request)
        except ApplicationError as err:
            telemetry.count_model_call(request.model, outcome=err.type or "error")
            raise
        except BaseException as err:  # cancelled, timed out, or a bug: counted all the same
            outcome = telemetry.failure_reason(err, default=type(err).__name__)
            telemetry.count_model_call(request.model, outcome=outcome)
            raise
        telemetry.count_model_call(request.model, usage=reply.usage)
        return reply
