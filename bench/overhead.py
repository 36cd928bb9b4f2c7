"""1. Per-turn overhead and 2. parallel tools: `python -m bench.overhead [--quick]`.

A run of N turns (N model calls, one `echo` tool call after each but the last)
through AgentWorkflow on `worker.build_worker`'s defaults, against (a) the same
loop in-process with no durability (`client.local_run.run_locally`, the same
`call_model`/`run_tool` code), (b) the floor (`bench.floor`: two no-op
activities per turn) and (c) AgentWorkflow on workers with other options
(VARIANTS). All of them run in every repetition, one after another, in an order
that rotates between repetitions, so that machine noise hits them alike; every
ratio is the median of the ratios within a repetition.

Eager activity dispatch is read from the SDK's own metric, not assumed: every
worker here reports `temporal_activity_task_received{eager}` into a buffer.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client.local_run import run_locally
from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import contract, loop
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.state import ToolResult
from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.worker import (
    PollerBehaviorAutoscaling,
    PollerBehaviorSimpleMaximum,
)

from bench import agents, common, report, report_runtime
from bench.floor import FloorInput, FloorWorkflow, floor_worker
from durable_agents.testing import Call

OURS, LOCAL, FLOOR = report.OURS, report.LOCAL, report.FLOOR
TASK_RECEIVED = "temporal_activity_task_received"


@dataclass(frozen=True)
class Variant:
    """AgentWorkflow (or `workflow`) on a worker built with `options` (`common.tuned`),
    running `agent`."""

    options: dict[str, object]
    workflow: str = contract.WORKFLOW_TYPE
    agent: str = "bench"


VARIANTS: dict[str, Variant] = {
    "no sticky cache (`max_cached_workflows=0`)": Variant({"max_cached_workflows": 0}),
    "20 workflow + 20 activity task pollers (default 5 + 5)": Variant(
        {
            "workflow_task_poller_behavior": PollerBehaviorSimpleMaximum(20),
            "activity_task_poller_behavior": PollerBehaviorSimpleMaximum(20),
        }
    ),
    "autoscaling pollers (`PollerBehaviorAutoscaling()`)": Variant(
        {
            "workflow_task_poller_behavior": PollerBehaviorAutoscaling(),
            "activity_task_poller_behavior": PollerBehaviorAutoscaling(),
        }
    ),
    "`nonsticky_to_sticky_poll_ratio=1` (default 0.2)": Variant(
        {"nonsticky_to_sticky_poll_ratio": 1.0}
    ),
    "eager activities off (`disable_eager_activity_execution=True`)": Variant(
        {"disable_eager_activity_execution": True}
    ),
    "tool as a local activity (`@tool(local=True)`)": Variant({}, agent="bench_local"),
}


def _lists() -> collections.defaultdict[str, list[float]]:
    return collections.defaultdict(list)


@dataclass
class Timings:
    """Per repetition and kind of run (OURS, LOCAL, FLOOR or a VARIANTS label): wall ms
    per turn, CPU ms per turn; activity tasks received eagerly / in all, by kind."""

    wall: dict[str, list[float]] = field(default_factory=_lists)
    server_cpu: dict[str, list[float]] = field(default_factory=_lists)
    process_cpu: dict[str, list[float]] = field(default_factory=_lists)
    eager: dict[str, list[int]] = field(
        default_factory=lambda: collections.defaultdict(lambda: [0, 0])
    )


def echo_calls(turn: int) -> tuple[Call, ...]:
    return (Call("echo", {"text": f"turn {turn}"}),)


async def metered_client(target: str) -> tuple[Client, MetricBuffer]:
    """A client (worker.py's converter) whose workers report their metrics to a buffer."""
    buffer = MetricBuffer(100_000)
    runtime = Runtime(telemetry=TelemetryConfig(metrics=buffer))
    client = await Client.connect(target, data_converter=common.converter(), runtime=runtime)
    return client, buffer


def count_eager(out: Timings, buffer: MetricBuffer, queues: dict[str, str]) -> None:
    """Add the activity tasks received since the last call, by kind of run."""
    kinds = {queue: kind for kind, queue in queues.items()}
    for update in buffer.retrieve_updates():
        kind = kinds.get(str(update.attributes.get("task_queue")))
        if update.metric.name == TASK_RECEIVED and kind is not None:
            eager = str(update.attributes.get("eager")).lower() == "true"
            out.eager[kind][0] += update.value if eager else 0
            out.eager[kind][1] += update.value


async def measure(
    client: Client,
    buffer: MetricBuffer,
    *,
    turns: int,
    delay: float,
    reps: int,
    variants: dict[str, Variant] | None = None,
) -> Timings:
    """Repetitions (after one warm-up) of every kind of run, in a rotating order."""
    variants = variants or {}
    out = Timings()
    server = common.dev_server_pid()
    responder = common.model_turns(turns, echo_calls, delay=delay)
    queues = {kind: common.task_queue("overhead") for kind in (OURS, FLOOR, *variants)}
    with common.scripted_model(responder) as model:
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(common.agent_worker(client, model, queues[OURS]))
            await stack.enter_async_context(floor_worker(client, queues[FLOOR]))
            for label, variant in variants.items():
                worker = common.agent_worker(client, model, queues[label], variant.options)
                await stack.enter_async_context(worker)
            kinds: dict[str, Callable[[], Awaitable[object]]] = {
                OURS: run_of(client, queues[OURS], turns, contract.WORKFLOW_TYPE),
                LOCAL: lambda: local_run(model, turns),
                FLOOR: lambda: floor_run(client, queues[FLOOR], turns, delay),
            }
            for label, variant in variants.items():
                kinds[label] = run_of(client, queues[label], turns, variant.workflow, variant.agent)
            order = list(kinds)
            buffer.retrieve_updates()  # drop what earlier measurements left
            for rep in range(reps + 1):
                shift = rep % len(order)
                for kind in order[shift:] + order[:shift]:
                    cpu = common.cpu_seconds(server) if server else 0.0
                    process, began = time.process_time(), time.perf_counter()
                    await kinds[kind]()
                    if rep == 0:
                        continue  # warm-up: imports, sandbox module cache, connections
                    out.wall[kind].append((time.perf_counter() - began) * 1000 / turns)
                    out.process_cpu[kind].append((time.process_time() - process) * 1000 / turns)
                    server_cpu = (common.cpu_seconds(server) - cpu) if server else float("nan")
                    out.server_cpu[kind].append(server_cpu * 1000 / turns)
                count_eager(out, buffer, queues)
    return out


def run_of(
    client: Client, queue: str, turns: int, workflow: str, agent: str = "bench"
) -> Callable[[], Awaitable[object]]:
    return lambda: agent_run(client, queue, turns, workflow, agent)


async def agent_run(
    client: Client, queue: str, turns: int, workflow: str, agent: str = "bench"
) -> None:
    handle = await common.start_run(client, agent, queue, workflow=workflow)
    result = await handle.result()
    assert result.turn == turns, result


async def floor_run(client: Client, queue: str, turns: int, delay: float) -> None:
    await client.execute_workflow(
        FloorWorkflow.run,
        FloorInput(turns=turns, model_delay=delay),
        id=f"{queue}-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
    )


async def local_run(model: AsyncOpenAI, turns: int) -> None:
    """The same run through `run_locally` (no Temporal)."""
    spec = agents.bench.spec()
    now = datetime.now(UTC)
    state = loop.new_state(spec, AgentInput(agent="bench", input="go"), run_id="local", now=now)
    done = await run_locally(
        state,
        model=ModelActivities(model).call_model,
        registry=AgentRegistry([agents.bench]),
        max_steps=4 * turns,
    )
    assert done.turn == turns and done.status.value == "completed", done.status


async def parallel(client: Client, *, reps: int, tools: int = 8, ms: int = 200) -> dict:
    """A run whose one tool turn asks for `tools` naps of `ms`, against one nap."""

    def naps(count: int):
        return lambda turn: tuple(Call("nap", {"ms": ms}) for _ in range(count))

    out: dict = {"span": [], "many": [], "one": [], "tools": tools, "ms": ms}
    for count, key in ((tools, "many"), (1, "one")):
        with common.scripted_model(common.model_turns(2, naps(count))) as model:
            queue = common.task_queue("parallel")
            async with common.agent_worker(client, model, queue):
                for rep in range(reps + 1):
                    began = time.perf_counter()
                    handle = await common.start_run(client, "bench", queue)
                    await handle.result()
                    wall = (time.perf_counter() - began) * 1000
                    if rep == 0:
                        continue
                    out[key].append(wall)
                    if key == "many":
                        state = await read_state(querying(handle))
                        stamps = [
                            [float(x) for x in i.content.split()]
                            for i in state.items
                            if isinstance(i, ToolResult)
                        ]
                        assert len(stamps) == tools, state.items
                        span = max(e for _, e in stamps) - min(b for b, _ in stamps)
                        out["span"].append(span * 1000)
    return out


async def section(client: Client, *, quick: bool) -> report.Section:
    """Measurements 1 and 2; in a full run, VARIANTS beside the zero-latency runs."""
    turns = 10
    metered, buffer = await metered_client(client.service_client.config.target_host)
    timings = {}
    for delay, reps in ((0.0, 3 if quick else 7), (0.3, 2 if quick else 3)):
        label = f"{delay * 1000:.0f} ms"
        variants = VARIANTS if delay == 0 and not quick else None
        print(f"overhead: {turns} turns, model latency {label}", flush=True)
        if variants:
            print(f"overhead: with {len(variants)} worker options interleaved", flush=True)
        timings[label] = await measure(
            metered, buffer, turns=turns, delay=delay, reps=reps, variants=variants
        )
    print("parallel tools: 8 x 200 ms", flush=True)
    par = await parallel(client, reps=2 if quick else 5)
    return report_runtime.overhead_section(turns, timings, par)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="1. Per-turn overhead, 2. parallel tools")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, no options")
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        print(report.alone(await section(env.client, quick=args.quick)))


if __name__ == "__main__":
    asyncio.run(main())
