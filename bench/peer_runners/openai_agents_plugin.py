"""bench.peers runner: Temporal's OpenAI Agents plugin (`temporalio-openai-agents`),
in its own virtualenv (bench/peer_requirements/openai-agents.txt). The model is the
scripted server over Chat Completions (`use_responses=False`), as for every kind;
the Agents SDK's tracing is off (it would export to OpenAI)."""

from __future__ import annotations

import asyncio
import os
import uuid
from datetime import timedelta

import openai_agents_flow as flow
import protocol
from agents import set_tracing_disabled
from agents.models.openai_provider import OpenAIProvider
from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.worker import Worker


async def main() -> None:
    args = protocol.parse_args("openai-agents")
    set_tracing_disabled(True)
    model = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="x", max_retries=0)
    plugin = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=60)),
        model_provider=OpenAIProvider(openai_client=model, use_responses=False),
    )
    client = await Client.connect(args.target, plugins=[plugin])

    async def start(text: str):
        wid = f"{args.queue}-{uuid.uuid4().hex[:8]}"
        return await client.start_workflow(flow.AgentsLoop.run, text, id=wid, task_queue=args.queue)

    worker = Worker(
        client, task_queue=args.queue, workflows=[flow.AgentsLoop], activities=[flow.report]
    )
    async with worker:
        result = await protocol.measure(args, start)
    protocol.emit(result)


if __name__ == "__main__":
    asyncio.run(main())
