"""Where the time of a turn goes: `python -m bench.profile [--runs 5]`.

Three views of the same kind of run (10 turns, zero model latency):
- the server's clock: history timestamps split into waiting for a worker to
  pick a workflow task up, the worker processing it, activities, the rest;
  AgentWorkflow against the floor;
- CPU: worker process and dev server, ms per turn;
- py-spy: samples of the worker process (`python worker.py`, all threads),
  grouped by what they were doing, and the functions with most samples.
"""

from __future__ import annotations

import asyncio
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from openai.types.chat import ChatCompletion
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from activities.model_api import to_messages
from bench import common, report, snapshot_size
from bench.floor import FloorInput, FloorWorkflow
from bench.overhead import echo_calls
from bench.worker_process import worker_process
from examples.scripted_openai import Reply, ScriptedModelServer

TURNS = 10
WARMUP = 4
"""Runs before measuring: a worker process's first ~40 workflow tasks are picked up
faster than all later ones (see ANALYSIS.md), so measure past them."""
CATEGORIES = [
    ("model call: openai client, httpx", r"(^|[ (/])(openai|httpx|httpcore|anyio)/"),
    ("payload conversion: temporalio converter + pydantic", r"temporalio/(converter|contrib)"),
    ("workflow sandbox (module isolation, restrictions)", r"workflow_sandbox"),
    ("our workflow code (workflows/: loop, state, details)", r"(^|[ (/])workflows/"),
    ("our activity code (activities/)", r"(^|[ (/])activities/"),
    ("pydantic elsewhere (model_copy, validation)", r"pydantic"),
    ("Temporal worker: activations, commands, bridge", r"temporalio/"),
    ("asyncio event loop and the rest", r""),
]


def phases(events: list) -> dict[str, float]:
    """Milliseconds of the run spent in each phase, on the server's clock."""
    out = collections.Counter()
    scheduled, started, activities = None, None, {}
    times = [e.event_time.ToMilliseconds() for e in events]
    for event, at in zip(events, times, strict=True):
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
            scheduled = at
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            out["workflow task: waiting for the worker"] += at - scheduled
            started = at
        elif kind == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            out["workflow task: worker processing"] += at - started
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            activities[event.event_id] = at
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            attrs = event.activity_task_completed_event_attributes
            out["activities: scheduled → completed"] += at - activities[attrs.scheduled_event_id]
    out["the rest"] = times[-1] - times[0] - sum(out.values())
    return dict(out)


def py_spy() -> str | None:
    found = Path(sys.executable).parent / "py-spy"
    return str(found) if found.exists() else None


def summarise(raw: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]], int]:
    """(samples per category, samples per leaf function, all samples) of py-spy's raw output."""
    categories: collections.Counter = collections.Counter()
    leaves: collections.Counter = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        leaves[re.sub(r":\d+\)$", ")", frames[-1])] += n
        label = next(label for label, pattern in CATEGORIES if re.search(pattern, stack))
        categories[label] += n
    return categories.most_common(), leaves.most_common(12), total


async def timed_runs(client: Client, start, *, runs: int, pid: int) -> tuple[dict, object]:
    """Wall, worker CPU and dev-server CPU per turn of `runs` runs started by `start()`."""
    server = common.dev_server_pid()
    cpu, srv, began = common.cpu_seconds(pid), common.cpu_seconds(server), time.time()
    for _ in range(runs):
        handle = await start()
        await handle.result()
    turns = runs * TURNS
    return {
        "wall_ms": (time.time() - began) * 1000 / turns,
        "worker_cpu_ms": (common.cpu_seconds(pid) - cpu) * 1000 / turns,
        "server_cpu_ms": (common.cpu_seconds(server) - srv) * 1000 / turns,
    }, handle


async def measure(client: Client, *, runs: int) -> dict:
    target = client.service_client.config.target_host
    queue, floor_q = common.task_queue("profile"), common.task_queue("pfloor")
    out: dict = {"runs": runs, "turns": TURNS}
    floor_command = [sys.executable, "-m", "bench.floor"]
    with (
        ScriptedModelServer(common.model_turns(TURNS, echo_calls)) as model,
        worker_process(target, model.base_url, floor_q, command=floor_command) as floor,
    ):

        async def start_floor():
            return await client.start_workflow(
                FloorWorkflow.run,
                FloorInput(turns=TURNS),
                id=f"{floor_q}-{uuid.uuid4().hex[:6]}",
                task_queue=floor_q,
            )

        await timed_runs(client, start_floor, runs=WARMUP, pid=floor.pid)  # warm-up
        out["floor"], handle = await timed_runs(client, start_floor, runs=runs, pid=floor.pid)
        out["floor"]["phases"] = phases((await handle.fetch_history()).events)
    with (
        ScriptedModelServer(common.model_turns(TURNS, echo_calls)) as model,
        worker_process(target, model.base_url, queue) as worker,
        tempfile.TemporaryDirectory() as tmp,
    ):

        async def start_agent():
            return await common.start_run(client, "bench", queue)

        await timed_runs(client, start_agent, runs=WARMUP, pid=worker.pid)  # warm-up
        spy, recorder = py_spy(), None
        raw_file = Path(tmp) / "raw.txt"
        if spy:
            argv = [spy, "record", "--pid", str(worker.pid), "--rate", "250", "--gil"]
            argv += ["--format", "raw", "--output", str(raw_file)]
            recorder = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            await asyncio.sleep(1)
        out["ours"], handle = await timed_runs(client, start_agent, runs=runs, pid=worker.pid)
        out["ours"]["phases"] = phases((await handle.fetch_history()).events)
        if recorder is not None:
            recorder.send_signal(signal.SIGINT)
            _, err = recorder.communicate(timeout=60)
            if raw_file.exists():
                out["profile"] = summarise(raw_file.read_text())
                if os.environ.get("BENCH_PROFILE_RAW"):
                    shutil.copy(raw_file, os.environ["BENCH_PROFILE_RAW"])
            else:
                out["profile_error"] = err.decode()[-500:]
    return out


async def model_client_cost(*, reps: int) -> list[tuple[int, int, float, float]]:
    """ms per request through `chat.completions.create` (what `call_model` does: openai
    first transforms every message of the params) against `post` with the same body."""
    rows = []
    with common.scripted_model(lambda request: Reply(content="ok")) as client:
        for turns in (10, 100, 300):
            messages = to_messages("bench", snapshot_size.state_of(turns).items)
            body = {"model": "scripted", "messages": messages}
            create, post = [], []
            for _ in range(reps):
                began = time.perf_counter()
                await client.chat.completions.create(**body)
                create.append(time.perf_counter() - began)
                began = time.perf_counter()
                await client.post("/chat/completions", body=body, cast_to=ChatCompletion)
                post.append(time.perf_counter() - began)
            rows.append((turns, len(messages), common.median(create), common.median(post)))
    return rows


async def section(client: Client, *, quick: bool) -> str:
    print("profile: phases, CPU, py-spy of the worker process", flush=True)
    measured = await measure(client, runs=3 if quick else 8)
    measured["model_client"] = await model_client_cost(reps=5 if quick else 15)
    return report.profile_section(measured)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        print(await section(env.client, quick=args.quick))


if __name__ == "__main__":
    asyncio.run(main())
