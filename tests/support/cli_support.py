"""Running agentctl in tests: in this process (`bound_to`, `run_main`), or as the
installed console script (`agentctl`, `bound_to(..., process=True)`).

In this process, a command is `cli.main` itself in a thread of its own, its output
caught per thread: the same code as the console script without a new interpreter's
start (about 1.7 s of CPU each on this 2-core machine, and the suite runs hundreds).
What only a process shows (the console script's entry point, a server that runs until
it is stopped, stdin) stays with `agentctl`.
"""

from __future__ import annotations

import asyncio
import io
import json
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from durable_agents.client import cli

AGENTCTL = str(Path(sys.executable).with_name("agentctl"))
UNREACHABLE = "127.0.0.1:1"
WAIT_SECONDS = 30.0
"""How long `wait_for_status` waits: a bound on a failing test, not a margin (a loaded
machine takes seconds to move a run on)."""

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


class _Routed(io.TextIOBase):
    """`sys.stdout` or `sys.stderr` while commands run in threads: what a command's
    thread writes goes to that command's buffer, anything else where it went before."""

    def __init__(self, name: str, before: TextIO) -> None:
        self._name = name
        self.before = before

    def _target(self) -> TextIO:
        own: TextIO | None = getattr(_caught, self._name, None)
        return own if own is not None else self.before

    def write(self, text: str) -> int:
        text.encode("utf-8")  # what the console script's stream cannot write fails here too
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return False  # as the console script's piped output

    @property
    def encoding(self) -> str:
        return "utf-8"


_caught = threading.local()
_routing = threading.Lock()
_commands_running = 0


@contextmanager
def _caught_output(out: io.StringIO, err: io.StringIO) -> Iterator[None]:
    """This thread's output to `out` and `err` meanwhile (other threads' as before)."""
    global _commands_running
    with _routing:
        if _commands_running == 0:
            sys.stdout = _Routed("out", sys.stdout)  # type: ignore[assignment]
            sys.stderr = _Routed("err", sys.stderr)  # type: ignore[assignment]
        _commands_running += 1
    _caught.out, _caught.err = out, err
    try:
        yield
    finally:
        _caught.out = _caught.err = None
        with _routing:
            _commands_running -= 1
            if _commands_running == 0:  # (unless something replaced them since)
                if isinstance(sys.stdout, _Routed):
                    sys.stdout = sys.stdout.before  # type: ignore[assignment]
                if isinstance(sys.stderr, _Routed):
                    sys.stderr = sys.stderr.before  # type: ignore[assignment]


async def in_process(
    *args: str, connection: tuple[str, ...] = (), out: io.StringIO | None = None
) -> Outcome:
    """agentctl's `cli.main` in a thread of this process, its output caught (in `out`
    when given: a test can watch what is printed while the command runs); the event
    loop (and the test's worker on it) runs on meanwhile."""

    def command() -> Outcome:
        nonlocal out
        out, err = out if out is not None else io.StringIO(), io.StringIO()
        with _caught_output(out, err):
            code = cli.main([*connection, *args])
        return Outcome(code, out.getvalue(), err.getvalue())

    thread = asyncio.get_running_loop().run_in_executor(None, command)
    return await asyncio.wait_for(thread, timeout=60)


def bound_to(worker, *, process: bool = False) -> Ctl:
    """agentctl bound to a test's worker (its server address, namespace and task
    queue): in this process, or as the console script (`process`)."""
    connection = (
        "--address",
        worker.address,
        "--namespace",
        worker.namespace,
        "--task-queue",
        worker.task_queue,
    )
    runner = agentctl if process else in_process

    async def run(*args: str) -> Outcome:
        return await runner(*args, connection=connection)

    async def asked_here(*args: str) -> Outcome:
        return await in_process(*args, connection=connection)

    run.polled = asked_here  # type: ignore[attr-defined]
    return run


async def wait_for_status(ctl, run_id: str, status: str) -> dict:
    """Poll `agentctl status --json` until `status` (bounded). A `bound_to` console
    script is polled in this process (`polled`): waiting is not what its test checks,
    and each poll's interpreter start cost a second of CPU."""
    ctl = getattr(ctl, "polled", ctl)
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    last: Outcome | None = None
    while asyncio.get_running_loop().time() < deadline:
        last = await ctl("status", run_id, "--json")
        if last.code == 0 and json.loads(last.stdout)["status"] == status:
            return json.loads(last.stdout)
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not reach {status}: {last}")
