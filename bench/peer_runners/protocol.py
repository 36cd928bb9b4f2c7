"""What `bench.peers` and its runners agree on; imported by every runner, including
those that run in a peer's own virtualenv, so: the standard library and temporalio only.

A runner is a script: `PYTHON RUNNER --target HOST:PORT --turns N --size S
[--server-pid PID]`, the model's base URL in OPENAI_BASE_URL. It serves its own
worker in its own process on a fresh task queue, runs one warm-up run of one tool
turn (imports, sandbox, connections: a fresh worker's one-time costs), then the
measured run of N tool turns of S-byte outputs, and prints one line of JSON (`Result`)
last (`emit`, marked with RESULT_MARK). The model (bench.peers' scripted server)
reads N and S from the task (`task`) and answers "finished" after the N-th tool turn:
a run that ends otherwise (another answer, a failed status) is reported as such, not
timed as a run of N turns.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import re
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

TIMEOUT_S = 300.0
"""A measured run still open after this long is terminated and reported stuck."""
TOOL = "report"
"""The one tool of every kind: `report(size: int, part: int) -> str`, `size` bytes."""
ANSWER = "finished"
"""The scripted model's last answer; the output of a run that did all its turns."""
RESULT_MARK = "bench.peers result: "
MAX_TURNS, MAX_SIZE = 10_000, 10_000_000
_TASK = re.compile(r"^bench: ([0-9]{1,5}) tool turns of ([0-9]{1,8}) bytes$")


def task(turns: int, size: int) -> str:
    """The task a run is started with; the scripted model answers by it."""
    return f"bench: {turns} tool turns of {size} bytes"


def parse_task(text: str) -> tuple[int, int] | None:
    """(turns, size) of a `task` text, None for any other text or a task beyond
    MAX_TURNS / MAX_SIZE."""
    found = _TASK.match(text.strip())
    if not found:
        return None
    turns, size = int(found[1]), int(found[2])
    return (turns, size) if 1 <= turns <= MAX_TURNS and size <= MAX_SIZE else None


def report_output(size: int, part: int) -> str:
    """What `report` returns: `size` bytes (at least its head)."""
    head = f"part {part}: "
    return head + "x" * max(size - len(head), 0)


@dataclasses.dataclass
class Args:
    target: str
    turns: int
    size: int
    server_pid: int | None
    queue: str


def parse_args(kind: str) -> Args:
    parser = argparse.ArgumentParser(description=f"bench.peers runner: {kind}")
    parser.add_argument("--target", required=True)
    parser.add_argument("--turns", type=int, required=True)
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--server-pid", type=int)
    given = parser.parse_args()
    if not os.environ.get("OPENAI_BASE_URL"):
        parser.error("OPENAI_BASE_URL (the scripted model's base URL) is not set")
    queue = f"bench-peer-{kind}-{uuid.uuid4().hex[:6]}"
    return Args(given.target, given.turns, given.size, given.server_pid, queue)


@dataclasses.dataclass
class Result:
    workflow_id: str
    run_id: str
    wall_s: float
    cpu_s: float
    """This process's CPU (its worker and client) during the measured run."""
    server_cpu_s: float | None
    """The dev server's CPU during the measured run (None: no --server-pid)."""
    completed: str
    """"completed", or why not."""


def cpu_of(pid: int | None) -> float | None:
    """User + system CPU seconds of process `pid` so far (Linux /proc)."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _outcome(
    handle: WorkflowHandle, answer: Callable[[Any], str], timeout: float = TIMEOUT_S
) -> str:
    """ "completed" when the run answered ANSWER; else what happened."""
    try:
        said = answer(await asyncio.wait_for(handle.result(), timeout))
    except WorkflowFailureError as err:  # e.g. the server ended it at its history limit
        return f"**failed**: {str(err.cause or err)[:120]}"
    except TimeoutError:
        with contextlib.suppress(RPCError):
            await handle.terminate("bench: stuck")
        return f"**stuck** after {timeout:g} s"
    return "completed" if said == ANSWER else f"**wrong end**: {said[:120]!r}"


async def measure(
    args: Args,
    start: Callable[[str], Awaitable[WorkflowHandle]],
    answer: Callable[[Any], str] = str,
) -> Result:
    """Warm up with one tool turn, then time the measured run; `start(task)` starts one,
    `answer(result)` is what it answered (ANSWER, or why the run ended otherwise)."""
    warm = await start(task(1, args.size))
    warmed = await _outcome(warm, answer)
    if warmed != "completed":
        return Result(warm.id, warm.first_execution_run_id or "", 0.0, 0.0, None,
                      f"**warm-up run**: {warmed}")  # fmt: skip
    server, cpu, began = cpu_of(args.server_pid), time.process_time(), time.perf_counter()
    handle = await start(task(args.turns, args.size))
    completed = await _outcome(handle, answer)
    wall, used = time.perf_counter() - began, time.process_time() - cpu
    server_after = cpu_of(args.server_pid)
    return Result(
        workflow_id=handle.id,
        run_id=handle.first_execution_run_id or handle.result_run_id or "",
        wall_s=wall,
        cpu_s=used,
        server_cpu_s=None if server is None or server_after is None else server_after - server,
        completed=completed,
    )


def emit(result: Result) -> None:
    """Print the result for bench.peers and end the process at once (nothing printed at
    interpreter exit, e.g. by the SDK runtime's threads, can garble or lose it)."""
    print(RESULT_MARK + json.dumps(dataclasses.asdict(result)), flush=True)
    sys.stderr.flush()
    os._exit(0)


def read_result(output: str) -> Result | None:
    """The result a runner printed (the last marked line), None if there is none."""
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_MARK):
            try:
                return Result(**json.loads(line[len(RESULT_MARK) :]))
            except (ValueError, TypeError):
                return None
    return None
