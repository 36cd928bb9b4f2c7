"""Agents as tools: `python -m bench.agent_tools [--runs N]`.

On one dev server and one worker, with the scripted model over HTTP answering at once:
a run whose model calls one tool and then answers, where the tool is a plain `@tool`
(an activity) or another agent called as a tool (`Agent.as_tool`: a child run whose
model answers at once). Reported: wall time per run and its difference (what a child
run adds over an activity), and the caller's history (events, bytes) per run and its
difference (what a child call adds to the caller's history; the child's own history
is its own).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from durable_agents.activities.registry import AgentRegistry
from temporalio.api.enums.v1 import EventType

from bench import common
from durable_agents import Agent, ToolContext, tool
from durable_agents.testing import Call, Reply
from durable_agents.worker import build_worker

ANSWER = "The answer is 42, found after a careful look."


@tool
def look(input: str, ctx: ToolContext) -> str:
    """Look something up (instant)."""
    return ANSWER


helper = Agent(name="helper", instructions="Answer.", model="helper-model")
plain = Agent(name="plain", instructions="", model="caller-model", tools=[look])
delegating = Agent(
    name="delegating", instructions="", model="caller-model", tools=[helper.as_tool(name="look")]
)


def respond(request: dict) -> Reply:
    if request["model"] == "helper-model":
        return Reply(ANSWER)
    if any(m["role"] == "tool" for m in request["messages"]):
        return Reply("done")
    return Reply(tool_calls=(Call("look", {"input": "what is it?"}),))


async def one_run(client, queue: str, agent: str) -> tuple[float, int, int, int]:
    started = time.perf_counter()
    handle = await common.start_run(client, agent, queue)
    await handle.result()
    took = time.perf_counter() - started
    history = await handle.fetch_history()
    children = sum(
        1
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    )
    return took * 1000, len(history.events), sum(e.ByteSize() for e in history.events), children


async def measure(runs: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    with common.scripted_model(respond) as model:
        async with common.dev_server(common.converter()) as env:
            queue = common.task_queue("agent-tools")
            worker = build_worker(
                env.client,
                registry=AgentRegistry([plain, delegating, helper]),
                model_client=model,
                task_queue=queue,
            )
            async with worker:
                for agent in ("plain", "delegating"):  # warm up
                    await one_run(env.client, queue, agent)
                for _ in range(runs):
                    for agent in ("plain", "delegating"):
                        ms, events, size, children = await one_run(env.client, queue, agent)
                        assert children == (1 if agent == "delegating" else 0)
                        found.setdefault(f"{agent} ms", []).append(ms)
                        found.setdefault(f"{agent} events", []).append(events)
                        found.setdefault(f"{agent} bytes", []).append(size)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    found = asyncio.run(measure(args.runs))
    print(f"runs: {args.runs} each, one tool call then an answer (medians)")
    base = {k: common.median(found[f"plain {k}"]) for k in ("ms", "events", "bytes")}
    for agent, what in (("plain", "@tool (activity)"), ("delegating", "agent as tool (child)")):
        ms, events, size = (common.median(found[f"{agent} {k}"]) for k in ("ms", "events", "bytes"))
        print(
            f"  {what:22s}: {ms:6.0f} ms a run (+{ms - base['ms']:.0f}), caller history "
            f"{events:.0f} events (+{events - base['events']:.0f}), {size:.0f} bytes "
            f"(+{size - base['bytes']:.0f})"
        )


if __name__ == "__main__":
    main()
