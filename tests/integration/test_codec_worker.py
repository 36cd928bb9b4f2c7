"""`python worker.py` with encryption: start-up output, health file, the dev UI's codec server."""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest
from durable_agents.client.agent_client import AgentClient
from temporalio.client import Client

from durable_agents import gate
from durable_agents.dataplane.codec import CodecKeys, codec_data_converter
from durable_agents.testing import Reply
from tests.integration.test_worker import free_port, run

ROOT = Path(__file__).resolve().parents[2]
KEY_ENTRY = "k1:" + base64.b64encode(b"w" * 32).decode()


def base_env(**extra: str) -> dict[str, str]:
    keep = {
        k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_", "TEMPORAL_"))
    }
    return {**keep, gate.ENV: os.environ[gate.ENV], **extra}


def served_env(env, model_server, **extra: str) -> dict[str, str]:
    """`base_env` for a `worker.py` on the session's dev server and `model_server`
    (no payload store)."""
    return base_env(
        TEMPORAL_ADDRESS=env.client.service_client.config.target_host,
        TEMPORAL_NAMESPACE=env.client.namespace,
        OPENAI_BASE_URL=model_server.base_url,
        OPENAI_API_KEY="test",
        AGENT_PAYLOAD_STORE="off",
        **extra,
    )


async def start_worker(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "worker.py",
        *args,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def read_until(process: asyncio.subprocess.Process, marker: str) -> list[str]:
    lines: list[str] = []
    assert process.stdout is not None
    while True:
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
        if not line:
            _, err = await process.communicate()
            raise AssertionError(f"worker exited before {marker!r}: {lines} {err.decode()}")
        lines.append(line.rstrip())
        if marker in line:
            return lines


async def stop(process: asyncio.subprocess.Process) -> None:
    """SIGTERM, then check the worker took its graceful path (drain). The exit code is
    not checked: the SDK's runtime can crash the exiting interpreter (sdk-python#300)."""
    process.send_signal(signal.SIGTERM)
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert "worker: draining" in out.decode(), err.decode()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"AGENT_CODEC_KEYS": "k1:nope!"}, "AGENT_CODEC_KEYS: codec key 'k1' is not valid base64"),
        ({"AGENT_CODEC_PRIMARY": "k1"}, "AGENT_CODEC_PRIMARY is set but no keys"),
    ],
)
async def test_worker_refuses_a_bad_key_configuration_in_one_line(env, message):
    code, _, err = await run(
        "worker.py", "--agents", "tests.support.agents", env=base_env(OPENAI_API_KEY="x", **env)
    )
    assert code == 1
    [line] = err.strip().splitlines()
    assert line.startswith(f"worker: error: {message}")


async def test_codec_server_options_need_dev():
    code, _, err = await run(
        "worker.py",
        "--agents",
        "tests.support.agents",
        "--codec-server",
        env=base_env(OPENAI_API_KEY="x"),
    )
    assert (code, err.strip()) == (
        1,
        "worker: error: --codec-server and --ui-codec-endpoint go with --dev",
    )


async def test_worker_says_encryption_is_on_serves_encrypted_runs_and_keeps_a_health_file(
    env, model_server, tmp_path
):
    model_server.script(Reply(content="done"))
    task_queue = f"enc-{uuid.uuid4().hex[:8]}"
    health = tmp_path / "healthy"
    process = await start_worker(
        env=base_env(
            TEMPORAL_ADDRESS=env.client.service_client.config.target_host,
            TEMPORAL_NAMESPACE=env.client.namespace,
            OPENAI_API_KEY="test",
            OPENAI_BASE_URL=model_server.base_url,
            AGENT_MODULES="tests.support.secret_agents",
            AGENT_TASK_QUEUE=task_queue,
            AGENT_CODEC_KEYS=KEY_ENTRY,
            AGENT_HEALTH_FILE=str(health),
        )
    )
    try:
        lines = await read_until(process, "payload encryption")
        assert lines[-1] == "worker: payload encryption on (AES-256-GCM, encrypting with key 'k1')"
        assert base64.b64encode(b"w" * 32).decode() not in "\n".join(lines)
        assert health.exists()
        client = await Client.connect(
            env.client.service_client.config.target_host,
            namespace=env.client.namespace,
            data_converter=codec_data_converter(CodecKeys.parse(KEY_ENTRY)),
        )
        agents = AgentClient(client, task_queue=task_queue)
        run_id = (await agents.start("keeper", "hello")).id
        assert (await asyncio.wait_for(agents.result(run_id), 30)).final_output == "done"
    finally:
        await stop(process)
    assert not health.exists()  # removed once the worker has drained


async def test_worker_says_encryption_is_off(env, model_server):
    process = await start_worker(
        env=base_env(
            TEMPORAL_ADDRESS=env.client.service_client.config.target_host,
            OPENAI_API_KEY="test",
            OPENAI_BASE_URL=model_server.base_url,
            AGENT_MODULES="tests.support.secret_agents",
            AGENT_TASK_QUEUE=f"plain-{uuid.uuid4().hex[:8]}",
        )
    )
    try:
        lines = await read_until(process, "payload encryption")
        assert lines[-1].startswith("worker: payload encryption off (AGENT_CODEC_KEYS")
    finally:
        await stop(process)


def get_json(port: int, path: str) -> dict:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("GET", path)
    body = connection.getresponse().read()
    connection.close()
    return json.loads(body)


async def test_dev_worker_points_the_ui_at_its_codec_server(tmp_path):
    port, ui_port, codec_port = free_port(), free_port(), free_port()
    process = await start_worker(
        *("--dev", "--port", str(port), "--ui-port", str(ui_port)),
        *("--codec-server", str(codec_port), "--dev-db", str(tmp_path / "dev.db")),
        env=base_env(
            OPENAI_API_KEY="unused",
            AGENT_MODULES="tests.support.secret_agents",
            AGENT_CODEC_KEYS=KEY_ENTRY,
        ),
    )
    try:
        lines = await read_until(process, "payload encryption")
        codec_url = f"http://127.0.0.1:{codec_port}"
        assert (
            f"worker: codec server for the UI on {codec_url} (no token check, loopback only)"
            in lines
        )
        settings = await asyncio.to_thread(get_json, ui_port, "/api/v1/settings")
        assert settings["Codec"]["Endpoint"] == codec_url
        connection = http.client.HTTPConnection("127.0.0.1", codec_port, timeout=10)
        connection.request("OPTIONS", "/decode", headers={"Origin": f"http://localhost:{ui_port}"})
        answer = connection.getresponse()
        answer.read()
        assert answer.headers["Access-Control-Allow-Origin"] == f"http://localhost:{ui_port}"
    finally:
        await stop(process)
