"""An agent whose tools run at most once (`@tool(at_most_once=True)`): for the
integration tests and the `at_most_once` scenario history (`once_carried` continues as
new every two model calls, carrying the calls' stamps)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

from durable_agents.activities.tool import ToolContext, tool

from tests.support import agents

ADDED: list[str] = []
"""Idempotency keys of the starts of `add_once` and `stall_once`."""
ONCE_QUEUE = "once-tools"
"""The queue `add_elsewhere` runs on."""


@tool(at_most_once=True)
def add_once(a: int, b: int, ctx: ToolContext) -> int:
    """Add two integers, at most once."""
    ADDED.append(ctx.idempotency_key)
    return a + b


@tool(at_most_once=True, timeout=timedelta(seconds=1))
async def stall_once(ctx: ToolContext) -> str:
    """Runs past its 1 s timeout."""
    ADDED.append(ctx.idempotency_key)
    await asyncio.sleep(30)
    return "never"


@tool(at_most_once=True, task_queue=ONCE_QUEUE)
def add_elsewhere(a: int, b: int) -> int:
    """`add_once` on a queue of its own."""
    return a + b


once = dataclasses.replace(
    agents.assistant, name="once", tools=[agents.add, add_once, stall_once, add_elsewhere]
)
once_carried = dataclasses.replace(once, name="once_carried", turns_per_workflow_run=2)
"""`once` continuing as new every two model calls, carrying the calls' stamps."""
