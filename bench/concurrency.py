"""3. Concurrency: `python -m bench.concurrency [--runs 1000] [--options | --option LABEL]`.

`--runs` runs of the `approval` agent, each parked on one approval, all held
by ONE worker process (`python worker.py`, its real defaults; see
`bench.worker_process`). Then: the worker's RSS; approvals one at a time
(signal sent → the tool's first line, `time.time()` on both sides of one
machine); then all the others approved at once: the signals go out (at most
SIGNAL_CONCURRENCY in flight), nothing else waits on them, and the drain ends
at the server's close time of the last run.
"""

from __future__ import annotations

import asyncio
import time

from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentResult, DecisionSignal
from temporalio.client import Client, WorkflowHandle

from bench import common, report, report_runtime, tuned_worker
from bench.worker_process import worker_process
from durable_agents.testing import Call, Reply, ScriptedModelServer

CALL_ID = "stamp-1"
CLIENT_CONCURRENCY = 64
"""Starts and result reads in flight at once (none of them is being measured)."""
SIGNAL_CONCURRENCY = 64
"""Approval signals in flight at once during the burst (each is one short RPC)."""
WARM = 10
"""Runs parked first: the worker's RSS after them is the base of the per-run figure
(the first runs also pay for one-time imports and caches)."""


def respond(request: dict) -> Reply:
    """Ask for `stamp` (needs approval); once it ran, answer with its output."""
    last = request["messages"][-1]
    if last["role"] == "tool":
        return Reply(content=last["content"])
    return Reply(tool_calls=(Call("stamp", {}, call_id=CALL_ID),))


async def bounded(calls: list, limit: int = CLIENT_CONCURRENCY) -> list:
    """Await the coroutines in `calls`, at most `limit` at a time, results in order."""
    gate = asyncio.Semaphore(limit)

    async def one(call):
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls))


async def wait_count(client: Client, query: str, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while (await client.count_workflows(query)).count < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"fewer than {count} runs match {query} after {timeout:.0f} s")
        await asyncio.sleep(0.25)


async def park(client: Client, queue: str, count: int, *, already: int = 0) -> list:
    """Start `count` runs and wait until they (and `already` others) are parked."""
    handles = await bounded([common.start_run(client, "approval", queue) for _ in range(count)])
    parked = f'TaskQueue="{queue}" AND AgentStatus="awaiting_approval"'
    await wait_count(client, parked, already + count, timeout=max(120, count * 0.5))
    return handles


async def signal(handle: WorkflowHandle) -> float:
    """Send the approval; the wall-clock time just before it was sent."""
    sent = time.time()
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id=CALL_ID, approver="bench"))
    return sent


def tool_started(result: AgentResult) -> float:
    """The tool's wall-clock start, which `stamp` returned and the model echoed."""
    return float(result.final_output or "nan")


def cpu_now(worker: int) -> dict[str, float]:
    """CPU seconds so far of the worker, the dev server, this process and the machine
    (all cores, busy and in all), to tell what bounds the burst."""
    server = common.dev_server_pid()
    busy, total = common.machine_cpu_seconds()
    return {
        "worker": common.cpu_seconds(worker),
        "server": common.cpu_seconds(server) if server else float("nan"),
        "bench": time.process_time(),
        "machine_busy": busy,
        "machine_total": total,
    }


async def burst(client: Client, queue: str, handles: list[WorkflowHandle], worker: int) -> dict:
    """Approve all `handles` at once; drain time and approval → tool start of each, and
    the CPU each process used meanwhile."""
    cpu = cpu_now(worker)
    began = time.time()
    sent = await bounded([signal(h) for h in handles], SIGNAL_CONCURRENCY)
    signals_s = time.time() - began
    done = f'TaskQueue="{queue}" AND ExecutionStatus="Completed"'
    total = (await client.count_workflows(f'TaskQueue="{queue}"')).count
    await wait_count(client, done, total, timeout=max(120, len(handles) * 0.5))
    after = cpu_now(worker)
    closed = [w.close_time async for w in client.list_workflows(done)]
    last = max(t.timestamp() for t in closed if t is not None)
    results = await bounded([h.result() for h in handles])
    latency = [(tool_started(r) - s) * 1000 for r, s in zip(results, sent, strict=True)]
    used = {k: after[k] - cpu[k] for k in cpu}
    return {"signals_s": signals_s, "drain_s": last - began, "burst_ms": latency,
            "burst_cpu": used}  # fmt: skip


