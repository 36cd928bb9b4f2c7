"""Shared pieces of the benchmarks: the dev server, the scripted model, workers
(exactly `worker.build_worker`, optionally with extra `Worker` options), runs,
history counting, process accounting and the versions/machine header."""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import platform
import socket
import statistics
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from datetime import timedelta
from importlib.metadata import version
from pathlib import Path
from unittest import mock

from durable_agents.activities.registry import AgentRegistry
from durable_agents.workflows import contract, search_attributes
from durable_agents.workflows.payloads import AgentInput, AgentResult
from openai import AsyncOpenAI
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.converter import DataConverter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from durable_agents import gate
from durable_agents import worker as worker_module
from durable_agents.dataplane.codec import data_converter_from_env
from durable_agents.dev_server_config import DEV_SERVER_CONFIG, dev_server_args
from durable_agents.testing import Call, Reply, ScriptedModelServer
from durable_agents.worker import build_worker, temporal_binary

# The workers' gate key of this bench process (`durable_agents.gate`): every worker the
# bench starts (in-process, `worker.py` processes, the peers' runners) inherits it; a
# fresh key each time, for the bench's own dev server.
os.environ.setdefault(gate.ENV, gate.new_key_entry("bench"))


def converter(store: str = "off", *, threshold: int | None = None) -> DataConverter:
    """worker.py's data converter (`data_converter_from_env`: pydantic, the codec with
    encryption off, the payload store) with the store in directory `store` ("off":
    none) taking payloads of `threshold` bytes or more (default 16 KiB)."""
    env = {"AGENT_PAYLOAD_STORE": store}
    if threshold is not None:
        env["AGENT_PAYLOAD_THRESHOLD"] = str(threshold)
    return data_converter_from_env(env)


@contextlib.asynccontextmanager
async def dev_server(
    data_converter: DataConverter, *, server_defaults: bool = False
) -> AsyncIterator[WorkflowEnvironment]:
    """The embedded dev server (the pip-installed `temporal` binary) on a free port, set
    up as `worker.py --dev` sets it up (`worker.DEV_SERVER_CONFIG`), or with the server's
    own defaults if `server_defaults`."""
    env = await WorkflowEnvironment.start_local(
        data_converter=data_converter,
        search_attributes=search_attributes.ALL,
        dev_server_existing_path=temporal_binary(),
        dev_server_startup_timeout=timedelta(seconds=60),
        dev_server_extra_args=[] if server_defaults else dev_server_args(),
    )
    try:
        yield env
    finally:
        await env.shutdown()


@contextlib.contextmanager
def scripted_model(respond: Callable[[dict], Reply]) -> Iterator[AsyncOpenAI]:
    """The scripted OpenAI-compatible HTTP server and a real `openai` client for it."""
    with ScriptedModelServer(respond) as server:
        yield AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)


def model_turns(
    turns: int, calls: Callable[[int], tuple[Call, ...]], *, delay: float = 0.0
) -> Callable[[dict], Reply]:
    """A responder: model calls 1..turns-1 ask for `calls(turn)`, call `turns` answers."""

    def respond(request: dict) -> Reply:
        done = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if done + 1 >= turns:
            return Reply(content="finished", delay_seconds=delay)
        return Reply(tool_calls=calls(done + 1), delay_seconds=delay)

    return respond


def tuned(options: Mapping[str, object]) -> Callable[..., Worker]:
    """`worker.build_worker` with `options`: those it takes itself (`sandbox_passthrough`,
    `max_cached_workflows`) go to it, any other is a `Worker(...)` keyword argument that
    replaces or adds to its own. How a tuning is measured without editing worker.py."""
    own = inspect.signature(build_worker).parameters
    build = {k: v for k, v in options.items() if k in own}
    extra = {k: v for k, v in options.items() if k not in own}

    def worker_class(*args: object, **kwargs: object) -> Worker:
        return Worker(*args, **{**kwargs, **extra})

    def build_tuned(*args: object, **kwargs: object) -> Worker:
        with mock.patch.object(worker_module, "Worker", worker_class):
            return build_worker(*args, **{**kwargs, **build})

    return build_tuned


def agent_worker(
    client: Client,
    model_client: AsyncOpenAI,
    task_queue: str,
    options: Mapping[str, object] | None = None,
) -> Worker:
    """`worker.build_worker` for the bench agents, with `options` (see `tuned`)."""
    return tuned(options or {})(
        client,
        registry=AgentRegistry.from_modules(["bench.agents"]),
        model_client=model_client,
        task_queue=task_queue,
    )


def task_queue(prefix: str) -> str:
    """A fresh task queue, so parallel sessions on the machine never share one."""
    return f"bench-{prefix}-{uuid.uuid4().hex[:6]}"


async def start_run(
    client: Client,
    agent: str,
    queue: str,
    *,
    text: str = "go",
    workflow: str = contract.WORKFLOW_TYPE,
    **kw: object,
) -> WorkflowHandle:
    """Start an AgentWorkflow run (or `workflow`, same input) of the bench agent `agent`,
    its search attributes set with the start as `AgentClient` sets them (free: an upsert
    is a billed action)."""
    return await client.start_workflow(
        workflow,
        AgentInput(agent=agent, input=text, **kw),
        id=f"{queue}-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        result_type=AgentResult,
        search_attributes=search_attributes.at_start(agent),
    )


def per_turn(events: list) -> list[tuple[int, int]]:
    """(events, bytes) of history from one `call_model` scheduling to the next."""
    turns: list[list[int]] = []
    for event in events:
        starts_turn = (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and event.activity_task_scheduled_event_attributes.activity_type.name
            == contract.ACTIVITY_CALL_MODEL
        )
        if starts_turn:
            turns.append([0, 0])
        if turns:
            turns[-1][0] += 1
            turns[-1][1] += event.ByteSize()
    return [(n, b) for n, b in turns]


# --- statistics and processes -----------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank: the smallest value with at least q% of
    the values at or below it."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def median_ms(operation: Callable[[], object], runs: int = 20) -> float:
    """Median wall time of `runs` calls of `operation`, in milliseconds."""
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        operation()
        times.append(time.perf_counter() - began)
    return median(times) * 1000


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu_seconds() -> tuple[float, float]:
    """CPU seconds of the whole machine so far, all cores: (busy, in all) (/proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already in user
    return (total - idle) / os.sysconf("SC_CLK_TCK"), total / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of `pid` in MB (VmHWM: the peak)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def dev_server_pid() -> int | None:
    """The `temporal` dev server started by this process (the newest one)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            name, rest = stat.read_text().rsplit(")", 1)
            if name.endswith("(temporal") and int(rest.split()[1]) == os.getpid():
                found.append(int(stat.parent.name))
    return max(found) if found else None


# --- the header of RESULTS.md -------------------------------------------------------


def versions() -> dict[str, str]:
    cli = subprocess.run([temporal_binary(), "--version"], capture_output=True, text=True)
    return {
        "python": platform.python_version(),
        "temporalio": version("temporalio"),
        "temporal CLI": cli.stdout.strip().removeprefix("temporal version "),
        "openai": version("openai"),
        "pydantic": version("pydantic"),
        "dev server config": ", ".join(f"{k}={v}" for k, v in DEV_SERVER_CONFIG.items()),
    }


def load_average() -> str:
    """The machine's load average over 1, 5 and 15 minutes (runnable processes)."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def machine() -> dict[str, str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "?",
    )
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    return {
        "cores": str(os.cpu_count()),
        "memory": f"{mem_kb / 1024**2:.1f} GiB",
        "CPU": cpu,
        "OS": f"{platform.system()} {platform.release()}",
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }
