"""Agents whose tools run on task queues of their own (`@tool(task_queue=...)`),
served by a tools-only worker (`worker.build_tools_worker`, `worker.py --tools-only`)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from durable_agents.activities import ToolContext, tool

from tests.support import agents

TOOLS_QUEUE = "gpu-tools"
"""The queue `render` runs on; `nowhere` goes to one no worker serves."""
RENDERS: list[str] = []
"""Scenes rendered, by whichever worker ran them."""


@tool(task_queue=TOOLS_QUEUE)
def render(scene: str, ctx: ToolContext) -> str:
    """Render a scene (on the GPU workers' queue)."""
    RENDERS.append(scene)
    return f"rendered {scene}"


@tool(task_queue="nobody-serves-this", queue_timeout=timedelta(seconds=1))
def nowhere(scene: str) -> str:
    """Render a scene on a queue no worker serves (its calls time out waiting)."""
    return f"rendered {scene}"


placed = dataclasses.replace(agents.assistant, name="placed", tools=[render, nowhere])
"""Renders on the GPU queue; `nowhere` shows what a call to an unserved queue does."""
