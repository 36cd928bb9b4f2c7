"""Real processes to break: the Temporal dev server (persistent database, restartable
on its port) and `worker.py` workers (killed with SIGKILL), plus the figures report."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from durable_agents.workflows import search_attributes
from temporalio.client import Client

from durable_agents.dataplane.codec import data_converter_from_env
from durable_agents.worker import temporal_binary
from tests.chaos import ledger
from tests.support.runs import free_port

ROOT = Path(__file__).resolve().parents[2]
AGENTS = "tests.chaos.agents"
"""The module of the agents (and tools) chaos workers serve."""
REPORT_ENV = "CHAOS_REPORT"
"""Where `make chaos` has the figures written (markdown); unset: not written."""


class DevServer:
    """`temporal server start-dev` with a database file: stop it, start it again."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        attributes = [
            arg
            for key in search_attributes.ALL
            for arg in ("--search-attribute", f"{key.name}={_kind(key)}")
        ]
        self._process = await asyncio.create_subprocess_exec(
            temporal_binary(),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--db-filename",
            str(self.db),
            "--log-level",
            "error",
            *attributes,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                client = await Client.connect(self.address)
                await client.count_workflows()
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    async def stop(self) -> None:
        if self._process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            self._process.terminate()
        await self._process.wait()
        self._process = None

    async def client(self) -> Client:
        return await Client.connect(self.address, data_converter=data_converter_from_env())


def _kind(key) -> str:
    kinds = {"KEYWORD": "Keyword", "INT": "Int", "DOUBLE": "Double"}
    return kinds[key.indexed_value_type.name.split("_")[-1]]


@dataclass
class WorkerProcess:
    """`python worker.py` serving the chaos agents, its model calls routed as `name`."""

    name: str
    address: str
    task_queue: str
    model_url: str
    ledger_path: Path
    extra_args: tuple[str, ...] = ()
    root: Path = ROOT
    """The source tree whose `worker.py` runs (another build: `tests.chaos.builds`)."""
    tools_only: str | None = None
    """A tools-only worker (`worker.py --tools-only MODULE`) of `task_queue`; None: a
    worker serving the chaos agents' runs."""
    process: asyncio.subprocess.Process | None = None
    log: list[str] = field(default_factory=list)

    async def start(self) -> WorkerProcess:
        env = {
            **os.environ,
            "TEMPORAL_ADDRESS": self.address,
            "OPENAI_API_KEY": "chaos",
            "OPENAI_BASE_URL": f"{self.model_url.removesuffix('/v1')}/{self.name}/v1",
            ledger.ENV: str(self.ledger_path),
        }
        serves = ("--tools-only", self.tools_only) if self.tools_only else ("--agents", AGENTS)
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "worker.py",
            *serves,
            "--task-queue",
            self.task_queue,
            "--drain-seconds",
            "0",
            *self.extra_args,
            cwd=self.root,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert self.process.stdout is not None
        while True:
            line = (await asyncio.wait_for(self.process.stdout.readline(), 60)).decode()
            self.log.append(line)
            if not line:
                raise RuntimeError(f"worker {self.name} exited: {''.join(self.log)}")
            if line.startswith(("worker: serving", "worker: tools only:")):
                break
        asyncio.get_running_loop().create_task(self._drain_output())
        return self

    async def _drain_output(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        while line := await self.process.stdout.readline():
            self.log.append(line.decode())

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def kill(self) -> float:
        """SIGKILL; returns the time.time() of the kill."""
        assert self.process is not None
        at = time.time()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        return at

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.terminate()
            await self.process.wait()


async def wait_until(predicate, timeout: float, what: str, interval: float = 0.1):
    """Poll `predicate` (sync or async) until it returns a truthy value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        await asyncio.sleep(interval)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    rank = max(1, round(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass
class Report:
    """Figures per scenario, written as markdown when REPORT_ENV names a file."""

    rows: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, scenario: str, outcome: str, figures: str) -> None:
        self.rows.append((scenario, outcome, figures))

    def write(self, path: Path) -> None:
        lines = [
            "# Reliability under faults",
            "",
            "Written by `make chaos` (`tests/chaos/`): a real dev server and real `worker.py`",
            "processes on this machine (2 cores), faults injected from outside. Each row is",
            "one scenario; every scenario also asserts its outcome (the test fails otherwise).",
            f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
            "",
            "| scenario | outcome | figures |",
            "|---|---|---|",
            *(f"| {s} | {o} | {f} |" for s, o, f in self.rows),
            "",
        ]
        path.write_text("\n".join(lines), encoding="utf-8")


def summary(values: list[float]) -> str:
    """p50/p99/max of seconds."""
    if not values:
        return "no samples"
    return (
        f"p50 {statistics.median(values):.1f} s, p99 {percentile(values, 99):.1f} s, "
        f"max {max(values):.1f} s (n={len(values)})"
    )
