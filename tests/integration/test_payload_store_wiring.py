"""The production path uses the payload store: `python worker.py` and a client from
`connect()` (what `agentctl` and `AgentClient.connect` use), configured by the
environment alone, run an agent whose tool returns 5 MB, with encryption on."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows.payloads import ToolOutcome
from durable_agents.workflows.state import RunStatus

from durable_agents import gate
from durable_agents.testing import Call, Reply
from tests.integration.test_codec_worker import base_env, read_until, start_worker, stop
from tests.support.runs import tool_results

BLOB = 5_000_000
REFERENCE = b"temporal.api.sdk.v1.ExternalStorageReference"
"""What history holds instead of a payload the store took (the SDK's claim check)."""
KEY_ENTRY = "w1:" + base64.b64encode(b"p" * 32).decode()


def stored_files(store: Path) -> list[Path]:
    return [p for p in store.rglob("*") if p.is_file()]


@pytest.fixture
def production_env(env, model_server, tmp_path, monkeypatch) -> dict[str, str]:
    """The settings an operator gives both the worker and agentctl, set in this
    process too (for `connect()`); nothing else from the surrounding environment."""
    settings = {
        "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
        "TEMPORAL_NAMESPACE": env.client.namespace,
        "AGENT_PAYLOAD_STORE": str(tmp_path / "payloads"),
        "AGENT_CODEC_KEYS": KEY_ENTRY,
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "test",
    }
    for name in ("AGENT_PAYLOAD_THRESHOLD", "AGENT_CODEC_KEYS_FILE", "AGENT_CODEC_PRIMARY"):
        monkeypatch.delenv(name, raising=False)
    for name in ("TEMPORAL_API_KEY", "TEMPORAL_PROFILE", "TEMPORAL_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return settings


async def test_five_megabyte_tool_output_through_worker_py_and_connect(
    production_env, model_server
):
    task_queue = f"wiring-{uuid.uuid4().hex[:8]}"
    worker = await start_worker(
        "--agents",
        "tests.support.agents",
        "--task-queue",
        task_queue,
        env=base_env(**production_env),
    )
    try:
        await read_until(worker, "worker: serving")
        agents = await AgentClient.connect(task_queue=task_queue)  # the converter from env
        model_server.script(
            Reply(tool_calls=(Call("blob", {"size": BLOB}, call_id="b1"),)),
            Reply(content="got it"),
        )
        run_id = (await agents.start("assistant", "make me a blob")).id
        result = await agents.result(run_id)
        state = await agents.state(run_id)  # a query answer over the threshold: stored too
    finally:
        await stop(worker)
    assert result.status is RunStatus.COMPLETED
    assert len(tool_results(state)["b1"].content) == BLOB
    history = await agents.client.get_workflow_handle(run_id).fetch_history()
    assert max(e.ByteSize() for e in history.events) < 256 * 1024  # references, not 5 MB
    # The tool's outcome as the worker recorded it: a reference that this client
    # (connect()'s default converter) follows into the store and decrypts.
    results = [
        e.activity_task_completed_event_attributes.result.payloads[0]
        for e in history.events
        if e.HasField("activity_task_completed_event_attributes")
    ]
    stored = [p for p in results if p.metadata.get("messageType") == REFERENCE]
    assert len(stored) == 1, "the tool's 5 MB outcome did not go to the payload store"
    [outcome] = stored
    [sent] = await agents.client.data_converter.decode([outcome], [dict])
    tool = ToolOutcome.model_validate(sent[gate.RESULT_FIELD])  # with the gate's tag
    assert (tool.call_id, len(tool.content), tool.is_error) == ("b1", BLOB, False)
    files = stored_files(Path(production_env["AGENT_PAYLOAD_STORE"]))
    assert files, "nothing went to the payload store"
    assert not any(b"B" * 1000 in f.read_bytes() for f in files)  # encrypted there too
