"""Poller counts alone: `python -m bench.pollers` (≈ 2 min).

An earlier options table showed 20 + 20 task pollers at 0.6-0.7 of the default's
time per turn beside other busy workers (their tasks shared the dev server's
rate-limited queue reads: bench/ANALYSIS.md). This measures only AgentWorkflow
with the default pollers against 10 and 20 workflow-task pollers, 20
activity-task pollers, and both at 20 (and the floor), each worker a process of
its own, in the same rotating repetitions.
"""

from __future__ import annotations

import asyncio

from bench import common
from bench.overhead import Variant, measure

VARIANTS = {
    "10 workflow-task pollers": Variant("workflow-pollers-10"),
    "20 workflow-task pollers": Variant("workflow-pollers-20"),
    "20 activity-task pollers": Variant("activity-pollers-20"),
    "20 + 20 pollers": Variant("pollers-20"),
}


async def main() -> None:
    async with common.dev_server(common.converter()) as env:
        timings = await measure(env.client, turns=10, delay=0.0, reps=5, variants=VARIANTS)
    print("| run | ms/turn, median of 5 | each repetition |\n|---|---|---|")
    for kind, values in timings.wall.items():
        each = ", ".join(f"{v:.0f}" for v in values)
        print(f"| {kind} | {common.median(values):.1f} | {each} |")


if __name__ == "__main__":
    asyncio.run(main())
