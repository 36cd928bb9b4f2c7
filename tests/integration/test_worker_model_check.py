"""`worker.py` checks its model endpoint when it starts (one `GET /models`, no tokens)
and says so in one line; it serves either way; a failed model attempt is one log line."""

from __future__ import annotations

import asyncio
import signal
import uuid

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import RunFailed

from durable_agents.testing import Reply, ScriptedModelServer
from tests.integration.test_codec_worker import read_until, served_env, start_worker
from tests.support.runs import free_port


async def _started(env, model_server, **extra: str) -> tuple[asyncio.subprocess.Process, str]:
    task_queue = f"check-{uuid.uuid4().hex[:8]}"
    worker = await start_worker(
        "--agents", "tests.support.agents", "--task-queue", task_queue,
        env={**served_env(env, model_server), **extra},
    )  # fmt: skip
    return worker, task_queue


async def _stopped(worker: asyncio.subprocess.Process) -> tuple[str, str]:
    worker.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(worker.communicate(), 60)
    return out.decode(), err.decode()


async def test_worker_says_its_model_endpoint_answers_without_spending_tokens(env, model_server):
    worker, _ = await _started(env, model_server)
    try:
        lines = await read_until(worker, "worker: model endpoint")
    finally:
        await _stopped(worker)
    assert lines[-1] == f"worker: model endpoint {model_server.base_url} answers and takes the key"
    assert model_server.model_listings == 1 and model_server.requests == []


async def test_worker_says_its_model_endpoint_refuses_the_key_and_serves_anyway(env):
    with ScriptedModelServer(api_key="the-right-key") as model_server:
        model_server.script(Reply(content="never"))
        worker, task_queue = await _started(env, model_server, OPENAI_API_KEY="a-wrong-key")
        try:
            lines = await read_until(worker, "model endpoint")
            assert lines[-1].startswith(
                f"worker: warning: model endpoint {model_server.base_url} refuses the key "
                "(HTTP 401: Incorrect API key provided)"
            ), lines[-1]
            client = AgentClient(env.client, task_queue=task_queue)
            with pytest.raises(RunFailed) as failed:  # 401 is not retried: said at once
                await client.result((await client.start("assistant", "hi")).id)
        finally:
            out, _ = await _stopped(worker)
    assert "worker: draining" in out  # it served until told to stop
    assert "HTTP 401: Incorrect API key provided" in str(failed.value)


async def test_worker_says_an_unreachable_endpoint_and_logs_one_line_per_attempt(env, model_server):
    nowhere = f"http://127.0.0.1:{free_port()}/v1"
    worker, task_queue = await _started(env, model_server, OPENAI_BASE_URL=nowhere)
    client = AgentClient(env.client, task_queue=task_queue)
    try:
        lines = await read_until(worker, "model endpoint")
        assert lines[-1].startswith(
            f"worker: warning: model endpoint {nowhere} cannot be reached ("
        ), lines[-1]
        assert "serving anyway" in lines[-1]
        run_id = (await client.start("assistant", "hi")).id
        for _ in range(100):  # attempts 1 and 2 (1 s apart) have failed
            retrying = await client.retrying(run_id)
            if retrying and retrying[0].attempt >= 3:
                break
            await asyncio.sleep(0.1)
        await env.client.get_workflow_handle(run_id).terminate("test: no model")
    finally:
        _, err = await _stopped(worker)
    failed = [ln for ln in err.splitlines() if "Completing activity as failed" in ln]
    assert len(failed) >= 2, err
    assert "Traceback" not in err and all("model unavailable" in ln for ln in failed), err
    logged = [ln for ln in err.splitlines() if "temporalio.activity" in ln]
    assert logged == failed, err  # one line each, nothing more from the activity logger
