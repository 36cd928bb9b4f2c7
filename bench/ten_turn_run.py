"""Wall time of N-turn runs through AgentWorkflow on the dev server.

`python -m bench.ten_turn_run [--turns 10] [--runs 5]`: each turn is one model
call (scripted OpenAI-compatible HTTP server, no latency) plus one tool call;
prints the median wall time per run and per turn, and the history size.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid

from openai import AsyncOpenAI
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities import Agent, tool
from activities.registry import AgentRegistry
from examples.scripted_openai import Call, Reply, ScriptedModelServer
from worker import build_worker, temporal_binary
from workflows import contract, search_attributes
from workflows.payloads import AgentInput, AgentResult


@tool
def echo(text: str) -> str:
    """Return the text."""
    return text


BENCH_AGENT = Agent(
    name="bench", instructions="bench", model="scripted", tools=[echo], max_turns=1000
)


def responder_for(turns: int):
    def respond(request: dict) -> Reply:
        done = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if done + 1 >= turns:
            return Reply(content="finished")
        return Reply(tool_calls=(Call("echo", {"text": f"turn {done + 1}"}),))

    return respond


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        search_attributes=search_attributes.ALL,
        dev_server_existing_path=temporal_binary(),
    )
    try:
        with ScriptedModelServer(responder_for(args.turns)) as server:
            model = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
            task_queue = f"bench-{uuid.uuid4().hex[:6]}"
            worker = build_worker(
                env.client,
                registry=AgentRegistry([BENCH_AGENT]),
                model_client=model,
                task_queue=task_queue,
            )
            async with worker:
                walls, handle = [], None
                for _ in range(args.runs + 1):  # the first run warms up
                    began = time.perf_counter()
                    handle = await env.client.start_workflow(
                        contract.WORKFLOW_TYPE,
                        AgentInput(agent="bench", input="go"),
                        id=f"bench-{uuid.uuid4().hex[:8]}",
                        task_queue=task_queue,
                        result_type=AgentResult,
                    )
                    result = await handle.result()
                    walls.append(time.perf_counter() - began)
                    assert result.turn == args.turns, result
                history = await handle.fetch_history()
    finally:
        await env.shutdown()
    median = statistics.median(walls[1:])
    size = len(history.to_json())
    print(f"turns per run:     {args.turns} (model call + tool call each, last turn answers)")
    print(f"runs measured:     {args.runs} (after 1 warm-up)")
    print(f"wall time per run: median {median * 1000:.0f} ms, min {min(walls[1:]) * 1000:.0f} ms")
    print(f"per turn:          {median * 1000 / args.turns:.1f} ms")
    print(f"history:           {len(history.events)} events, {size} bytes of JSON")


if __name__ == "__main__":
    asyncio.run(main())
