"""What an interrupt costs (issue 48's figures): `python -m bench.interrupts [RUNS]`.

RUNS sessions (default 30) against the embedded dev server, a real worker and the
scripted model: each asks for a tool that works until cancelled (it heartbeats every
~0.33 s, heartbeat timeout 1 s: it honours a cancel), and once the tool has begun, the
`interrupt` update is sent. Printed: the time from sending the update to the run
waiting for input (the update's answer comes once the tool has stopped and the calls
are answered; then `get_status` says `awaiting_input`), p50 and p99; and the history
bytes one interrupted turn adds (the history of a session interrupted twice, less that
of the same session interrupted once, as `fetch_history` serializes it).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from datetime import timedelta

from durable_agents.activities.registry import AgentRegistry
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import InterruptResult, StatusView
from durable_agents.workflows.state import RunStatus
from temporalio.client import Client, WorkflowHandle

from bench import common
from durable_agents import Agent, ToolContext, gate, tool
from durable_agents.testing import Call, Reply
from durable_agents.worker import build_worker

BEGUN: set[str] = set()


@tool(heartbeat_timeout=timedelta(seconds=1))
async def work(key: str, ctx: ToolContext) -> str:
    """Work until cancelled (at most 10 minutes)."""
    BEGUN.add(ctx.run_id + key)
    await asyncio.sleep(600)
    return "done"


worker_agent = Agent(
    name="interruptible", instructions="Work.", model="m", tools=[work], max_turns=50
)


def respond(body: dict) -> Reply:
    """A tool call for each user message; the call ids unique in the run."""
    asked = sum(1 for m in body["messages"] if m["role"] == "user")
    return Reply(tool_calls=(Call("work", {"key": str(asked)}, f"w{asked}"),))


async def _begun(run_id: str, key: str) -> None:
    async with asyncio.timeout(60):
        while run_id + key not in BEGUN:
            await asyncio.sleep(0.01)


async def _interrupt(handle: WorkflowHandle, key: str) -> float:
    """Seconds from sending the `interrupt` update to `awaiting_input`."""
    await _begun(handle.id, key)
    began = time.monotonic()
    done = await handle.execute_update(
        contract.UPDATE_INTERRUPT, {"by": "bench"}, result_type=InterruptResult
    )
    while True:
        view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
        if view.status is RunStatus.AWAITING_INPUT:
            break
        await asyncio.sleep(0.005)
    assert done.interruption is not None and done.interruption.calls[0].was == "running"
    return time.monotonic() - began


async def _history_bytes(handle: WorkflowHandle) -> int:
    return len((await handle.fetch_history()).to_json().encode())


async def _session(client: Client, queue: str, interrupts: int) -> tuple[list[float], int]:
    handle = await common.start_run(client, "interruptible", queue, session=True)
    times = [await _interrupt(handle, "1")]
    for n in range(2, interrupts + 1):
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": f"again {n}"})
        times.append(await _interrupt(handle, str(n)))
    size = await _history_bytes(handle)
    await handle.signal(contract.SIGNAL_END_SESSION, {})
    await handle.result()
    return times, size


async def main(runs: int) -> None:
    async with common.dev_server(common.converter()) as env:
        with common.scripted_model(respond) as model:
            queue = common.task_queue("interrupts")
            worker = build_worker(
                env.client,
                registry=AgentRegistry([worker_agent]),
                model_client=model,
                task_queue=queue,
            )
            async with worker:
                times: list[float] = []
                for _ in range(runs):
                    took, _ = await _session(env.client, queue, 1)
                    times += took
                _, once = await _session(env.client, queue, 1)
                _, twice = await _session(env.client, queue, 2)
    ms = [t * 1000 for t in times]
    print(f"interrupt -> awaiting_input over {len(ms)} runs (load {common.load_average()}):")
    print(f"  p50 {common.percentile(ms, 50):.0f} ms, p99 {common.percentile(ms, 99):.0f} ms,")
    print(f"  min {min(ms):.0f} ms, max {max(ms):.0f} ms")
    print(f"history bytes per interrupted turn: {twice - once:,} (one session: {once:,})")


if __name__ == "__main__":
    os.environ.setdefault(gate.ENV, gate.DEVELOPMENT_KEY_ID)  # a dev server of its own
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30))
