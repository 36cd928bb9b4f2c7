"""3. Concurrency: `python -m bench.concurrency [--runs 1000]`.

`--runs` runs of the `approval` agent, each parked on one approval, all held
by ONE worker process (`python worker.py`, see `bench.worker_process`). Then:
the worker's RSS; approvals one at a time (signal sent → the tool's first line,
`time.time()` on both sides of one machine); then all the others approved at
once, and the time until the last run completes.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Iterable

from temporalio.client import Client, WorkflowHandle

from bench import common, report
from bench.worker_process import worker_process
from examples.scripted_openai import Call, Reply, ScriptedModelServer
from workflows import contract
from workflows.payloads import DecisionSignal

CALL_ID = "stamp-1"
PARALLEL_CLIENT_CALLS = 64


def respond(request: dict) -> Reply:
    """Ask for `stamp` (needs approval); once it ran, answer with its output."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=last["content"])
    return Reply(tool_calls=(Call("stamp", {}, call_id=CALL_ID),))


async def bounded(calls: Iterable[Awaitable], limit: int = PARALLEL_CLIENT_CALLS) -> list:
    gate = asyncio.Semaphore(limit)

    async def one(call: Awaitable):
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls))


async def wait_parked(client: Client, queue: str, count: int, timeout: float) -> None:
    query = f'TaskQueue="{queue}" AND AgentStatus="awaiting_approval"'
    deadline = time.monotonic() + timeout
    while (await client.count_workflows(query)).count < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} runs did not park within {timeout:.0f} s")
        await asyncio.sleep(0.5)


async def approve(handle: WorkflowHandle) -> float:
    """Approve; seconds from sending the signal to the tool's start (its output)."""
    sent = time.time()
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id=CALL_ID, approver="bench"))
    result = await handle.result()
    return float(result.final_output) - sent


async def measure(
    client: Client, *, runs: int, samples: int, command: list[str] | None = None
) -> dict:
    queue = common.task_queue("park")
    with ScriptedModelServer(respond) as server:
        target = client.service_client.config.target_host
        with worker_process(target, server.base_url, queue, command=command) as worker:
            out: dict = {"runs": runs, "rss_idle": common.rss_mb(worker.pid)}
            began = time.perf_counter()
            handles = await bounded(
                common.start_run(client, "approval", queue) for _ in range(runs)
            )
            await wait_parked(client, queue, runs, timeout=max(120, runs * 0.5))
            out["park_s"] = time.perf_counter() - began
            await asyncio.sleep(2)  # let the worker settle before reading its memory
            out["rss_parked"] = common.rss_mb(worker.pid)
            out["cpu_park"] = common.cpu_seconds(worker.pid)
            one_by_one = [await approve(h) for h in handles[:samples]]
            out["one_by_one_ms"] = [x * 1000 for x in one_by_one]
            began = time.perf_counter()
            burst = await bounded(approve(h) for h in handles[samples:])
            out["drain_s"] = time.perf_counter() - began
            out["burst_ms"] = [x * 1000 for x in burst]
            out["rss_peak"] = common.rss_mb(worker.pid, "VmHWM")
            out["rss_end"] = common.rss_mb(worker.pid)
            out["cpu_total"] = common.cpu_seconds(worker.pid)
    return out


TUNED = [sys.executable, "-m", "bench.tuned_worker"]
OPTIONS = {
    "max_cached_workflows=250": [*TUNED, "--max-cached-workflows", "250"],
    "sandbox on, `workflows` passed through": [*TUNED, "--passthrough-workflows"],
    "sandbox off": [*TUNED, "--unsandboxed"],
}


async def section(client: Client, *, quick: bool, runs: int | None = None) -> str:
    """The markdown of measurement 3; options are measured when the default misses its goal."""
    runs = runs or (200 if quick else 1000)
    samples = min(100, runs // 5)
    print(f"concurrency: {runs} runs parked on an approval, one worker process", flush=True)
    results = {"worker.py as is": await measure(client, runs=runs, samples=samples)}
    if not quick and results["worker.py as is"]["rss_parked"] > report.RSS_GOAL_MB:
        for label, command in OPTIONS.items():
            print(f"concurrency option: {label}", flush=True)
            results[label] = await measure(client, runs=runs, samples=samples, command=command)
    return report.concurrency_section(results)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        print(await section(env.client, quick=False, runs=args.runs))


if __name__ == "__main__":
    asyncio.run(main())
