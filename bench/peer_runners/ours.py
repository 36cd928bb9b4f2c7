"""bench.peers runner: our AgentWorkflow, `worker.build_worker` as `python worker.py`
builds it, with its payload store (on by default) in a temporary directory; the
bench's `history` agent (tool `report`). Runs in this repository's virtualenv."""

from __future__ import annotations

import asyncio
import os
import tempfile

import protocol
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.state import RunStatus
from openai import AsyncOpenAI
from temporalio.client import Client

from bench import common


def answer(result: AgentResult) -> str:
    """The final output of a completed run; else its status (failed, max turns, ...)."""
    if result.status is RunStatus.COMPLETED:
        return result.final_output or ""
    return f"status {result.status.value} after turn {result.turn}"


async def main() -> None:
    args = protocol.parse_args("ours")
    model = AsyncOpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key="x", max_retries=0)
    with tempfile.TemporaryDirectory() as store:
        client = await Client.connect(args.target, data_converter=common.converter(store))
        async with common.agent_worker(client, model, args.queue):
            result = await protocol.measure(
                args,
                lambda text: common.start_run(client, "history", args.queue, text=text),
                answer,
            )
    protocol.emit(result)


if __name__ == "__main__":
    asyncio.run(main())
