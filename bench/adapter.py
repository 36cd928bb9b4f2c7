"""What the OpenAI Agents SDK adapter adds per turn: `python -m bench.adapter`.

The same agent written natively and written with the SDK, converted by `from_sdk_agent`
(`bench.adapter_agents`), each run for `TURNS` turns (a no-op `echo` tool call after
each model reply but the last) on an in-process worker against the dev server and the
scripted model. Measured: history bytes and events per run (they do not vary between
runs), and the CPU seconds of this process (worker, client and scripted model: the same
for both, so the difference is the adapter's) per run, `REPEATS` runs each, taking
turns at going first; then the CPU of one `run_tool` activity call of each tool, alone
(`ActivityEnvironment`, `CALLS` calls), which isolates the adapter's per-call cost.
CPU time, not wall time: the machine is shared, and CPU time is what a loaded machine
changes least.
"""

from __future__ import annotations

import asyncio
import json
import time

from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.run_tool import ToolActivities
from durable_agents.workflows.payloads import ToolRequest
from temporalio.testing import ActivityEnvironment

from bench import common
from bench.adapter_agents import native_echo, openai_echo
from durable_agents.testing import Call

TURNS = 20
REPEATS = 7
CALLS = 500
AGENTS = ("native_echo", "openai_echo")


async def one_run(client, model, agent: str) -> tuple[float, int, int]:
    """CPU seconds, history bytes and events of one run of `agent`."""
    queue = common.task_queue(agent)
    worker = common.tuned({})(
        client,
        registry=AgentRegistry([native_echo, openai_echo]),
        model_client=model,
        task_queue=queue,
    )
    async with worker:
        began = time.process_time()
        handle = await common.start_run(client, agent, queue)
        await handle.result()
        used = time.process_time() - began
        history = await handle.fetch_history()
    return used, sum(e.ByteSize() for e in history.events), len(history.events)


async def tool_cpu(agent: str) -> float:
    """CPU microseconds of one `run_tool` call of `agent`'s `echo`, alone."""
    tools = ToolActivities(AgentRegistry([native_echo, openai_echo]))
    env = ActivityEnvironment()
    request = ToolRequest(
        run_id="bench",
        agent=agent,
        tool="echo",
        call_id="c",
        arguments=json.dumps({"text": "hi"}),
        idempotency_key="bench/c",
    )
    for _ in range(20):  # warm up
        await env.run(tools.run_tool, request)
    began = time.process_time()
    for _ in range(CALLS):
        outcome = await env.run(tools.run_tool, request)
    assert outcome.content == "hi" and not outcome.is_error, outcome
    return (time.process_time() - began) / CALLS * 1e6


async def main() -> None:
    responder = common.model_turns(TURNS, lambda turn: (Call("echo", {"text": f"t{turn}"}),))
    cpu: dict[str, list[float]] = {a: [] for a in AGENTS}
    sizes: dict[str, tuple[int, int]] = {}
    async with common.dev_server(common.converter()) as env:
        with common.scripted_model(responder) as model:
            for repeat in range(REPEATS):
                order = AGENTS if repeat % 2 == 0 else AGENTS[::-1]
                for agent in order:
                    used, size, events = await one_run(env.client, model, agent)
                    cpu[agent].append(used)
                    sizes[agent] = (size, events)
    micro = {agent: await tool_cpu(agent) for agent in AGENTS}
    print(f"a run of {TURNS} turns ({TURNS - 1} tool calls), {REPEATS} runs each")
    for agent in AGENTS:
        size, events = sizes[agent]
        print(
            f"  {agent:<12} history {size:>7,} bytes / {events} events;"
            f" CPU median {common.median(cpu[agent]) * 1000:,.0f} ms per run"
            f" ({common.median(cpu[agent]) / TURNS * 1000:,.1f} ms per turn)"
        )
    extra_bytes = sizes["openai_echo"][0] - sizes["native_echo"][0]
    extra_cpu = common.median(cpu["openai_echo"]) - common.median(cpu["native_echo"])
    print(
        f"  the adapter adds {extra_bytes:+,} history bytes per run "
        f"({extra_bytes / TURNS:+,.0f} per turn), {extra_cpu * 1000 / TURNS:+,.2f} ms CPU per turn"
    )
    print(f"one run_tool call alone, {CALLS} calls: CPU per call")
    for agent in AGENTS:
        print(f"  {agent:<12} {micro[agent]:,.0f} µs")


if __name__ == "__main__":
    asyncio.run(main())
