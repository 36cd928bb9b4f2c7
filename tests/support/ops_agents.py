"""An agent for the worker-lifecycle and telemetry tests: its tools take a while; `nap`
leaves marks on disk (the worker runs in another process, so the marks are how the test
sees the tool)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from temporalio.common import RetryPolicy

from durable_agents import Agent, ToolContext, tool


@tool
async def nap(seconds: float, ctx: ToolContext) -> str:
    """Sleep `seconds`; touches `started` then `finished` in the run context's `marks` dir."""
    marks = Path(ctx.context["marks"])
    (marks / "started").touch()
    await asyncio.sleep(seconds)
    (marks / "finished").touch()
    return f"slept {seconds}s"


@tool(timeout=timedelta(seconds=1), retry_policy=RetryPolicy(maximum_attempts=1))
async def stall(seconds: float) -> str:
    """Sleep `seconds`, longer than its 1 s timeout allows; one attempt only."""
    await asyncio.sleep(seconds)
    return f"stalled {seconds}s"


@tool
def gadget() -> object:
    """Return something that is not JSON (the tool result cannot be sent)."""
    return object()


napper = Agent(
    name="napper",
    instructions="You nap when asked.",
    model="test-model",
    tools=[nap, stall, gadget],
    max_turns=3,
)
