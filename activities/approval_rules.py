"""Code rules (`@tool(needs_approval=FUNCTION)`), asked on the worker by `call_model`
about the calls of the reply it got, so the verdict comes back with the reply: no
activity of its own, and the gate's tag over the reply covers the verdicts too.

A rule is `(arguments: dict, context: ApprovalContext) -> bool`, sync (run in a thread)
or async. It has `RULE_TIMEOUT` to answer. A rule that raises, times out or returns
anything but a bool gives no verdict: the call waits for a person, and why is recorded
(`RuleVerdict.error`). A call is never let through because its rule failed.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from durable_agents.workflows.payloads import ModelReply, ModelToolCall, RuleScope
from durable_agents.workflows.run_items import RuleVerdict
from pydantic import JsonValue

RULE_TIMEOUT = timedelta(seconds=10)
"""How long a code rule may take to say whether a call needs a decision."""

ERROR_CHARS = 500

RuleLookup = Callable[[str, str, str | None], tuple[str, Callable[..., Any]] | None]
"""(agent, tool, its MCP server or None) -> the tool's rule (name, function) on this
worker, or None."""


@dataclass(frozen=True)
class ApprovalContext:
    """What a code rule or an evaluator function may know about the call it judges."""

    run_id: str
    call_id: str
    agent: str
    tool: str
    context: JsonValue = None
    """The JSON context the run was started with (what its tools get)."""


async def add_verdicts(reply: ModelReply, scope: RuleScope, find: RuleLookup | None) -> None:
    """Put each rule's verdict on the reply's calls of the tools in `scope`."""
    for call in reply.tool_calls:
        if call.tool in scope.tools:
            call.rule_verdict = await verdict(call, scope, find)


async def verdict(call: ModelToolCall, scope: RuleScope, find: RuleLookup | None) -> RuleVerdict:
    """The rule's verdict on `call`; a rule that cannot say asks for a person."""
    server = scope.mcp.get(call.tool)
    found = find(scope.agent, call.tool, server) if find is not None else None
    if found is None:
        return _person("?", f"this worker has no code rule for {scope.agent}'s tool {call.tool}")
    name, rule = found
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return _person(name, "the arguments are not a JSON object")
    context = ApprovalContext(
        run_id=scope.run_id,
        call_id=call.call_id,
        agent=scope.agent,
        tool=call.tool,
        context=scope.context,
    )
    try:
        answer = await asyncio.wait_for(
            call_judge(rule, arguments, context), RULE_TIMEOUT.total_seconds()
        )
    except TimeoutError:
        return _person(name, f"the rule did not answer within {RULE_TIMEOUT.total_seconds():g} s")
    except Exception as err:
        return _person(name, f"the rule raised {type(err).__name__}: {err}")
    if not isinstance(answer, bool):
        return _person(name, f"the rule returned {type(answer).__name__}, not a bool")
    return RuleVerdict(rule=name, needs_approval=answer)


async def call_judge(fn: Callable[..., Any], arguments: dict[str, Any], context: Any) -> Any:
    """`fn(arguments, context)`: awaited if async, else run in a thread (its result
    awaited too, should a sync function return an awaitable)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(arguments, context)
    run = functools.partial(contextvars.copy_context().run, fn, arguments, context)
    answer = await asyncio.get_running_loop().run_in_executor(None, run)
    if inspect.isawaitable(answer):
        answer = await answer
    return answer


def _person(rule: str, why: str) -> RuleVerdict:
    text = why if len(why) <= ERROR_CHARS else why[: ERROR_CHARS - 1] + "…"
    return RuleVerdict(rule=rule, needs_approval=True, error=text)
