"""bench.peers runner: the hand-written loop (`bench.handwritten`), pydantic converter,
no payload store. Runs in this repository's virtualenv."""

from __future__ import annotations

import asyncio
import os
import uuid

import protocol
from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.worker import Worker

from bench import common
from bench import handwritten as loop


async def main() -> None:
    args = protocol.parse_args("handwritten")
    model = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="x", max_retries=0)
    client = await Client.connect(args.target, data_converter=common.converter())
    activities = loop.Activities(model)
    worker = Worker(
        client,
        task_queue=args.queue,
        workflows=[loop.HandwrittenLoop],
        activities=[activities.call_model, activities.report],
    )

    async def start(text: str):
        wid = f"{args.queue}-{uuid.uuid4().hex[:8]}"
        return await client.start_workflow(
            loop.WORKFLOW_TYPE, text, id=wid, task_queue=args.queue, result_type=str
        )

    async with worker:
        result = await protocol.measure(args, start)
    protocol.emit(result)


if __name__ == "__main__":
    asyncio.run(main())
