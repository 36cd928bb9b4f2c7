"""Where the time of a turn goes: `python -m bench.profile [--quick]`.

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

from durable_agents.activities.chat_completions import to_messages
from openai.types.chat import ChatCompletion
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from bench import common, report, report_runtime, states
from bench.floor import FloorInput, FloorWorkflow
from bench.overhead import echo_calls
from bench.worker_process import worker_process
from durable_agents.testing import Reply, ScriptedModelServer

TURNS = 10
WARMUP = 4
"""Runs of a fresh worker process before measuring (the first one's phases are
reported apart, to show what a fresh process does differently)."""
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


async def timed_runs(client: Client, start, *, runs: int, pid: int) -> dict:
    """Wall, worker CPU and dev-server CPU per turn of `runs` runs started by `start()`,
    and the median of each server-clock phase over the runs."""
    server = common.dev_server_pid()
    cpu, srv, began = common.cpu_seconds(pid), common.cpu_seconds(server), time.time()
    handles = []
    for _ in range(runs):
        handles.append(await start())
        await handles[-1].result()
    turns = runs * TURNS
    out: dict = {
        "wall_ms": (time.time() - began) * 1000 / turns,
        "worker_cpu_ms": (common.cpu_seconds(pid) - cpu) * 1000 / turns,
        "server_cpu_ms": (common.cpu_seconds(server) - srv) * 1000 / turns,
    }
    each = [phases((await h.fetch_history()).events) for h in handles]
    out["phases"] = {name: common.median([p.get(name, 0) for p in each]) for name in each[0]}
    return out


async def side(client: Client, start, *, runs: int, pid: int, spy: bool = False) -> dict:
    """Warm-up runs of a fresh worker process (the first one's phases kept apart), then
    `runs` measured ones, sampled by py-spy if `spy` and it is installed."""
    first = await timed_runs(client, start, runs=1, pid=pid)
    await timed_runs(client, start, runs=WARMUP - 1, pid=pid)
    recorder = Recorder(pid) if spy and py_spy() else None
    if recorder is not None:
        await asyncio.sleep(1)
    out = await timed_runs(client, start, runs=runs, pid=pid)
    out["first"] = first["phases"]
    if recorder is not None:
        out |= recorder.stop()
    return out


class Recorder:
    """py-spy recording the worker process until `stop()`."""

    def __init__(self, pid: int) -> None:
        self._dir = tempfile.TemporaryDirectory()
        self._raw = Path(self._dir.name) / "raw.txt"
        argv = [str(py_spy()), "record", "--pid", str(pid), "--rate", "250", "--gil"]
        argv += ["--format", "raw", "--output", str(self._raw)]
        self._proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> dict:
        self._proc.send_signal(signal.SIGINT)
        _, err = self._proc.communicate(timeout=60)
        with self._dir:
            if not self._raw.exists():
                return {"profile_error": err.decode()[-500:]}
            if os.environ.get("BENCH_PROFILE_RAW"):
                shutil.copy(self._raw, os.environ["BENCH_PROFILE_RAW"])
            return {"profile": summarise(self._raw.read_text())}


async def measure(client: Client, *, runs: int) -> dict:
    target = client.service_client.config.target_host
    queue, floor_q = common.task_queue("profile"), common.task_queue("pfloor")
    out: dict = {"runs": runs, "turns": TURNS, "warmup": WARMUP}
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

        out["floor"] = await side(client, start_floor, runs=runs, pid=floor.pid)
    with (
        ScriptedModelServer(common.model_turns(TURNS, echo_calls)) as model,
        worker_process(target, model.base_url, queue) as worker,
    ):

        async def start_agent():
            return await common.start_run(client, "bench", queue)

        out["ours"] = await side(client, start_agent, runs=runs, pid=worker.pid, spy=True)
    for key in ("profile", "profile_error"):
        if key in out["ours"]:
            out[key] = out["ours"].pop(key)
    return out


async def model_client_cost(*, reps: int) -> list[tuple[int, int, float, float]]:
    """ms per request through `chat.completions.create` (openai first transforms every
    message of the params) against `post` with the same body (what `call_model` does)."""
    rows = []
    with common.scripted_model(lambda request: Reply(content="ok")) as client:
        for turns in (10, 100, 300):
            messages = to_messages("bench", states.state_of(turns).items)
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


async def section(client: Client, *, quick: bool) -> report.Section:
    print("profile: phases, CPU, py-spy of the worker process", flush=True)
    measured = await measure(client, runs=3 if quick else 8)
    measured["model_client_reps"] = reps = 5 if quick else 15
    measured["model_client"] = await model_client_cost(reps=reps)
    return report_runtime.profile_section(measured)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        print((await section(env.client, quick=args.quick)).markdown)


if __name__ == "__main__":
    asyncio.run(main())
