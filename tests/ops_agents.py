"""An agent for the worker-lifecycle tests: its tool takes a while and leaves marks on disk
(the worker runs in another process, so the marks are how the test sees the tool)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from activities import Agent, ToolContext, tool


@tool
async def nap(seconds: float, ctx: ToolContext) -> str:
    """Sleep `seconds`; touches `started` then `finished` in the run context's `marks` dir."""
    marks = Path(ctx.context["marks"])
    (marks / "started").touch()
    await asyncio.sleep(seconds)
    (marks / "finished").touch()
    return f"slept {seconds}s"


napper = Agent(
    name="napper",
    instructions="You nap when asked.",
    model="test-model",
    tools=[nap],
    max_turns=3,
)
