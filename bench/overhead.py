"""1. Per-turn overhead and 2. parallel tools: `python -m bench.overhead [--quick]`.

A run of N turns (N model calls, one `echo` tool call after each but the last)
through AgentWorkflow, against (a) the same loop in-process with no durability
(`client.local_run.run_locally`, the same `call_model`/`run_tool` code) and
(b) the floor (`bench.floor`: two no-op activities per turn). Repetitions are
interleaved (agent, local, floor, agent, ...) so that machine noise hits all
three alike; the figures are medians.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner

from activities.model_api import ModelActivities
from activities.registry import AgentRegistry
from bench import agents, common, report
from bench.floor import FloorInput, FloorWorkflow, floor_worker
from bench.local_tool import WORKFLOW_TYPE as LOCAL_TOOL_AGENT
from bench.local_tool import LocalToolAgentWorkflow
from bench.tuned_worker import PASSTHROUGH_WORKFLOWS
from client.local_run import run_locally
from examples.scripted_openai import Call
from workflows import contract, loop
from workflows.payloads import AgentInput
from workflows.state import RunState, ToolResult


@dataclass
class Timings:
    """ms per turn of each repetition, and the dev server's CPU ms per turn."""

    agent: list[float] = field(default_factory=list)
    local: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    agent_server_cpu: list[float] = field(default_factory=list)
    floor_server_cpu: list[float] = field(default_factory=list)


def echo_calls(turn: int) -> tuple[Call, ...]:
    return (Call("echo", {"text": f"turn {turn}"}),)


async def measure(
    client: Client,
    *,
    turns: int,
    delay: float,
    reps: int,
    local: bool = True,
    floor_local_tool: bool = False,
    local_tool_agent: bool = False,
    **options: object,
) -> Timings:
    """Interleaved repetitions (after one warm-up each) of agent, local and floor runs."""
    out = Timings()
    server = common.dev_server_pid()
    with common.scripted_model(common.model_turns(turns, echo_calls, delay=delay)) as model:
        agent_q, floor_q = common.task_queue("agent"), common.task_queue("floor")
        extra = (LocalToolAgentWorkflow,) if local_tool_agent else ()
        kind = LOCAL_TOOL_AGENT if local_tool_agent else contract.WORKFLOW_TYPE
        async with (
            common.agent_worker(client, model, agent_q, extra_workflows=extra, **options),
            floor_worker(client, floor_q, **options),
        ):
            for rep in range(reps + 1):
                cpu = common.cpu_seconds(server) if server else 0.0
                began = time.perf_counter()
                handle = await common.start_run(client, "bench", agent_q, workflow=kind)
                result = await handle.result()
                wall = time.perf_counter() - began
                assert result.turn == turns, result
                agent_cpu = (common.cpu_seconds(server) - cpu) if server else 0.0
                local_wall = await local_run(model, turns) if local else float("nan")
                cpu = common.cpu_seconds(server) if server else 0.0
                began = time.perf_counter()
                await client.execute_workflow(
                    FloorWorkflow.run,
                    FloorInput(turns=turns, model_delay=delay, local_tool=floor_local_tool),
                    id=f"{floor_q}-{uuid.uuid4().hex[:8]}",
                    task_queue=floor_q,
                )
                floor_wall = time.perf_counter() - began
                floor_cpu = (common.cpu_seconds(server) - cpu) if server else 0.0
                if rep == 0:
                    continue  # warm-up: imports, sandbox module cache, connections
                out.agent.append(wall * 1000 / turns)
                out.local.append(local_wall * 1000 / turns)
                out.floor.append(floor_wall * 1000 / turns)
                out.agent_server_cpu.append(agent_cpu * 1000 / turns)
                out.floor_server_cpu.append(floor_cpu * 1000 / turns)
    return out


async def local_run(model: AsyncOpenAI, turns: int) -> float:
    """Wall seconds of the same run through `run_locally` (no Temporal)."""
    spec = agents.bench.spec()
    now = datetime.now(UTC)
    state = loop.new_state(spec, AgentInput(agent="bench", input="go"), run_id="local", now=now)
    began = time.perf_counter()
    done = await run_locally(
        state,
        model=ModelActivities(model).call_model,
        registry=AgentRegistry([agents.bench]),
        max_steps=4 * turns,
    )
    wall = time.perf_counter() - began
    assert done.turn == turns and done.status.value == "completed", done.status
    return wall


async def parallel(client: Client, *, reps: int, tools: int = 8, ms: int = 200) -> dict:
    """A run whose one tool turn asks for `tools` naps of `ms`, against one nap."""

    def naps(count: int):
        return lambda turn: tuple(Call("nap", {"ms": ms}) for _ in range(count))

    out: dict[str, list[float]] = {"span": [], "many": [], "one": []}
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
                        state = await handle.query(contract.QUERY_GET_STATE, result_type=RunState)
                        stamps = [
                            [float(x) for x in i.content.split()]
                            for i in state.items
                            if isinstance(i, ToolResult)
                        ]
                        assert len(stamps) == tools, state.items
                        span = max(e for _, e in stamps) - min(b for b, _ in stamps)
                        out["span"].append(span * 1000)
    return out


OPTIONS: dict[str, dict[str, object]] = {
    "sandbox on, `workflows` passed through": {"workflow_runner": PASSTHROUGH_WORKFLOWS},
    "sandbox off (UnsandboxedWorkflowRunner)": {"workflow_runner": UnsandboxedWorkflowRunner()},
    "max_cached_workflows=0 (no sticky cache)": {"max_cached_workflows": 0},
}


async def section(client: Client, *, quick: bool) -> str:
    """The markdown of measurements 1 and 2."""
    turns = 10
    reps = 3 if quick else 7
    slow_reps = 2 if quick else 3
    rows = []
    for delay in (0.0, 0.3):
        print(f"overhead: {turns} turns, model latency {delay * 1000:.0f} ms", flush=True)
        t = await measure(client, turns=turns, delay=delay, reps=reps if not delay else slow_reps)
        rows.append(report.overhead_row(f"{delay * 1000:.0f} ms", t))
    options = []
    if not quick:
        for label, kwargs in OPTIONS.items():
            print(f"overhead option: {label}", flush=True)
            t = await measure(client, turns=turns, delay=0.0, reps=reps, local=False, **kwargs)
            options.append(report.option_row(label, t))
        print("overhead option: run_tool as a local activity", flush=True)
        t = await measure(
            client, turns=turns, delay=0.0, reps=reps, floor_local_tool=True, local_tool_agent=True
        )
        options.append(
            report.option_row("tool as a local activity (both; ours: `bench/local_tool.py`)", t)
        )
        print("overhead option: eager activity dispatch (second dev server)", flush=True)
        async with common.dev_server(
            common.converter(), dynamic_config=(common.EAGER_ACTIVITIES,)
        ) as eager:
            t = await measure(eager.client, turns=turns, delay=0.0, reps=reps, local=False)
        options.append(report.option_row("eager activities on (server dynamic config)", t))
    print("parallel tools: 8 x 200 ms", flush=True)
    par = await parallel(client, reps=2 if quick else 5)
    return report.overhead_section(turns, rows, options, par)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        print(await section(env.client, quick=args.quick))


if __name__ == "__main__":
    asyncio.run(main())
