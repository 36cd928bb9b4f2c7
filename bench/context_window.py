"""What context management does over a long session (issue 20's figures):
`python -m bench.context_window`.

A session of 150 user messages, each answered with a tool call returning 2,400
characters and a short reply (300 model calls, three workflow runs), against a
scripted model with a window of 3,000 tokens (its own estimate, `request_tokens`),
once per strategy (`stubbing`, `summarizing`, both with `max_input_tokens=2500`).
Printed: the tokens each model call sent, per 50 calls (first, median, largest: flat
means the window holds), the total sent, the total the same calls would have sent
without compaction (the whole conversation each time, by the same estimate; that
session could not run at all past the window), and the compactions.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from durable_agents.activities.chat_completions import to_messages, to_tools
from durable_agents.workflows.context import SUMMARY_INSTRUCTIONS
from durable_agents.workflows.payloads import ToolSchema
from durable_agents.workflows.run_items import AssistantMessage, Compaction
from durable_agents.workflows.state import RunState, RunStatus
from openai import AsyncOpenAI
from temporalio.client import Client

from bench import common
from durable_agents import AgentClient
from durable_agents.testing import Call, Reply, ScriptedModelServer, request_tokens

EXCHANGES = 150
WINDOW = 3_000


def responder(body: dict) -> Reply:
    messages = body["messages"]
    tokens = request_tokens(body)
    if messages[0]["content"] == SUMMARY_INSTRUCTIONS:
        return Reply(
            content=f"summary of {len(messages[-1]['content'])} characters", usage=(tokens, 20)
        )
    if messages[-1]["role"] == "user":
        part = sum(m["role"] == "user" for m in messages)
        return Reply(tool_calls=(Call("dump", {"part": part}),), usage=(tokens, 15))
    return Reply(content="noted", usage=(tokens, 5))


async def session(client: Client, agent: str) -> tuple[RunState, list[int], float]:
    with ScriptedModelServer(responder, context_window=WINDOW) as model:
        model_client = AsyncOpenAI(base_url=model.base_url, api_key="x", max_retries=0)
        queue = common.task_queue(agent)
        async with common.agent_worker(client, model_client, queue):
            agents = AgentClient(client, task_queue=queue)
            began = time.perf_counter()
            run = await agents.start(agent, "message 0", session=True)
            for n in range(1, EXCHANGES + 1):
                while (await agents.status(run.id)).status is not RunStatus.AWAITING_INPUT:
                    await asyncio.sleep(0.02)
                if n < EXCHANGES:
                    await agents.message(run.id, f"message {n}")
            await agents.end_session(run.id)
            await agents.result(run.id)
            elapsed = time.perf_counter() - began
            state = await agents.state(run.id)
        assert not model.errors, model.errors
        return state, list(model.sizes), elapsed


def uncompacted(state: RunState) -> list[int]:
    """What each model call of the run would have sent without compaction."""
    tools = [
        ToolSchema(name=t.name, description=t.description, parameters=t.parameters)
        for t in state.agent.tools
    ]
    sizes = []
    for index, item in enumerate(state.items):
        if isinstance(item, AssistantMessage):
            messages = to_messages(state.agent.instructions, state.items[:index])
            sizes.append(request_tokens({"messages": messages, "tools": to_tools(tools)}))
    return sizes


async def main() -> None:
    async with common.dev_server(common.converter()) as env:
        for agent in ("stubbing", "summarizing"):
            state, sizes, elapsed = await session(env.client, agent)
            calls = sizes
            full = uncompacted(state)
            made = [i for i in state.items if isinstance(i, Compaction)]
            print(
                f"{agent}: {len(calls)} model calls ({state.turn} turns) in {elapsed:.1f} s, "
                f"{len(made)} compactions"
            )
            for start in range(0, len(calls), 50):
                part = calls[start : start + 50]
                median = statistics.median(part)
                print(
                    f"  calls {start + 1:>3}-{start + len(part):<3} tokens sent: "
                    f"first {part[0]:,}, median {median:,.0f}, largest {max(part):,}"
                )
            print(
                f"  total sent {sum(calls):,} tokens; without compaction {sum(full):,} "
                f"(largest call {max(full):,}, {max(full) / WINDOW:.0f}x the window)"
            )


if __name__ == "__main__":
    asyncio.run(main())
