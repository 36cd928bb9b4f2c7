"""The `call_model` activity, over a small seam for model APIs (`ModelAPI`).

The activity owns what every API shares: heartbeats (a dead worker is noticed in
seconds), the worker's limit on model calls in flight, telemetry. A `ModelAPI`
owns one provider API: turning the conversation into a request, the call, the
reply and the error taxonomy (`activities.model_errors`). Chat Completions
(`activities.chat_completions`) and the Responses API (`activities.responses_api`)
are the two; each request names its API (the agent's `model_api`) or takes the
worker's default.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, Protocol

import openai
from durable_agents.activities import telemetry
from durable_agents.activities.approval_rules import RuleLookup, add_verdicts
from durable_agents.activities.chat_completions import ChatCompletionsAPI
from durable_agents.activities.heartbeat import heartbeating
from durable_agents.activities.instructions import InstructionsLookup, instructions_for
from durable_agents.activities.model_stream import Deltas
from durable_agents.activities.output_type import OutputType
from durable_agents.activities.responses_api import ResponsesAPI
from durable_agents.workflows.agent_spec import ModelAPIName, OutputSpec
from durable_agents.workflows.contract import ACTIVITY_CALL_MODEL, ERROR_OUTPUT_TYPE_UNKNOWN
from durable_agents.workflows.payloads import ModelReply, ModelRequest
from temporalio import activity
from temporalio.exceptions import ApplicationError

DEFAULT_MAX_CONCURRENT = 64
"""Model calls one worker has in flight at once to one endpoint, by default."""


class ModelAPI(Protocol):
    """One provider API, as `call_model` uses it."""

    async def complete(
        self,
        request: ModelRequest,
        output: OutputSpec | None = None,
        deltas: Deltas | None = None,
    ) -> ModelReply:
        """The model's next reply to the conversation in `request`; with `output`, the
        model is asked for that structured output (its strict JSON Schema); with
        `deltas`, the reply is streamed and its text published as it comes.

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
        output_types: Callable[[str], OutputType | None] | None = None,
        default_api: ModelAPIName = "chat_completions",
        approval_rules: RuleLookup | None = None,
        instructions: InstructionsLookup | None = None,
    ) -> None:
        """`api`: an `openai` client (built with `max_retries=0`), spoken to through
        the API each request names, else `default_api`; or one `ModelAPI` for every
        request (it may read `request.api`). `max_concurrent`: model calls this
        worker has in flight at once (others wait, heartbeating); None: no limit.
        `output_types`: finds an agent's output type by its schema digest
        (`AgentRegistry.output_type`), to check final replies against. `approval_rules`:
        finds a tool's code rule (`AgentRegistry.approval_rule`), asked about the
        reply's calls (`activities.approval_rules`). `instructions`: finds an agent's
        instructions function (`AgentRegistry.instructions`), asked before each call of
        a request that says so (`activities.instructions`)."""
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, not {max_concurrent}")
        if default_api not in ("chat_completions", "responses"):
            raise ValueError(
                f"default_api must be 'chat_completions' or 'responses', not {default_api!r}"
            )
        self._apis: dict[str, ModelAPI]
        self.openai_client = api if isinstance(api, openai.AsyncOpenAI) else None
        """The worker's `openai` client, if it was given one (guardrails' SDK agents)."""
        self.default_api: ModelAPIName = default_api
        if isinstance(api, openai.AsyncOpenAI):
            self._apis = {
                "chat_completions": ChatCompletionsAPI(api),
                "responses": ResponsesAPI(api),
            }
        else:
            self._apis = {"chat_completions": api, "responses": api}
        self._default_api = default_api
        self._slots = asyncio.Semaphore(max_concurrent) if max_concurrent else None
        self._output_types = output_types
        self._approval_rules = approval_rules
        self._instructions = instructions

    @activity.defn(name=ACTIVITY_CALL_MODEL)
    async def call_model(self, request: ModelRequest) -> ModelReply:
        """Ask the model for its next reply to the conversation in `request`."""
        try:
            given = known = None
            if request.instructions_from is not None:  # the agent's function, asked now
                given = await instructions_for(request.instructions_from, self._instructions)
                known, request = (
                    request.instructions,
                    request.model_copy(update={"instructions": given}),
                )
            typed = self._output_type(request) if request.output is not None else None
            options: dict[str, Any] = {"output": typed.spec} if typed is not None else {}
            api = self._apis[request.api or self._default_api]
            async with heartbeating():
                async with self._slots or contextlib.nullcontext():
                    if request.stream_key is None:
                        reply = await api.complete(request, **options)
                    else:
                        async with Deltas(request.stream_key) as deltas:
                            reply = await api.complete(request, **options, deltas=deltas)
                if request.approval_rules is not None:  # verdicts travel with the reply
                    await add_verdicts(reply, request.approval_rules, self._approval_rules)
        except ApplicationError as err:
            telemetry.count_model_call(request.model, outcome=err.type or "error")
            raise
        except BaseException as err:  # cancelled, timed out, or a bug: counted all the same
            outcome = telemetry.failure_reason(err, default=type(err).__name__)
            telemetry.count_model_call(request.model, outcome=outcome)
            raise
        telemetry.count_model_call(request.model, usage=reply.usage)
        # the text travels back (into the run's history) only when it changed
        reply.instructions = given if given != known else None
        if typed is not None and not reply.tool_calls:
            reply.output_check = typed.check(reply.content)
        return reply

    async def reply(self, request: ModelRequest, output: OutputSpec | None = None) -> ModelReply:
        """The model's reply to `request` (asked for `output`, if given), within the
        worker's limit on calls in flight (for a call of the run's other than its turns:
        an evaluator's, a guardrail's agent)."""
        api = self._apis[request.api or self._default_api]
        async with self._slots or contextlib.nullcontext():
            reply = await (api.complete(request, output) if output else api.complete(request))
        telemetry.count_model_call(request.model, usage=reply.usage)
        return reply

    def _output_type(self, request: ModelRequest) -> OutputType:
        assert request.output is not None
        found = self._output_types(request.output.sha256) if self._output_types else None
        if found is None:
            # Retryable: during a deploy, a worker of the run's build can check it.
            raise ApplicationError(
                f"no agent of this worker has the output type {request.output.name} with "
                f"schema sha256 {request.output.sha256[:16]}… (changed since the run "
                "started?): the reply cannot be checked here",
                type=ERROR_OUTPUT_TYPE_UNKNOWN,
            )
        return found
