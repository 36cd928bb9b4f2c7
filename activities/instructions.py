"""Instructions a function gives (`Agent(instructions=FUNCTION)`), asked by `call_model` on
the worker before each model call, so the text travels with the reply: no activity of its
own, and the gate's tag over the reply covers it (`workflows.instructions`).

The function is `(context: InstructionsContext) -> str`, sync (run in a thread) or async.
One that raises, does not answer within `INSTRUCTIONS_TIMEOUT`, or gives anything but
text (or more than `MAX_INSTRUCTIONS_CHARS`) fails the model call for good, with the
reason: the run fails and says why; the model is never called without them.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from durable_agents.workflows.contract import ERROR_INSTRUCTIONS_FAILED
from durable_agents.workflows.instructions import MAX_INSTRUCTIONS_CHARS
from durable_agents.workflows.payloads import InstructionsScope
from pydantic import JsonValue
from temporalio.exceptions import ApplicationError

INSTRUCTIONS_TIMEOUT = timedelta(seconds=30)
"""How long an instructions function may take to give its text."""

InstructionsLookup = Callable[[str], Callable[..., Any] | None]
"""agent name -> its instructions function on this worker, or None."""

REASON_CHARS = 1_000


@dataclass(frozen=True)
class InstructionsContext:
    """What an instructions function may know about the model call it instructs."""

    run_id: str
    agent: str
    context: JsonValue = None
    """The JSON context of the run (what its tools get)."""


def function_name(fn: Callable[..., Any]) -> str:
    """How a run's spec names an instructions function: `module.qualname`."""
    module = getattr(fn, "__module__", None) or "?"
    return f"{module}.{getattr(fn, '__qualname__', None) or type(fn).__name__}"[:500]


async def instructions_for(scope: InstructionsScope, find: InstructionsLookup | None) -> str:
    """The text `scope.agent`'s instructions function gives now; raises a non-retryable
    `ApplicationError` (`InstructionsFailed`) with the reason when it gives none."""
    fn = find(scope.agent) if find is not None else None
    if fn is None:
        _fail(scope, "this worker has no instructions function for it")
    context = InstructionsContext(run_id=scope.run_id, agent=scope.agent, context=scope.context)
    try:
        text = await asyncio.wait_for(_call(fn, context), INSTRUCTIONS_TIMEOUT.total_seconds())
    except TimeoutError:
        _fail(scope, f"did not answer within {INSTRUCTIONS_TIMEOUT.total_seconds():g} s")
    except Exception as err:
        _fail(scope, f"raised {type(err).__name__}: {err}")
    if not isinstance(text, str):
        _fail(scope, f"returned {type(text).__name__}, not a str")
    if len(text) > MAX_INSTRUCTIONS_CHARS:
        _fail(scope, f"gave {len(text):,} characters, more than {MAX_INSTRUCTIONS_CHARS:,}")
    return text


async def _call(fn: Callable[..., Any], context: InstructionsContext) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn(context)
    run = functools.partial(contextvars.copy_context().run, fn, context)
    answer = await asyncio.get_running_loop().run_in_executor(None, run)
    return await answer if inspect.isawaitable(answer) else answer


def _fail(scope: InstructionsScope, why: str) -> Any:
    text = f"the instructions function of agent {scope.agent!r} {why}"
    if len(text) > REASON_CHARS:
        text = text[: REASON_CHARS - 1] + "…"
    raise ApplicationError(text, type=ERROR_INSTRUCTIONS_FAILED, non_retryable=True)
