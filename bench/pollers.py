"""Poller counts alone: `python -m bench.pollers` (≈ 2 min).

The full run's options table has shown 20 + 20 task pollers at 0.6-0.7 of the
default's time per turn, beside eight other workers on the server. This measures
only AgentWorkflow with the default pollers against 10 and 20 workflow-task
pollers, 20 activity-task pollers, and both at 20 (and the floor), in the same
rotating repetitions, to see whether the gain is the pollers' own.
"""

from __future__ import annotations

import asyncio

from temporalio.worker import PollerBehaviorSimpleMaximum

from bench import common
from bench.overhead import Variant, measure, metered_client


def _pollers(workflow: int | None = None, activity: int | None = None) -> Variant:
    options: dict[str, object] = {}
    if workflow:
        options["workflow_task_poller_behavior"] = PollerBehaviorSimpleMaximum(workflow)
    if activity:
        options["activity_task_poller_behavior"] = PollerBehaviorSimpleMaximum(activity)
    return Variant(options)


VARIANTS = {
    "10 workflow-task pollers": _pollers(workflow=10),
    "20 workflow-task pollers": _pollers(workflow=20),
    "20 activity-task pollers": _pollers(activity=20),
    "20 + 20 pollers": _pollers(workflow=20, activity=20),
}


async def main() -> None:
    async with common.dev_server(common.converter()) as env:
        client, buffer = await metered_client(env.client.service_client.config.target_host)
        timings = await measure(client, buffer, turns=10, delay=0.0, reps=5, variants=VARIANTS)
    print("| run | ms/turn, median of 5 | each repetition |\n|---|---|---|")
    for kind, values in timings.wall.items():
        each = ", ".join(f"{v:.0f}" for v in values)
        print(f"| {kind} | {common.median(values):.1f} | {each} |")


if __name__ == "__main__":
    asyncio.run(main())
