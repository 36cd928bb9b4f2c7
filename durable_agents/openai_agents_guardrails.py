"""The OpenAI Agents SDK's input and output guardrails, as our guardrails
(`durable_agents.openai_agents`).

An SDK guardrail function `(ctx, agent, input_or_output) -> GuardrailFunctionOutput`
runs in our `run_guardrail` activity with the SDK's context objects. The SDK's
examples run an agent in it (`await Runner.run(guardrail_agent, input,
context=ctx.context)`): while a converted guardrail runs, `Runner.run` asks the model
through the worker's `openai` client (never a client of the SDK's own), and what the
agent's model calls used comes back with the verdict, counted in the run's usage and
budgets. `tripwire_triggered` trips our guardrail: the run ends `guardrail_tripped`,
or, for a guardrail named in `from_sdk_agent(guardrail_refusals=...)`, the run
answers with the refusal and goes on (as the SDK's customer-service demo does).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import inspect
import json
from collections.abc import Mapping
from typing import Any, Literal

import agents as sdk
from agents.models import get_default_model
from agents.models.multi_provider import MultiProvider
from agents.models.openai_provider import OpenAIProvider
from agents.run import AgentRunner, get_default_agent_runner, set_default_agent_runner
from agents.usage import deserialize_usage
from pydantic import BaseModel, TypeAdapter

from durable_agents.activities.guardrail import Guardrail, GuardrailContext, check_trip
from durable_agents.workflows.check_payloads import GuardrailResult
from durable_agents.workflows.run_items import Usage

_CHECK: contextvars.ContextVar[GuardrailContext | None] = contextvars.ContextVar(
    "durable_agents_sdk_guardrail", default=None
)
"""The check a converted SDK guardrail is running (its `Runner.run` calls count there)."""


def convert(
    owner: sdk.Agent[Any],
    found: sdk.InputGuardrail[Any] | sdk.OutputGuardrail[Any],
    kind: Literal["input", "output"],
    *,
    context: TypeAdapter[Any] | None,
    refusals: Mapping[str, str],
) -> Guardrail:
    """Our guardrail for the SDK guardrail `found` of `owner`."""
    name = found.get_name()
    refusal = refusals.get(name)
    check_trip("refuse" if refusal is not None else "end", refusal)
    sdk_fn = found.guardrail_function
    _count_runs()

    async def check(value: Any, ctx: GuardrailContext) -> GuardrailResult:
        wrapper = sdk.RunContextWrapper(
            context=context.validate_python(ctx.context) if context is not None else ctx.context
        )
        token = _CHECK.set(ctx)
        try:
            if inspect.iscoroutinefunction(sdk_fn):
                answer = await sdk_fn(wrapper, owner, value)
            else:  # in a thread, which copies the context (and so _CHECK)
                answer = await asyncio.to_thread(sdk_fn, wrapper, owner, value)
        finally:
            _CHECK.reset(token)
        if not isinstance(answer, sdk.GuardrailFunctionOutput):
            raise TypeError(
                f"SDK guardrail {name} returned {type(answer).__name__}, "
                "not a GuardrailFunctionOutput"
            )
        return GuardrailResult(
            tripped=bool(answer.tripwire_triggered), reason=_reason(answer.output_info)
        )

    check.__qualname__ = getattr(sdk_fn, "__qualname__", name)
    return Guardrail(
        name=name,
        kind=kind,
        fn=check,
        context_param="ctx",
        on_trip="refuse" if refusal is not None else "end",
        refusal=refusal,
    )


def _reason(info: Any) -> str | None:
    """The guardrail's `output_info` as the reason people read (JSON where it can be)."""
    if info is None:
        return None
    if isinstance(info, BaseModel):
        return info.model_dump_json()
    if isinstance(info, str):
        return info
    try:
        return json.dumps(info, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(info)


class _CountedRunner(AgentRunner):
    """The SDK's runner, unchanged outside a converted guardrail; inside one, its model
    calls go through the worker's client and what they used is counted."""

    def __init__(self, inner: AgentRunner) -> None:
        self.inner = inner

    async def run(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        ctx = _CHECK.get()
        if ctx is None:
            return await self.inner.run(starting_agent, input, **kwargs)
        models = ctx.models
        client = models.openai_client if models is not None else None
        if models is None or client is None:
            raise RuntimeError(
                "an SDK guardrail's Runner.run needs the worker's openai client, and this "
                "worker has none"
            )
        config = kwargs.pop("run_config", None) or sdk.RunConfig()
        if type(config.model_provider) is not MultiProvider:
            raise RuntimeError(
                "an SDK guardrail's Runner.run asks the model through the worker's client: "
                "leave run_config.model_provider unset"
            )
        provider = OpenAIProvider(openai_client=client, use_responses=models.api == "responses")
        config = dataclasses.replace(config, model_provider=provider)
        result = await self.inner.run(starting_agent, input, run_config=config, **kwargs)
        model = starting_agent.model if isinstance(starting_agent.model, str) else None
        models.count(_usage(result.context_wrapper.usage), model=model or get_default_model())
        return result

    def run_streamed(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        if _CHECK.get() is not None:
            raise RuntimeError("in a guardrail, run an agent with Runner.run (not streamed)")
        return self.inner.run_streamed(starting_agent, input, **kwargs)

    def run_sync(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        if _CHECK.get() is not None:
            raise RuntimeError("in a guardrail, run an agent with await Runner.run")
        return self.inner.run_sync(starting_agent, input, **kwargs)


def sdk_usage(used: Usage | None) -> sdk.Usage:
    """Our `Usage` as the SDK's (what its `ToolContext.usage` carries)."""
    if used is None:
        return sdk.Usage()
    return deserialize_usage(
        {
            "requests": used.model_calls,
            "input_tokens": used.input_tokens,
            "output_tokens": used.output_tokens,
            "total_tokens": used.total_tokens,
            "input_tokens_details": {"cached_tokens": used.cached_input_tokens},
            "output_tokens_details": {"reasoning_tokens": used.reasoning_tokens},
        }
    )


def _usage(used: Any) -> Usage:
    """The SDK's `Usage` as ours."""
    cached = getattr(used.input_tokens_details, "cached_tokens", 0) or 0
    reasoning = getattr(used.output_tokens_details, "reasoning_tokens", 0) or 0
    return Usage(
        model_calls=used.requests,
        input_tokens=used.input_tokens,
        output_tokens=used.output_tokens,
        total_tokens=used.total_tokens,
        cached_input_tokens=cached,
        reasoning_tokens=reasoning,
    )


def _count_runs() -> None:
    """Put `_CountedRunner` in front of the SDK's default runner (once)."""
    current = get_default_agent_runner()
    if not isinstance(current, _CountedRunner):
        set_default_agent_runner(_CountedRunner(current))
