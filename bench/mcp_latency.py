"""MCP tools: `python -m bench.mcp_latency [--turns N] [--rounds R]`.

One agent, one tool call per turn (the scripted model answers at once), the same
work three ways: a `@tool` function, the tests' MCP server's read-only tool over
stdio, and over streamable HTTP. Reports the median wall time of a whole tool
turn (model call + tool call, both activities) per way, and the ratio to the
`@tool` turn, median of R runs of N turns each (one dev server, one worker,
interleaved so the machine's noise falls on all three alike).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from pathlib import Path

from durable_agents.activities.registry import AgentRegistry

from bench import common
from durable_agents import Agent, MCPServer, ToolContext, tool
from durable_agents.mcp_connections import MCPConnection
from durable_agents.testing import Call
from durable_agents.worker import build_worker

ROOT = Path(__file__).resolve().parents[1]


@tool
def lookup_ticket(ticket_id: str, ctx: ToolContext) -> str:
    """The same work as the MCP server's tool."""
    return f"ticket {ticket_id}: printer on fire, status open"


local = Agent(name="local", instructions="", model="m", tools=[lookup_ticket], max_turns=1000)
stdio = Agent(
    name="stdio", instructions="", model="m", max_turns=1000, mcp_servers=[MCPServer(name="stdio")]
)
http = Agent(
    name="http", instructions="", model="m", max_turns=1000, mcp_servers=[MCPServer(name="http")]
)


async def one_run(client, queue: str, agent: str, turns: int) -> float:
    began = time.perf_counter()
    handle = await common.start_run(client, agent, queue)
    await handle.result()
    return (time.perf_counter() - began) * 1000 / turns


async def measure(turns: int, rounds: int) -> dict[str, list[float]]:
    port = common.free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_server", "--http", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        await asyncio.sleep(2)
        respond = common.model_turns(
            turns + 1, lambda t: (Call("lookup_ticket", {"ticket_id": f"T{t}"}),)
        )
        connections = {
            "stdio": MCPConnection(command=(sys.executable, "-m", "tests.support.mcp_server")),
            "http": MCPConnection(url=f"http://127.0.0.1:{port}/mcp"),
        }
        timings: dict[str, list[float]] = {"@tool": [], "MCP stdio": [], "MCP HTTP": []}
        async with common.dev_server(common.converter()) as env:
            with common.scripted_model(respond) as model:
                queue = common.task_queue("mcp")
                worker = build_worker(
                    env.client,
                    registry=AgentRegistry([local, stdio, http]),
                    model_client=model,
                    task_queue=queue,
                    mcp_servers=connections,
                )
                async with worker:
                    for agent in ("local", "stdio", "http"):
                        await one_run(env.client, queue, agent, turns)  # warm up
                    for _ in range(rounds):
                        for agent, name in (
                            ("local", "@tool"),
                            ("stdio", "MCP stdio"),
                            ("http", "MCP HTTP"),
                        ):
                            timings[name].append(await one_run(env.client, queue, agent, turns))
        return timings
    finally:
        server.terminate()
        server.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    timings = asyncio.run(measure(args.turns, args.rounds))
    base = common.median(timings["@tool"])
    print(f"| way | ms per tool turn (median of {args.rounds} runs of {args.turns}) | vs @tool |")
    print("|---|---|---|")
    for name, values in timings.items():
        print(f"| {name} | {common.median(values):.1f} | {common.median(values) / base:.2f}x |")


if __name__ == "__main__":
    main()
