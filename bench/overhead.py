"""1. Per-turn overhead and 2. parallel tools: `python -m bench.overhead [--quick]`.

A run of N turns (N model calls, one `echo` tool call after each but the last)
through AgentWorkflow on `python worker.py` (its defaults), against (a) the same
loop in-process with no durability (`client.local_run.run_locally`, the same
`call_model`/`run_tool` code), (b) the floor (`bench.floor`: two no-op
activities per turn) and (c) AgentWorkflow on workers with other options
(VARIANTS, `bench.tuned_worker`). Every worker is a process of its own, all
serving throughout, so that no kind of run shares an event loop or a core
runtime with another, nor with the client and the scripted model (this
process). All kinds run in every repetition, one after another, in an order
that rotates between repetitions, so that machine noise hits them alike; ours and
the floor always run back to back, taking turns at going first (`schedule`), since
their ratio is the one judged; every ratio is the median of the ratios within a
repetition.

Eager activity dispatch is read from each worker's own metrics, not assumed:
`temporal_activity_task_received{eager}` from the Prometheus endpoint that
`--metrics-port` serves.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import sys
import time
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client.local_run import run_locally
from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import contract, loop
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.run_items import ToolResult
from openai import AsyncOpenAI
from temporalio.client import Client

from bench import agents, common, report, report_runtime, tuned_worker
from bench.floor import FloorInput, FloorWorkflow
from bench.worker_process import worker_process
from durable_agents.testing import Call, ScriptedModelServer

OURS, LOCAL, FLOOR = report.OURS, report.LOCAL, report.FLOOR
TASK_RECEIVED = "temporal_activity_task_received"


@dataclass(frozen=True)
class Variant:
    """AgentWorkflow (or `workflow`) running `agent`, on a worker process with the
    `bench.tuned_worker` option `option` (None: worker.py's defaults)."""

    option: str | None = None
    workflow: str = contract.WORKFLOW_TYPE
    agent: str = "bench"


VARIANTS: dict[str, Variant] = {
    "no sticky cache (`max_cached_workflows=0`)": Variant("cache-0"),
    "20 workflow + 20 activity task pollers (default 5 + 5)": Variant("pollers-20"),
    "autoscaling pollers (`PollerBehaviorAutoscaling()`)": Variant("pollers-autoscaling"),
    "`nonsticky_to_sticky_poll_ratio=1` (default 0.2)": Variant("sticky-ratio-1"),
    "eager activities off (`disable_eager_activity_execution=True`)": Variant("eager-off"),
    "tool as a local activity (`@tool(local=True)`)": Variant(agent="bench_local"),
}


def _lists() -> collections.defaultdict[str, list[float]]:
    return collections.defaultdict(list)


@dataclass
class Timings:
    """Per repetition and kind of run (OURS, LOCAL, FLOOR or a VARIANTS label): wall ms
    per turn, CPU ms per turn (the dev server's; the kind's worker process's, this
    process's for LOCAL); activity tasks received eagerly / in all, by kind."""

    wall: dict[str, list[float]] = field(default_factory=_lists)
    server_cpu: dict[str, list[float]] = field(default_factory=_lists)
    process_cpu: dict[str, list[float]] = field(default_factory=_lists)
    eager: dict[str, list[int]] = field(
        default_factory=lambda: collections.defaultdict(lambda: [0, 0])
    )


def echo_calls(turn: int) -> tuple[Call, ...]:
    return (Call("echo", {"text": f"turn {turn}"}),)


def activity_tasks(metrics: str) -> tuple[int, int]:
    """(received eagerly, received in all) activity tasks, from Prometheus text."""
    eager = total = 0
    for line in metrics.splitlines():
        name, _, rest = line.partition("{")
        if name not in (TASK_RECEIVED, f"{TASK_RECEIVED}_total"):
            continue
        labels, _, value = rest.rpartition("}")
        count = int(float(value.strip()))
        total += count
        eager += count if 'eager="true"' in labels else 0
    return eager, total


def scrape(port: int) -> str:
    """The Prometheus text a worker serves on 127.0.0.1:`port` (`--metrics-port`)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        return response.read().decode()


Served = dict[str, tuple[str, int, int]]
"""By kind of run: (task queue, worker pid, metrics port)."""


@contextlib.contextmanager
def workers(target: str, base_url: str, variants: dict[str, Variant]) -> Iterator[Served]:
    """A worker process per kind of run (OURS, FLOOR, each variant) until the block ends."""
    floor_command = [sys.executable, "-m", "bench.floor"]
    commands = {OURS: None, FLOOR: floor_command}
    for label, variant in variants.items():
        option = variant.option
        commands[label] = tuned_worker.command(option) if option else None
    with contextlib.ExitStack() as stack:
        out: Served = {}
        for kind, command in commands.items():
            queue, port = common.task_queue("overhead"), common.free_port()
            extra = ["--metrics-port", str(port)]
            proc = worker_process(target, base_url, queue, command=command, extra=extra)
            out[kind] = (queue, stack.enter_context(proc).pid, port)
        yield out


async def measure(
    client: Client,
    *,
    turns: int,
    delay: float,
    reps: int,
    variants: dict[str, Variant] | None = None,
) -> Timings:
    """Repetitions (after one warm-up) of every kind of run, in a rotating order
    (`schedule`)."""
    variants = variants or {}
    out = Timings()
    server = common.dev_server_pid()
    target = client.service_client.config.target_host
    responder = common.model_turns(turns, echo_calls, delay=delay)
    with (
        ScriptedModelServer(responder) as model_server,
        workers(target, model_server.base_url, variants) as served,
    ):
        model = AsyncOpenAI(base_url=model_server.base_url, api_key="x", max_retries=0)
        kinds: dict[str, Callable[[], Awaitable[object]]] = {
            OURS: run_of(client, served[OURS][0], turns, contract.WORKFLOW_TYPE),
            LOCAL: lambda: local_run(model, turns),
            FLOOR: lambda: floor_run(client, served[FLOOR][0], turns, delay),
        }
        for label, variant in variants.items():
            queue = served[label][0]
            kinds[label] = run_of(client, queue, turns, variant.workflow, variant.agent)
        counted: dict[str, tuple[int, int]] = {}
        for rep in range(reps + 1):
            for kind in schedule(list(kinds), rep):
                pid = served[kind][1] if kind in served else None
                cpu = common.cpu_seconds(server) if server else 0.0
                began_cpu = common.cpu_seconds(pid) if pid else time.process_time()
                began = time.perf_counter()
                await kinds[kind]()
                if rep == 0:
                    continue  # warm-up: imports, caches, connections
                out.wall[kind].append((time.perf_counter() - began) * 1000 / turns)
                ended_cpu = common.cpu_seconds(pid) if pid else time.process_time()
                out.process_cpu[kind].append((ended_cpu - began_cpu) * 1000 / turns)
                server_cpu = (common.cpu_seconds(server) - cpu) if server else float("nan")
                out.server_cpu[kind].append(server_cpu * 1000 / turns)
            if rep == 0:  # count from here: the warm-up's tasks are not measured
                counted = {k: activity_tasks(scrape(port)) for k, (_, _, port) in served.items()}
        for kind, (_, _, port) in served.items():
            eager, received = activity_tasks(scrape(port))
            out.eager[kind] = [eager - counted[kind][0], received - counted[kind][1]]
            if reps and not out.eager[kind][1]:  # every kind's runs have activity tasks
                raise RuntimeError(f"no activity task counted for {kind!r}: metrics unread?")
    return out


def schedule(kinds: list[str], rep: int) -> list[str]:
    """The order of repetition `rep`: `kinds` rotated by one a repetition, ours and the
    floor kept together as one (ours first in even repetitions, the floor in odd),
    so the judged ratio compares runs made moments apart (the floor's own time swings
    by a third within a run on this machine)."""
    pair = [OURS, FLOOR] if rep % 2 == 0 else [FLOOR, OURS]
    units = [pair] + [[k] for k in kinds if k not in (OURS, FLOOR)]
    shift = rep % len(units)
    return [kind for unit in units[shift:] + units[:shift] for kind in unit]


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
    timings = {}
    for delay, reps in ((0.0, 3 if quick else 7), (0.3, 2 if quick else 3)):
        label = f"{delay * 1000:.0f} ms"
        variants = VARIANTS if delay == 0 and not quick else None
        print(f"overhead: {turns} turns, model latency {label}", flush=True)
        if variants:
            print(f"overhead: with {len(variants)} worker options interleaved", flush=True)
        timings[label] = await measure(
            client, turns=turns, delay=delay, reps=reps, variants=variants
        )
    plain = None
    if not quick:
        print(f"overhead: {turns} turns, 0 ms, on a dev server with its own defaults", flush=True)
        async with common.dev_server(common.converter(), server_defaults=True) as env:
            plain = await measure(env.client, turns=turns, delay=0.0, reps=5)
    print("parallel tools: 8 x 200 ms", flush=True)
    par = await parallel(client, reps=2 if quick else 5)
    return report_runtime.overhead_section(turns, timings, par, plain)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="1. Per-turn overhead, 2. parallel tools")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, no options")
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        print(report.alone(await section(env.client, quick=args.quick)))


if __name__ == "__main__":
    asyncio.run(main())
