"""A worker in its own process, so that its RSS and CPU are its alone.

`python worker.py --agents bench.agents` against the bench's dev server, the
model being the bench's scripted server (OPENAI_BASE_URL, OPENAI_API_KEY=x).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from durable_agents import gate

ROOT = Path(__file__).resolve().parent.parent
READY = "worker: serving agents"


@contextlib.contextmanager
def worker_process(
    target: str,
    base_url: str,
    task_queue: str,
    *,
    command: list[str] | None = None,
    extra: Sequence[str] = (),
) -> Iterator[subprocess.Popen]:
    """`python worker.py` (or `command`) serving `bench.agents` until the block ends, with
    `extra` arguments; its payload store (on by default) in a temporary directory, not the
    user's cache."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TEMPORAL_", "AGENT_", "OPENAI_", "SCRIPTED_"))
    }
    env.update(
        TEMPORAL_ADDRESS=target,
        TEMPORAL_NAMESPACE="default",
        OPENAI_BASE_URL=base_url,
        OPENAI_API_KEY="x",
    )
    # the gate key of this bench process (bench.common sets one), shared with its workers
    env[gate.ENV] = os.environ.setdefault(gate.ENV, gate.new_key_entry("bench"))
    argv = command or [sys.executable, "worker.py"]
    argv = [*argv, "--agents", "bench.agents", "--task-queue", task_queue, *extra]
    with tempfile.TemporaryFile("w+") as log, tempfile.TemporaryDirectory() as store:
        env["AGENT_PAYLOAD_STORE"] = store
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_ready(proc, log)
            yield proc
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(proc: subprocess.Popen, log, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read()
        if READY in text:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"the worker exited ({proc.returncode}):\n{text[-2000:]}")
        time.sleep(0.1)
    raise RuntimeError("the worker did not start within 60 s")
