"""While a model call is retried, `agentctl status` and `watch` say so: the attempt, the
last error on one line and when the next attempt starts, from Temporal's
pending-activity information (the run's own status still says `running`)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
import signal
import time
import uuid
from datetime import timedelta

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows.state import RunStatus
from temporalio.common import RetryPolicy

from durable_agents.testing import Fault, Reply
from tests.conftest import serving
from tests.integration.test_codec_worker import (
    base_env,
    read_until,
    served_env,
    start_worker,
)
from tests.support import agents
from tests.support.cli_support import bound_to
from tests.support.runs import held, requested

patient = dataclasses.replace(
    agents.assistant,
    name="patient",
    model_retry_policy=RetryPolicy(
        initial_interval=timedelta(seconds=4), backoff_coefficient=1, maximum_attempts=4
    ),
)
"""Retries its model call every 4 s, 4 attempts: long enough to look at, even with
`agentctl` starting slowly on a busy machine (the suite runs in parallel)."""


@pytest.fixture
async def patient_worker(env, model_server):
    async with serving(env.client, model_server, extra_agents=[patient]) as running:
        yield running


async def first_retry(agents_client: AgentClient, run_id: str) -> list:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = await agents_client.retrying(run_id)
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError("no retrying call within 30 s")


async def test_a_retried_model_call_shows_its_attempt_error_and_next_try(
    patient_worker, model_server
):
    model_server.script(
        Fault(500, "upstream overloaded\nplease\twait"),
        Fault(503, "still overloaded"),
        Fault(503, "still overloaded"),
        Reply(content="done"),
    )
    client = AgentClient(patient_worker.client, task_queue=patient_worker.task_queue)
    run_id = (await client.start("patient", "hi")).id
    [retry] = await first_retry(client, run_id)
    assert (retry.activity, retry.attempt, retry.maximum_attempts) == ("call_model", 2, 4)
    assert "upstream overloaded please wait" in retry.last_error  # one line
    assert "\n" not in retry.last_error and "Traceback" not in retry.last_error
    assert retry.next_attempt_at is not None
    assert (await client.status(run_id)).status is RunStatus.RUNNING  # what the run knows

    ctl = bound_to(patient_worker)
    shown = await ctl("status", run_id)
    assert shown.code == 0, shown.stderr
    first, second = shown.stdout.strip().splitlines()
    assert first.startswith(f"{run_id} · running · turn 0")
    assert second.startswith("  retrying call_model (activity ")
    assert re.search(
        r"attempt [234] of 4 · next at .+ · last error: model unavailable: HTTP 50\d: ", second
    )
    as_json = (await ctl("status", run_id, "--json")).json()  # agentctl takes a moment
    assert as_json["status"] == "running" and as_json["retrying"][0]["attempt"] in (2, 3, 4)

    seen = [e async for e in client.watch(run_id, interval=timedelta(milliseconds=200))]
    assert any(e.retrying and e.retrying[0].attempt == 4 for e in seen)
    assert seen[-1].view.status is RunStatus.COMPLETED and seen[-1].retrying == []
    after = await ctl("status", run_id)
    assert "retrying" not in after.stdout and after.stdout.count("\n") == 1


async def test_status_of_a_run_that_retries_nothing_has_no_retry_lines(
    patient_worker, model_server
):
    release = held(model_server, Reply(content="done"))  # answered once the test has looked
    client = AgentClient(patient_worker.client, task_queue=patient_worker.task_queue)
    run_id = (await client.start("patient", "hi")).id
    await requested(model_server)  # its first attempt is under way
    assert await client.retrying(run_id) == []  # a first attempt is not a retry
    shown = await bound_to(patient_worker)("status", run_id, "--json")
    assert shown.json()["retrying"] == []
    assert model_server.in_flight == 1  # all of it while the first attempt ran
    release.set()
    assert (await client.result(run_id)).status is RunStatus.COMPLETED


async def test_worker_py_logs_each_failed_attempt_at_warning(env, model_server):
    model_server.script(Fault(500, "upstream overloaded"), Reply(content="done"))
    task_queue = f"logs-{uuid.uuid4().hex[:8]}"
    worker = await start_worker(
        "--agents", "tests.support.agents", "--task-queue", task_queue,
        env=served_env(env, model_server),
    )  # fmt: skip
    try:
        await read_until(worker, "worker: serving")
        client = AgentClient(env.client, task_queue=task_queue)
        result = await client.result((await client.start("assistant", "hi")).id)
    finally:
        worker.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(worker.communicate(), 60)
    assert result.status is RunStatus.COMPLETED
    [line] = [ln for ln in err.decode().splitlines() if "Completing activity as failed" in ln]
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ WARNING temporalio\.activity: ", line)
    assert "'activity_type': 'call_model'" in line and "'attempt': 1" in line
    assert "model unavailable: HTTP 500: upstream overloaded" in err.decode()


async def test_worker_py_refuses_an_unknown_log_level():
    worker = await start_worker(
        "--agents", "tests.support.agents", env=base_env(AGENT_LOG_LEVEL="loud")
    )
    _, err = await asyncio.wait_for(worker.communicate(), 60)
    assert worker.returncode == 1
    assert err.decode().strip() == (
        "worker: error: AGENT_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not 'LOUD'"
    )
