"""`@input_guardrail` and `@output_guardrail`: checks that can stop a run.

An input guardrail gets the user's message (the first, and each new one of a
session); an output guardrail gets the final output (the typed value for an agent
with an output type, else the text). Either may be sync or async, may call a
model, and may take a `GuardrailContext` parameter. Each returns a
`GuardrailResult`: tripped, the run ends `guardrail_tripped` with the guardrail's
name and reason, and nothing after it runs, or, with `on_trip="refuse"`, the run
answers with the guardrail's `refusal` and goes on. Each runs as the `run_guardrail`
activity, with its own timeout and retry policy. A guardrail that runs an agent does
so with `GuardrailContext.run_agent`: its model call goes through the worker's model
API and is counted in the run's usage and budgets.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, get_type_hints

from durable_agents.activities.guardrail_models import GuardrailModels
from durable_agents.activities.spec_fields import derive
from durable_agents.activities.tool import retry_spec
from durable_agents.workflows.agent_spec import GuardrailSpec
from durable_agents.workflows.check_payloads import GuardrailResult
from durable_agents.workflows.execution_settings import CallSettings
from pydantic import JsonValue
from temporalio.common import RetryPolicy

if TYPE_CHECKING:
    from durable_agents.activities.agent import Agent

DEFAULT_GUARDRAIL_TIMEOUT = timedelta(seconds=60)
DEFAULT_GUARDRAIL_RETRY = RetryPolicy(maximum_attempts=3)

Kind = Literal["input", "output"]
OnTrip = Literal["end", "refuse"]


@dataclass(frozen=True)
class GuardrailContext:
    """What a guardrail may know about the run it checks."""

    run_id: str
    agent: str
    context: JsonValue = None
    """The JSON context the run was started with."""
    models: GuardrailModels | None = field(default=None, repr=False, compare=False)
    """The worker's model API for this check (None: the worker has none)."""

    async def run_agent(self, agent: Agent, text: str) -> Any:
        """`agent`'s answer to `text`, in one model call made by the worker and counted
        in the run's usage and budgets: its typed output if it has an output type, else
        the text. The agent has no tools or handoffs; a reply that is no valid output
        raises (the guardrail's retries apply, then it counts as tripped)."""
        if self.models is None:
            raise RuntimeError("this worker has no model API for a guardrail's agent")
        return await self.models.run_agent(agent, text, context=self.context, run_id=self.run_id)


@dataclass(frozen=True)
class Guardrail:
    """A check on a run's input or final output."""

    name: str
    kind: Kind
    fn: Callable[..., Any]
    timeout: timedelta = DEFAULT_GUARDRAIL_TIMEOUT
    retry_policy: RetryPolicy = field(default_factory=lambda: DEFAULT_GUARDRAIL_RETRY)
    context_param: str | None = None
    """Name of the parameter that receives the GuardrailContext, if any."""
    on_trip: OnTrip = "end"
    """What a tripwire does: `end` the run, or `refuse` (answer `refusal`, go on)."""
    refusal: str | None = None
    """The answer of a `refuse` guardrail (None: `DEFAULT_REFUSAL`)."""

    def spec(self) -> GuardrailSpec:
        """The plain-data description frozen into a run."""
        return derive(GuardrailSpec, self)

    def execution_settings(self) -> CallSettings:
        """How the worker runs it (never part of a run: `workflows.execution_settings`)."""
        return derive(
            CallSettings, self, retry=retry_spec(self.retry_policy), heartbeat_timeout_seconds=None
        )

    async def check(self, value: Any, ctx: GuardrailContext) -> GuardrailResult:
        """Run the function (a sync one in a thread); TypeError if it does not return a
        GuardrailResult."""
        kwargs = {self.context_param: ctx} if self.context_param else {}
        if inspect.iscoroutinefunction(self.fn):
            result = await self.fn(value, **kwargs)
        else:
            call = functools.partial(contextvars.copy_context().run, self.fn, value, **kwargs)
            result = await asyncio.get_running_loop().run_in_executor(None, call)
        if not isinstance(result, GuardrailResult):
            raise TypeError(
                f"guardrail {self.name} returned {type(result).__name__}, not a GuardrailResult"
            )
        return result


def input_guardrail(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """A check on the user's message; usable as `@input_guardrail` or with options
    (`name=`, `timeout=`, `retry_policy=`, `on_trip=`, `refusal=`)."""
    return _decorator("input", fn, **options)


def output_guardrail(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """A check on the final output; usable as `@output_guardrail` or with options."""
    return _decorator("output", fn, **options)


def _decorator(
    kind: Kind,
    fn: Callable[..., Any] | None,
    *,
    name: str | None = None,
    timeout: timedelta = DEFAULT_GUARDRAIL_TIMEOUT,
    retry_policy: RetryPolicy | None = None,
    on_trip: OnTrip = "end",
    refusal: str | None = None,
) -> Any:
    if timeout <= timedelta(0):
        raise ValueError(f"a guardrail's timeout must be positive, not {timeout}")
    check_trip(on_trip, refusal)
    policy = retry_policy or DEFAULT_GUARDRAIL_RETRY
    retry_spec(policy)  # refuse an unbounded policy at definition time

    def wrap(f: Callable[..., Any]) -> Guardrail:
        return Guardrail(
            name=name or f.__name__,
            kind=kind,
            fn=f,
            timeout=timeout,
            retry_policy=policy,
            context_param=_context_param(f),
            on_trip=on_trip,
            refusal=refusal,
        )

    return wrap(fn) if fn is not None else wrap


def check_trip(on_trip: str, refusal: str | None) -> None:
    """ValueError unless `on_trip` and `refusal` go together."""
    if on_trip not in ("end", "refuse"):
        raise ValueError(f"on_trip must be 'end' or 'refuse', not {on_trip!r}")
    if refusal is not None and on_trip != "refuse":
        raise ValueError("a refusal is the answer of a guardrail with on_trip='refuse'")
    if refusal is not None and not 0 < len(refusal) <= 2_000:
        raise ValueError("a refusal has 1 to 2,000 characters")


def _context_param(fn: Callable[..., Any]) -> str | None:
    """The parameter typed GuardrailContext; TypeError unless the function takes the
    checked value first and at most that context besides."""
    params = list(inspect.signature(fn).parameters.values())
    hints = get_type_hints(fn)
    context = [p.name for p in params if hints.get(p.name) is GuardrailContext]
    others = [p for p in params if p.name not in context]
    if len(others) != 1 or others[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise TypeError(
            f"guardrail {fn.__name__}: takes the checked value as its one parameter "
            "(and optionally a GuardrailContext)"
        )
    return context[0] if context else None
