"""Encryption end to end: a real worker and client with the codec on, a real dev server.

The history Temporal stores is fetched raw (by a client without the codec) and
searched for the marker strings of `tests.support.secret_agents`: none may appear.
A control run without the codec shows that the same search does find them.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.codec_server import CodecServer, CodecServerConfig
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.workflows.state import RunStatus
from openai import AsyncOpenAI
from temporalio.api.workflowservice.v1 import (
    DescribeWorkflowExecutionRequest,
    GetWorkflowExecutionHistoryRequest,
    QueryWorkflowRequest,
)
from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from durable_agents.dataplane.codec import (
    KEYS_ENV,
    PRIMARY_ENV,
    CodecKeyError,
    CodecKeys,
    EncryptionCodec,
    codec_data_converter,
)
from durable_agents.gate import GateKeys
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.testing import Call, Reply
from durable_agents.worker import build_worker, temporal_binary
from tests.support.histories import recorded, recorded_id, replayed_workflows
from tests.support.runs import tool_results
from tests.support.secret_agents import (
    ANSWER_MARKER,
    ARGUMENT_MARKER,
    FAILURE_MARKER,
    MARKERS,
    OUTPUT_MARKER,
    PROMPT_MARKER,
    REASON_MARKER,
)

KEY_OLD = "k-2025:" + base64.b64encode(b"o" * 32).decode()
KEY_NEW = "k-2026:" + base64.b64encode(b"n" * 32).decode()
KEYS = CodecKeys.parse(f"{KEY_OLD},{KEY_NEW}", primary="k-2026")
AGENTCTL = str(Path(sys.executable).with_name("agentctl"))
CLI_TOKEN = "t0k-for-the-temporal-cli"


@dataclass(frozen=True)
class CodecWorker:
    """A worker and a client sharing one codec configuration (or none)."""

    client: Client
    agents: AgentClient
    task_queue: str


async def _connect(env, keys: CodecKeys | None, **options: bool) -> Client:
    return await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        data_converter=codec_data_converter(keys, **options),
    )


@pytest.fixture
async def codec_worker(env, model_server) -> AsyncIterator[CodecWorker]:
    """A worker serving `tests.support.secret_agents` whose client encrypts with KEYS."""
    async with _worker(env, model_server, KEYS) as running:
        yield running


@pytest.fixture
async def plain_worker(env, model_server) -> AsyncIterator[CodecWorker]:
    """The same worker with encryption off (the control)."""
    async with _worker(env, model_server, None) as running:
        yield running


class _worker:
    def __init__(self, env, model_server, keys: CodecKeys | None, **options: bool) -> None:
        self.env, self.model_server, self.keys, self.options = env, model_server, keys, options

    async def __aenter__(self) -> CodecWorker:
        client = await _connect(self.env, self.keys, **self.options)
        task_queue = f"codec-{uuid.uuid4().hex[:8]}"
        self.openai = AsyncOpenAI(
            base_url=self.model_server.base_url, api_key="test", max_retries=0
        )
        self.worker = build_worker(
            client,
            registry=AgentRegistry.from_modules(["tests.support.secret_agents"]),
            model_client=self.openai,
            task_queue=task_queue,
        )
        await self.worker.__aenter__()
        return CodecWorker(client, AgentClient(client, task_queue=task_queue), task_queue)

    async def __aexit__(self, *exc: object) -> None:
        await self.worker.__aexit__(*exc)
        await self.openai.close()


def _script(model_server) -> None:
    model_server.script(
        Reply(
            tool_calls=(
                Call("lookup", {"query": ARGUMENT_MARKER}, call_id="c1"),
                Call("explode", {"reason": ARGUMENT_MARKER}, call_id="c2"),
            )
        ),
        Reply(content=f"the answer is {ANSWER_MARKER}"),
    )


async def _secret_run(running: CodecWorker, model_server) -> str:
    """A completed run whose prompt, tool argument, tool output, tool failure and
    answer all carry markers; started by AgentClient (so with its UI summary)."""
    _script(model_server)
    run_id = (await running.agents.start("keeper", f"tell me about {PROMPT_MARKER}")).id
    result = await running.agents.result(run_id)
    assert result.status is RunStatus.COMPLETED
    return run_id


async def _raw_history_and_description(env, run_id: str) -> bytes:
    """Everything the server stores about the run, as the server sends it (no codec)."""
    service = env.client.workflow_service
    history = await service.get_workflow_execution_history(
        GetWorkflowExecutionHistoryRequest(
            namespace=env.client.namespace, execution={"workflow_id": run_id}
        )
    )
    description = await service.describe_workflow_execution(
        DescribeWorkflowExecutionRequest(
            namespace=env.client.namespace, execution={"workflow_id": run_id}
        )
    )
    return history.SerializeToString() + description.SerializeToString()


def _found(raw: bytes) -> list[str]:
    return [m for m in MARKERS if m.encode() in raw]


async def test_encrypted_run_leaves_no_plaintext_in_history(env, codec_worker, model_server):
    run_id = await _secret_run(codec_worker, model_server)
    raw = await _raw_history_and_description(env, run_id)
    assert _found(raw) == []
    assert b"binary/encrypted" in raw and b"k-2026" in raw  # encrypted, key id in metadata
    assert PROMPT_MARKER not in run_id  # run ids never carry content
    # The JSON form (base64 payloads) a `temporal workflow show` would print: no marker.
    history = await env.client.get_workflow_handle(run_id).fetch_history()
    assert not [m for m in MARKERS if m in history.to_json()]


async def test_ui_summaries_are_encrypted_too(env, codec_worker, model_server):
    # The run's summary (AgentClient puts the input's first words in it) and the
    # activity summaries (a tool's arguments) are user metadata: through the codec.
    run_id = await _secret_run(codec_worker, model_server)
    history = await env.client.get_workflow_handle(run_id).fetch_history()
    summaries = [
        e.user_metadata.summary for e in history.events if e.user_metadata.HasField("summary")
    ]
    assert len(summaries) >= 4  # the run, describe agent, 2 model calls, 2 tools
    assert all(s.metadata["encoding"] == b"binary/encrypted" for s in summaries)
    decoded = await codec_worker.client.data_converter.decode(summaries, [str] * len(summaries))
    assert f"keeper: tell me about {PROMPT_MARKER}" in decoded
    assert any(ARGUMENT_MARKER in s for s in decoded if s.startswith("tool lookup"))


async def test_current_details_for_the_ui_are_encrypted_on_the_wire(
    env, codec_worker, model_server
):
    # The UI reads "current details" (pending calls, last tool result) through the
    # built-in metadata query: its answer leaves the worker encrypted.
    run_id = await _secret_run(codec_worker, model_server)
    response = await env.client.workflow_service.query_workflow(
        QueryWorkflowRequest(
            namespace=env.client.namespace,
            execution={"workflow_id": run_id},
            query={"query_type": "__temporal_workflow_metadata"},
        )
    )
    raw = response.SerializeToString()
    assert b"binary/encrypted" in raw and _found(raw) == []
    metadata = await codec_worker.client.get_workflow_handle(run_id).query(
        "__temporal_workflow_metadata"
    )
    assert "Last tool result" in metadata.current_details


async def test_control_run_without_codec_shows_every_marker(env, plain_worker, model_server):
    # Proves the search above would find the markers if they were there.
    run_id = await _secret_run(plain_worker, model_server)
    assert _found(await _raw_history_and_description(env, run_id)) == list(MARKERS)


async def test_failure_message_is_encrypted_but_readable_with_the_keys(
    env, codec_worker, model_server
):
    run_id = await _secret_run(codec_worker, model_server)
    state = await codec_worker.agents.state(run_id)
    results = tool_results(state)
    assert FAILURE_MARKER in results["c2"].content and results["c2"].is_error
    assert OUTPUT_MARKER in results["c1"].content
    assert state.final_output == f"the answer is {ANSWER_MARKER}"
    # Raw: the failed activity's message is "Encoded failure", the real one is encrypted.
    history = await env.client.get_workflow_handle(run_id).fetch_history()
    failures = [
        e.activity_task_failed_event_attributes.failure
        for e in history.events
        if e.HasField("activity_task_failed_event_attributes")
    ]
    assert failures and all(f.message == "Encoded failure" for f in failures)
    assert all(f.encoded_attributes.metadata["encoding"] == b"binary/encrypted" for f in failures)


async def test_client_without_the_keys_gets_an_error_naming_the_key(
    env, codec_worker, model_server
):
    run_id = await _secret_run(codec_worker, model_server)
    keyless = AgentClient(await _connect(env, None), task_queue=codec_worker.task_queue)
    with pytest.raises(CodecKeyError) as raised:
        await keyless.state(run_id)
    assert raised.value.key_id == "k-2026"
    assert "codec key 'k-2026'" in raised.value.message
    assert "no codec keys are configured" in raised.value.message
    # Only the old key: the payloads name the new one.
    old_only = CodecKeys.parse(KEY_OLD)
    stale = AgentClient(await _connect(env, old_only), task_queue=codec_worker.task_queue)
    with pytest.raises(CodecKeyError, match=r"codec key 'k-2026', which is not configured"):
        await stale.state(run_id)


async def _agentctl(env, *args: str, codec_env: dict[str, str]) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_CODEC")}
    process = await asyncio.create_subprocess_exec(
        AGENTCTL,
        "--address",
        env.client.service_client.config.target_host,
        "--namespace",
        env.client.namespace,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**environ, **codec_env},
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


async def test_agentctl_export_decrypts_with_the_keys_and_refuses_without(
    env, codec_worker, model_server
):
    run_id = await _secret_run(codec_worker, model_server)
    queue = ("--task-queue", codec_worker.task_queue)
    keys_env = {KEYS_ENV: f"{KEY_OLD},{KEY_NEW}", PRIMARY_ENV: "k-2026"}
    code, out, err = await _agentctl(env, *queue, "export", run_id, codec_env=keys_env)
    assert code == 0, err
    snapshot = json.loads(out)
    assert PROMPT_MARKER in json.dumps(snapshot)  # readable: decrypted client side
    code, out, err = await _agentctl(env, *queue, "export", run_id, codec_env={})
    assert (code, out) == (1, "")
    [line] = err.strip().splitlines()
    assert line.startswith("agentctl: error: payload is encrypted with codec key 'k-2026'")
    assert base64.b64encode(b"n" * 32).decode() not in err


async def test_encrypted_history_replays_with_the_codec_converter(env, codec_worker, model_server):
    run_id = await _secret_run(codec_worker, model_server)
    history: WorkflowHistory = await codec_worker.client.get_workflow_handle(run_id).fetch_history()
    replayer = Replayer(
        interceptors=[GateInterceptor(None)],
        workflows=[AgentWorkflow],
        data_converter=codec_data_converter(KEYS),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
    # After a rotation (new primary, old key kept) it still replays.
    rotated = CodecKeys(keys={**KEYS.keys, "k-2027": b"r" * 32}, primary="k-2027")
    replayer = Replayer(
        interceptors=[GateInterceptor(None)],
        workflows=[AgentWorkflow],
        data_converter=codec_data_converter(rotated),
    )
    assert (await replayer.replay_workflow(history)).replay_failure is None


async def test_histories_recorded_before_encryption_still_replay_with_it_on():
    # Turning encryption on must not break running workflows: plain payloads pass through.
    replayer = Replayer(
        namespace="default",  # as the recording's workers, with their gate key
        interceptors=[GateInterceptor(GateKeys.development())],
        workflows=replayed_workflows(),
        data_converter=codec_data_converter(KEYS),
    )
    for path in recorded():
        history = WorkflowHistory.from_json(recorded_id(path), path.read_text())
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, f"{path.parent.name}/{path.name}"


async def test_temporal_cli_reads_and_approves_through_the_codec_server(
    env, codec_worker, model_server
):
    """The `temporal` CLI, an independent client of the remote codec protocol:
    `workflow show` decrypts through the codec server, `workflow signal` encrypts."""
    model_server.script(
        Reply(tool_calls=(Call("disclose", {"topic": ARGUMENT_MARKER}, call_id="d1"),)),
        Reply(content="disclosed"),
    )
    run_id = (await codec_worker.agents.start("keeper", f"tell me about {PROMPT_MARKER}")).id
    await _wait_for_pending(codec_worker.agents, run_id)
    server = CodecServer(
        ("127.0.0.1", 0), EncryptionCodec(KEYS), CodecServerConfig(tokens=(CLI_TOKEN,))
    )
    server.serve_in_thread()
    cli = (
        *("--address", env.client.service_client.config.target_host),
        *("--namespace", env.client.namespace, "--codec-endpoint", server.url),
        *("--codec-auth", f"Bearer {CLI_TOKEN}"),
    )
    try:
        decision = {"call_id": "d1", "approver": "ops", "reason": REASON_MARKER}
        signal = ("workflow", "signal", "-w", run_id, "--name", "approve")
        code, _, err = await _temporal(*signal, "--input", json.dumps(decision), *cli)
        assert code == 0, err
        assert (await codec_worker.agents.result(run_id)).status is RunStatus.COMPLETED
        code, out, err = await _temporal("workflow", "show", "-w", run_id, "-o", "json", *cli)
        assert code == 0, err
    finally:
        server.shutdown()
        server.server_close()
    shown = [
        base64.b64decode(p["data"]).decode()
        for p in _payloads(json.loads(out))
        if base64.b64decode(p["metadata"]["encoding"]) == b"json/plain"
    ]
    assert any(PROMPT_MARKER in text for text in shown)
    assert any(REASON_MARKER in text for text in shown)  # the CLI's signal, decrypted back
    raw = await _raw_history_and_description(env, run_id)
    assert PROMPT_MARKER.encode() not in raw and REASON_MARKER.encode() not in raw


async def _wait_for_pending(agents: AgentClient, run_id: str) -> None:
    for _ in range(150):
        try:
            if (await agents.status(run_id)).pending_approvals:
                return
        except Exception:  # the first workflow task may not have run yet
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run_id} never waited for approval")


async def _temporal(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def _payloads(node: object) -> list[dict]:
    """Every payload object (`metadata` + `data`) anywhere in a JSON history."""
    if isinstance(node, list):
        return [p for item in node for p in _payloads(item)]
    if not isinstance(node, dict):
        return []
    if "metadata" in node and "data" in node:
        return [node]
    return [p for value in node.values() for p in _payloads(value)]