async def measure(
    client: Client, *, runs: int, samples: int, command: list[str] | None = None
) -> dict:
    """Park `runs` runs on one worker process (`command`, default `python worker.py`)."""
    queue = common.task_queue("park")
    with ScriptedModelServer(respond) as server:
        target = client.service_client.config.target_host
        with worker_process(target, server.base_url, queue, command=command) as worker:
            out: dict = {"runs": runs, "warm": WARM, "rss_idle": common.rss_mb(worker.pid)}
            began = time.perf_counter()
            handles = await park(client, queue, WARM)
            out["rss_warm"] = common.rss_mb(worker.pid)
            handles += await park(client, queue, runs - WARM, already=WARM)
            out["park_s"] = time.perf_counter() - began
            await asyncio.sleep(2)  # let the worker settle before reading its memory
            out["rss_parked"] = common.rss_mb(worker.pid)
            out["cpu_park"] = common.cpu_seconds(worker.pid)
            one_by_one = []
            for handle in handles[:samples]:
                sent = await signal(handle)
                one_by_one.append((tool_started(await handle.result()) - sent) * 1000)
            out["one_by_one_ms"] = one_by_one
            out |= await burst(client, queue, handles[samples:], worker.pid)
            out["rss_peak"] = common.rss_mb(worker.pid, "VmHWM")
            out["rss_end"] = common.rss_mb(worker.pid)
            out["cpu_total"] = common.cpu_seconds(worker.pid)
    return out


DEFAULTS = "worker.py defaults"
OPTIONS = {
    "max_cached_workflows=250": "cache-250",
    "max_cached_workflows=600": "cache-600",
    "20 + 20 task pollers": "pollers-20",
}
"""Columns beside worker.py's defaults (options of `bench.tuned_worker`)."""


async def section(
    client: Client,
    *,
    quick: bool,
    runs: int | None = None,
    options: bool = False,
    only: list[str] | None = None,
) -> report.Section:
    """Measurement 3, with OPTIONS beside worker.py's defaults when those miss the goal
    in a full run or `options` is true. (The sandbox columns are gone: our workflows run
    outside the sandbox whatever the worker's settings, see AgentWorkflow.)"""
    runs = runs or (200 if quick else 1000)
    samples = min(100, runs // 5)
    print(f"concurrency: {runs} runs parked on an approval, one worker process", flush=True)
    first = await measure(client, runs=runs, samples=samples)
    measured = [first]
    for n in range(1, 1 if quick else report_runtime.BURST_REPEATS):
        print(f"concurrency: burst {n + 1} of {report_runtime.BURST_REPEATS}", flush=True)
        measured.append(await measure(client, runs=runs, samples=samples))
    first["bursts"] = [(len(m["burst_ms"]), m["drain_s"]) for m in measured]
    first["burst_cpus"] = [{"burst_cpu": m["burst_cpu"], "drain_s": m["drain_s"]} for m in measured]
    results = {DEFAULTS: first}
    missed = results[DEFAULTS]["rss_parked"] > report.RSS_GOAL_MB
    if only:
        wanted = only
    elif options or (missed and not quick):
        wanted = list(OPTIONS)
    else:
        wanted = []
    for label in wanted:
        print(f"concurrency option: {label}", flush=True)
        command = tuned_worker.command(OPTIONS[label])
        results[label] = await measure(client, runs=runs, samples=samples, command=command)
    return report_runtime.concurrency_section(results)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="3. Concurrency")
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--options", action="store_true", help="also measure OPTIONS")
    parser.add_argument(
        "--option", action="append", choices=list(OPTIONS), help="measure only these OPTIONS"
    )
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        measured = await section(
            env.client, quick=False, runs=args.runs, options=args.options, only=args.option
        )
        print(report.alone(measured))


if __name__ == "__main__":
    asyncio.run(main())
