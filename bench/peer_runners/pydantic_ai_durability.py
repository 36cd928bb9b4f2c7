"""bench.peers runner: Pydantic AI's Temporal durability (`pydantic-ai-slim[temporal]`),
in its own virtualenv (bench/peer_requirements/pydantic-ai.txt)."""

from __future__ import annotations

import asyncio
import uuid

import protocol
import pydantic_ai_flow as flow
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from pydantic_ai.models import infer_model
from temporalio.client import Client
from temporalio.worker import Worker


def resolve_model() -> None:
    """Resolve the agent's model once, here, before the worker starts, as a worker serving
    this agent would at its start. Left to the workflow, its first run resolves it inside
    an activation: about 570 modules imported (the OpenAI SDK, Pydantic AI's OpenAI model
    and provider, genai-prices; all passed through the sandbox, so imported once per
    process) on the thread whose every activation the Temporal SDK's deadlock detector
    allows 2 s. A loaded machine took longer and failed the warm-up run's first workflow
    task (issue 42). The warm-up run paid that cost before either way: the measured run
    is not changed by it."""
    infer_model(flow.agent.model)


async def main() -> None:
    args = protocol.parse_args("pydantic-ai")
    resolve_model()
    client = await Client.connect(args.target, plugins=[PydanticAIPlugin()])

    async def start(text: str):
        wid = f"{args.queue}-{uuid.uuid4().hex[:8]}"
        return await client.start_workflow(
            flow.PydanticAILoop.run, text, id=wid, task_queue=args.queue
        )

    async with Worker(client, task_queue=args.queue, workflows=[flow.PydanticAILoop]):
        result = await protocol.measure(args, start)
    protocol.emit(result)


if __name__ == "__main__":
    asyncio.run(main())
