"""Running agentctl in tests: in-process (`run_main`) or as the installed console script."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from durable_agents.client import cli

AGENTCTL = str(Path(sys.executable).with_name("agentctl"))
UNREACHABLE = "127.0.0.1:1"
WAIT_SECONDS = 10.0

Ctl = Callable[..., Awaitable["Outcome"]]


def run_main(argv: list[str]) -> int:
    """`cli.main` in its own thread: its `asyncio.run` must not touch the tests' event loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(cli.main, argv).result()


def error_lines(stderr: str) -> list[str]:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected exactly one line on stderr, got: {stderr!r}"
    assert lines[0].startswith("agentctl: error: "), lines[0]
    return lines


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str

    def json(self) -> object:
        assert self.code == 0, self.stderr
        return json.loads(self.stdout)


async def agentctl(*args: str, connection: tuple[str, ...] = ()) -> Outcome:
    """Run the installed console script without blocking the event loop (the worker runs on it)."""
    process = await asyncio.create_subprocess_exec(
        AGENTCTL,
        *connection,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return Outcome(process.returncode, stdout.decode(), stderr.decode())


def bound_to(worker) -> Ctl:
    """`agentctl` bound to a test's worker (its server address, namespace and task queue)."""
    connection = (
        "--address",
        worker.address,
        "--namespace",
        worker.namespace,
        "--task-queue",
        worker.task_queue,
    )

    async def run(*args: str) -> Outcome:
        return await agentctl(*args, connection=connection)

    return run


async def wait_for_status(ctl, run_id: str, status: str) -> dict:
    """Poll `agentctl status --json` until `status` (bounded)."""
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    last: Outcome | None = None
    while asyncio.get_running_loop().time() < deadline:
        last = await ctl("status", run_id, "--json")
        if last.code == 0 and json.loads(last.stdout)["status"] == status:
            return json.loads(last.stdout)
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not reach {status}: {last}")
