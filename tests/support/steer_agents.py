"""Agents for steering a run while it works (tests/integration/test_steering.py, the
recorded history `interrupted_tool`): a tool that waits until the test releases it and
records whether a cancel reached it, instead of sleeping."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import timedelta

from durable_agents import Agent, ToolContext, tool
from tests.support.agents import send_email

STARTED: set[str] = set()
"""Keys of `hold` calls that have begun."""
RELEASED: set[str] = set()
"""Keys the test lets go of: their `hold` returns."""
STOPPED: list[str] = []
"""Call ids of `hold` calls a cancel reached (their CancelledError)."""
STOPPED_AT: dict[str, float] = {}
"""When each of them heard of it (time.monotonic())."""


def reset() -> None:
    STARTED.clear()
    RELEASED.clear()
    STOPPED.clear()
    STOPPED_AT.clear()


async def started(key: str, timeout: float = 30) -> None:
    """Until the `hold` call with `key` has begun."""
    async with asyncio.timeout(timeout):
        while key not in STARTED:
            await asyncio.sleep(0.02)


@tool(heartbeat_timeout=timedelta(seconds=1))
async def hold(key: str, ctx: ToolContext) -> str:
    """Wait until the test releases `key` (at most 120 s): a slow tool that honours a
    cancel (it heartbeats, so a cancel reaches it)."""
    STARTED.add(key)
    try:
        async with asyncio.timeout(120):
            while key not in RELEASED:
                await asyncio.sleep(0.02)
    except asyncio.CancelledError:
        STOPPED.append(ctx.call_id)
        STOPPED_AT[ctx.call_id] = time.monotonic()
        raise
    return f"released {key}"


@tool(heartbeat_timeout=timedelta(seconds=1))
async def stubborn(key: str, ctx: ToolContext) -> str:
    """As `hold`, but it hears a cancel and works on until released (a tool that
    ignores its cancel)."""
    STARTED.add(key)
    while key not in RELEASED:
        try:
            await asyncio.sleep(0.02)
        except asyncio.CancelledError:
            STOPPED.append(ctx.call_id)  # heard, and ignored
    return f"finished {key} anyway"


@tool(heartbeat_timeout=None)
async def deaf(key: str, ctx: ToolContext) -> str:
    """As `hold`, without a heartbeat: a cancel cannot reach it."""
    STARTED.add(key)
    async with asyncio.timeout(120):
        while key not in RELEASED:
            await asyncio.sleep(0.02)
    return f"released {key}"


steerable = Agent(
    name="steerable",
    instructions="You work slowly.",
    model="test-model",
    tools=[hold, send_email, stubborn, deaf],
    max_turns=6,
)
"""A session message that does not say is queued (the default)."""

impatient = Agent(
    name="impatient",
    instructions="You work slowly, and drop it for a new message.",
    model="test-model",
    tools=[hold, send_email],
    max_turns=6,
    while_busy="interrupt",
)
"""A session message that does not say interrupts the turn."""

switching = dataclasses.replace(steerable, name="switching", turns_per_workflow_run=1)
"""Continues as new before each model call after its first in a workflow run."""

unstoppable = dataclasses.replace(steerable, name="unstoppable", allow_interrupt=False)
"""Takes no interrupts: a sender may not withdraw its calls or stop its turns."""

STEER_AGENTS = (steerable, impatient, switching, unstoppable)
