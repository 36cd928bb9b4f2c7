"""Mistakes a newcomer makes say so at once: agentctl as a process, against the dev
server and a real worker (issue 43, "Mistakes say so at once")."""

from __future__ import annotations

import time
import uuid

from durable_agents.testing import Reply
from tests.support.cli_support import agentctl, bound_to


async def test_start_on_a_queue_no_worker_polls_warns_on_stderr_and_exits_0(worker) -> None:
    typo = f"typo-{uuid.uuid4().hex[:8]}"
    connection = ("--address", worker.address, "--namespace", worker.namespace)
    began = time.monotonic()
    started = await agentctl(
        "start", "assistant", "hi", "--task-queue", typo, connection=connection
    )
    took = time.monotonic() - began
    assert started.code == 0, started.stderr
    run_id = started.stdout.strip()
    assert run_id.startswith("assistant-")  # stdout: only the id, as before
    [line] = started.stderr.strip().splitlines()
    assert line.startswith(f"agentctl: warning: no worker polls task queue '{typo}'"), line
    assert run_id in line and "--task-queue" in line
    assert took < 15, took  # the grace is 2 s; the rest is the interpreter's start
    await worker.client.get_workflow_handle(run_id).terminate("test: no worker")


async def test_start_on_a_polled_queue_says_nothing_more(worker, model_server) -> None:
    model_server.script(Reply(content="hello"))
    ctl = bound_to(worker, process=True)
    started = await ctl("start", "assistant", "hi", "--wait")
    assert started.code == 0, started.stderr
    assert started.stderr == ""
    assert "hello" in started.stdout
