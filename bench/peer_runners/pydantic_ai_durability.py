"""bench.peers runner: Pydantic AI's Temporal durability (`pydantic-ai-slim[temporal]`),
in its own virtualenv (bench/peer_requirements/pydantic-ai.txt)."""

from __future__ import annotations

import asyncio
import uuid

import protocol
import pydantic_ai_flow as flow
from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
from temporalio.client import Client
from temporalio.worker import Worker


async def main() -> None:
    args = protocol.parse_args("pydantic-ai")
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
