"""`handoff(agent)`: a tool that hands the run over to another agent
(`workflows.handoffs`). `Agent(handoffs=[billing, handoff(shipping, ...)])`."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from durable_agents.activities.instructions import function_name
from durable_agents.activities.tool import DEFAULT_TOOL_RETRY, Tool, ToolContext, approval_policy
from durable_agents.workflows.agent_spec import ApprovalPolicy, ToolSpec
from durable_agents.workflows.contract import ERROR_INPUT_FILTER
from pydantic import BaseModel, ConfigDict, create_model
from temporalio.exceptions import ApplicationError


class _Named(Protocol):
    name: str
    handoff_description: str | None


_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]")


def handoff(
    agent: _Named | str,
    *,
    tool_name: str | None = None,
    description: str | None = None,
    input_type: type[BaseModel] | None = None,
    needs_approval: bool | ApprovalPolicy | Callable[..., Any] = False,
    input_filter: Literal["remove_tools"] | Callable[..., Any] | None = None,
    on_handoff: Callable[..., Any] | None = None,
) -> Tool:
    """A tool the model calls to hand the run over to `agent` (an Agent, or the name of
    one the same worker serves: agents that hand over to each other). The model sees
    `transfer_to_<name>` (or `tool_name`) described by `description` (default: a line
    naming the agent, and its `handoff_description`); `input_type`, a pydantic model,
    is what the model gives with it (a reason, say: kept in the run's `Handoff` item);
    `needs_approval` as for `@tool`; `input_filter="remove_tools"`: the new agent's
    model is not sent the tool calls and results from before the handoff (the run keeps
    them); or a function `(items) -> items`, run on the worker with the hook: given the
    conversation so far (user messages, replies, tool results: `Item`s), it returns
    those the new agent's model is sent, a selection of the items it was given (the run
    records which it left out and keeps every item). Taking it switches the run's agent
    from the next model call.

    `on_handoff`: a function run on the worker when the model takes the handoff, before
    the switch, in a `run_tool` activity (retried as a tool is): `(ctx: ToolContext)`, or
    `(ctx: ToolContext, input)` with `input_type` (the model's validated input), sync or
    async. It may change the run's context (`ctx.context`, as a tool does: the new agent
    starts with it). One that fails (its last attempt raised) leaves the run with its
    agent, and the model is told why."""
    filter_items = None
    if callable(input_filter):
        filter_items, input_filter = input_filter, None
        _takes(
            filter_items, ("items",), f"handoff to {getattr(agent, 'name', agent)}: input_filter"
        )
    elif input_filter not in (None, "remove_tools"):
        raise ValueError(
            f"handoff input_filter: 'remove_tools', a function (items) -> items or None, "
            f"not {input_filter!r}"
        )
    name = agent if isinstance(agent, str) else agent.name
    if not name:
        raise ValueError("a handoff needs the name of the agent it hands over to")
    said = None if isinstance(agent, str) else agent.handoff_description
    if input_type is not None and not (
        isinstance(input_type, type) and issubclass(input_type, BaseModel)
    ):
        raise TypeError(f"handoff to {name}: input_type takes a pydantic model")
    arguments = input_type or create_model(
        f"transfer_to_{name}_arguments", __config__=ConfigDict(extra="forbid")
    )
    hook = _hook(name, on_handoff, input_type) if on_handoff is not None else None
    return Tool(
        name=tool_name or "transfer_to_" + _NOT_NAME.sub("_", name)[:50],
        description=description or default_description(name, said),
        fn=_not_called,
        arguments=arguments,
        approval=approval_policy(needs_approval),
        retry_policy=DEFAULT_TOOL_RETRY,
        handoff=name,
        input_filter=input_filter,
        target=None if isinstance(agent, str) else agent,
        on_handoff=function_name(on_handoff) if on_handoff is not None else None,
        invoke_json=hook,
        filter_items=filter_items,
    )


def _takes(fn: Callable[..., Any], wanted: tuple[str, ...], what: str) -> None:
    """Refuse `fn` unless it can be called with `wanted` (as many arguments)."""
    try:
        inspect.signature(fn).bind(*wanted)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must take {' and '.join(wanted)}") from None


def _hook(
    name: str, fn: Callable[..., Any], input_type: type[BaseModel] | None
) -> Callable[[str, ToolContext], Awaitable[Any]]:
    """`run_tool`'s way to run an `on_handoff` function: with the call's context, and the
    model's input validated as `input_type` if it has one (checked here, at definition)."""
    if not callable(fn):
        raise TypeError(f"handoff to {name}: on_handoff takes a function, not {fn!r}")
    wanted = ("ctx", "input") if input_type is not None else ("ctx",)
    try:
        inspect.signature(fn).bind(*wanted)
    except (TypeError, ValueError):
        raise TypeError(
            f"handoff to {name}: on_handoff must take {' and '.join(wanted)} "
            f"({'with' if input_type is not None else 'without'} an input_type)"
        ) from None

    async def run(raw: str, ctx: ToolContext) -> str:
        args: tuple[Any, ...] = (ctx,)
        if input_type is not None:
            args = (ctx, input_type.model_validate_json(raw))
        if inspect.iscoroutinefunction(fn):
            await fn(*args)
        else:
            call = functools.partial(contextvars.copy_context().run, fn, *args)
            done = await asyncio.get_running_loop().run_in_executor(None, call)
            if inspect.isawaitable(done):
                await done
        return f"on_handoff of the handoff to {name} ran"

    return run


def default_description(name: str, said: str | None) -> str:
    """A handoff tool's description when none is given: a line naming the agent, and
    what the agent says it is for (its `handoff_description`)."""
    line = f"Hand the conversation over to the {name} agent."
    return f"{line} {said}" if said else line


def described_by_target(tool: ToolSpec, said: str | None) -> ToolSpec:
    """`tool`, a handoff given by the target's name (`handoff("billing")`), described with
    the target's `handoff_description` as a handoff given the agent itself would be (the
    worker knows the agent by then); a description given stays."""
    if (
        tool.handoff is None
        or not said
        or tool.description != default_description(tool.handoff, None)
    ):
        return tool
    return tool.model_copy(update={"description": default_description(tool.handoff, said)})


def _not_called(**_: Any) -> None:
    raise RuntimeError("a handoff is taken by the workflow, never run as a tool")


async def left_out_by(found: Tool, conversation: list[Any]) -> list[int] | None:
    """What `found`'s input filter in code leaves out of `conversation` (positions), or
    None without one. A filter that raises fails the attempt (retried as a tool is); one
    that gives back anything but items it was given fails the call for good."""
    if found.filter_items is None:
        return None
    given = list(conversation)
    if inspect.iscoroutinefunction(found.filter_items):
        chosen = await found.filter_items(list(given))
    else:
        call = functools.partial(contextvars.copy_context().run, found.filter_items, list(given))
        chosen = await asyncio.get_running_loop().run_in_executor(None, call)
        if inspect.isawaitable(chosen):
            chosen = await chosen
    where = {id(item): n for n, item in enumerate(given)}
    if not isinstance(chosen, list | tuple) or any(id(i) not in where for i in chosen):
        raise ApplicationError(
            f"the input filter of {found.name} gave back {type(chosen).__name__} holding "
            "something it was not given: a filter returns a selection of the items it "
            "gets, it does not write new ones",
            type=ERROR_INPUT_FILTER,
            non_retryable=True,
        )
    kept = {where[id(i)] for i in chosen}
    return [n for n in range(len(given)) if n not in kept]
