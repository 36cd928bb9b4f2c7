"""Fixtures of the chaos suite: one restartable dev server per session, and per test
a scripted model endpoint (restartable on its port), a ledger and worker processes."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_agents.testing import Call, Reply, ScriptedModelServer
from tests.chaos import ledger
from tests.chaos.harness import REPORT_ENV, ROOT, DevServer, Report, WorkerProcess
from tests.support.runs import free_port


def plan(tool: str, args: dict | None = None, *, model_delay: float = 0.0) -> str:
    """A run's input: which tool the scripted model calls (then it answers "done")."""
    return json.dumps({"tool": tool, "args": args or {}, "model_delay": model_delay})


def responder(body: dict) -> Reply:
    """Calls the tool the run's first message names; after a tool result, answers."""
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return Reply(content=f"done: {messages[-1]['content'][:40]}")
    first = next(m for m in messages if m["role"] == "user")
    try:
        wanted = json.loads(first["content"])
    except ValueError:  # not a plan: just answer
        return Reply(content="no plan")
    return Reply(
        tool_calls=(Call(wanted["tool"], wanted["args"]),),
        delay_seconds=wanted.get("model_delay", 0.0),
    )


@pytest.fixture(scope="session")
def report() -> Iterator[Report]:
    figures = Report()
    yield figures
    target = os.environ.get(REPORT_ENV)
    if target and figures.rows:
        figures.write(Path(target))


@pytest.fixture(scope="session")
async def server(tmp_path_factory) -> AsyncIterator[DevServer]:
    dev = DevServer(tmp_path_factory.mktemp("chaos-server") / "temporal.db")
    await dev.start()
    yield dev
    await dev.stop()


@pytest.fixture
async def client(server: DevServer) -> Client:
    return await server.client()


@pytest.fixture
def endpoint() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(responder, port=free_port()) as model:
        yield model


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    path = tmp_path / "ledger.db"
    ledger.connect(path).close()
    return path


class Workers:
    """Starts worker processes on one task queue; stops what is left at the end."""

    def __init__(self, server: DevServer, endpoint: ScriptedModelServer, ledger_path: Path):
        self.task_queue = f"chaos-{uuid.uuid4().hex[:8]}"
        self._server, self._endpoint, self._ledger = server, endpoint, ledger_path
        self.started: list[WorkerProcess] = []

    async def start(self, name: str, *extra_args: str, root: Path = ROOT) -> WorkerProcess:
        process = WorkerProcess(
            root=root,
            name=name,
            address=self._server.address,
            task_queue=self.task_queue,
            model_url=self._endpoint.base_url,
            ledger_path=self._ledger,
            extra_args=extra_args,
        )
        self.started.append(process)
        return await process.start()

    async def stop_all(self) -> None:
        for process in self.started:
            await process.stop()


@pytest.fixture
async def workers(server, endpoint, ledger_path) -> AsyncIterator[Workers]:
    pool = Workers(server, endpoint, ledger_path)
    yield pool
    await pool.stop_all()
