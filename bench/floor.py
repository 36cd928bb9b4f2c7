"""The floor: what Temporal itself costs on the same server, with no agent logic.

`FloorWorkflow` runs `turns` turns of two no-op activities (a "model" one that
may sleep like a model, then a "tool" one): the same 2xturns activities as an
AgentWorkflow run of `turns` model calls (describe_agent + turns model calls +
turns-1 tool calls), with tiny payloads, no state, no search attributes.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

TIMEOUT = timedelta(seconds=30)


@dataclass
class FloorInput:
    turns: int
    model_delay: float = 0.0
    """Seconds the "model" activity sleeps (the scripted model's latency)."""
    local_tool: bool = False
    """Run the "tool" activity as a local activity (the option measured for fast tools)."""


@activity.defn
async def floor_model(delay: float) -> str:
    """A model call that does nothing but wait."""
    if delay:
        await asyncio.sleep(delay)
    return "reply"


@activity.defn
async def floor_tool(text: str) -> str:
    """A tool call that does nothing."""
    return text


@workflow.defn
class FloorWorkflow:
    """Two no-op activities per turn, nothing else."""

    @workflow.run
    async def run(self, floor: FloorInput) -> int:
        for turn in range(floor.turns):
            await workflow.execute_activity(
                floor_model, floor.model_delay, start_to_close_timeout=TIMEOUT
            )
            if floor.local_tool:
                await workflow.execute_local_activity(
                    floor_tool, f"turn {turn}", start_to_close_timeout=TIMEOUT
                )
            else:
                await workflow.execute_activity(
                    floor_tool, f"turn {turn}", start_to_close_timeout=TIMEOUT
                )
        return floor.turns


def floor_worker(client: Client, task_queue: str, **options: object) -> Worker:
    """A worker for the floor, with the same options as the agent worker it is compared to."""
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[FloorWorkflow],
        activities=[floor_model, floor_tool],
        **options,
    )


async def _serve() -> None:
    """`python -m bench.floor --task-queue Q [--metrics-port PORT]`: a floor worker in its
    own process (TEMPORAL_ADDRESS), to compare its CPU with `python worker.py`'s; Temporal's
    metrics served as worker.py serves them."""
    import argparse
    import os
    import signal

    from durable_agents.activities import telemetry
    from temporalio.runtime import Runtime, TelemetryConfig

    parser = argparse.ArgumentParser()
    parser.add_argument("--task-queue", required=True)
    parser.add_argument("--metrics-port", default=None)
    args, _ = parser.parse_known_args()
    runtime = (
        telemetry.prometheus_runtime(args.metrics_port)
        if args.metrics_port
        else Runtime(telemetry=TelemetryConfig())
    )
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"], runtime=runtime)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with floor_worker(client, args.task_queue):
        print("worker: serving agents: floor", flush=True)
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(_serve())
