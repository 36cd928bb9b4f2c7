"""Metrics (worker.py's Prometheus endpoint, scraped after a run) and OpenTelemetry traces."""

from __future__ import annotations

import asyncio
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from durable_agents.activities import telemetry
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client import AgentClient
from durable_agents.client.errors import RunFailed
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult
from durable_agents.workflows.state import RunStatus
from openai import AsyncOpenAI
from opentelemetry import trace as otel_trace
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from durable_agents.testing import Call, Fault, Reply
from durable_agents.worker import build_worker
from tests.integration.test_agent_client import wait_for_status
from tests.integration.test_worker import free_port, run, without_openai_key
from tests.support.ops_support import (
    Metered,
    eventually,
    metered_client,
    metered_worker,
    samples,
    total,
    worker_process,
)
from tests.support.runs import start

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="e1")
STALL = Call("stall", {"seconds": 4}, call_id="s1")


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return response.read().decode()


async def test_worker_metrics_count_model_calls_tokens_and_tools(env, model_server):
    model_server.script(
        Fault(503, "overloaded"),
        Reply(
            tool_calls=(Call("add", {"a": 1, "b": 2}), Call("flaky", {})),
            usage=(100, 20),
        ),
        Reply(content="3, and flaky failed", usage=(150, 10), cached_tokens=90, reasoning_tokens=4),
    )
    port, queue = free_port(), f"metrics-{uuid.uuid4().hex[:8]}"
    async with worker_process(
        env,
        model_server,
        AGENT_MODULES="tests.support.agents",
        AGENT_TASK_QUEUE=queue,
        AGENT_METRICS_PORT=f"127.0.0.1:{port}",
    ) as process:
        assert f"worker: Prometheus metrics on http://127.0.0.1:{port}/metrics" in process.seen
        worker = SimpleNamespace(client=env.client, task_queue=queue)
        result = await asyncio.wait_for((await start(worker)).result(), 60)
        assert result.status is RunStatus.COMPLETED

        def ours():
            return [s for s in samples(scrape(port)) if s[1].get("task_queue") == queue]

        found = ours()
        for _ in range(50):  # the SDK records its completion counters just after the reply
            if total(found, "temporal_workflow_completed"):
                break
            await asyncio.sleep(0.1)
            found = ours()
    model = {"model": "test-model"}
    assert total(found, telemetry.MODEL_CALLS, **model, outcome="ok") == 2
    assert total(found, telemetry.MODEL_CALLS, **model, outcome="ModelUnavailable") == 1
    assert total(found, telemetry.MODEL_TOKENS, **model, token_type="input") == 250
    assert total(found, telemetry.MODEL_TOKENS, **model, token_type="output") == 30
    assert total(found, telemetry.MODEL_TOKENS, **model, token_type="cached_input") == 90
    assert total(found, telemetry.MODEL_TOKENS, **model, token_type="reasoning") == 4
    assert total(found, telemetry.TOOL_CALLS, tool="add") == 1
    assert total(found, telemetry.TOOL_CALLS, tool="flaky") == 3  # its retry policy: 3 attempts
    assert total(found, telemetry.TOOL_FAILURES, tool="flaky", reason="raised") == 3
    assert total(found, telemetry.TOOL_FAILURES, tool="add") == 0
    assert total(found, "temporal_activity_execution_latency_count", activity_type="run_tool") == 4
    assert total(found, "temporal_workflow_completed", workflow_type="AgentWorkflow") == 1
    # The workflow's own (workflows/metrics.py) come out of the same endpoint.
    assert total(found, "agent_turns", agent="assistant") == 2
    assert total(found, "agent_runs_finished", agent="assistant", status="completed") == 1
    assert process.returncode == 0, process.err.decode()


@pytest.fixture(scope="module")
async def metered(env) -> Metered:
    """One Prometheus-serving runtime for the module's in-process workers."""
    return await metered_client(env)


async def scraped(metered: Metered, queue: str, ready) -> list:
    """The samples of `queue` once `ready(samples)` holds (recording lags the reply)."""

    async def read():
        return [s for s in samples(await asyncio.to_thread(metered.scrape)) if _of(s, queue)]

    return await eventually(read, ready)


def _of(sample, queue: str) -> bool:
    return sample[1].get("task_queue") == queue


async def test_workflow_metrics_time_approval_waits_and_count_cancelled_runs(metered, model_server):
    async with metered_worker(metered, model_server) as queue:
        agents = AgentClient(metered.client, task_queue=queue)
        model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
        approved = (await agents.start("assistant", "mail a@b.c")).id
        await wait_for_status(agents, approved, RunStatus.AWAITING_APPROVAL)
        await asyncio.sleep(0.5)  # the wait is measured in workflow time: make it visible
        await agents.approve(approved, "e1", approver="ann")
        assert (await agents.result(approved)).final_output == "sent"

        model_server.script(Reply(tool_calls=(EMAIL,)))
        cancelled = (await agents.start("assistant", "mail a@b.c")).id
        await wait_for_status(agents, cancelled, RunStatus.AWAITING_APPROVAL)
        await agents.cancel(cancelled)
        with pytest.raises(RunFailed, match="was cancelled"):
            await agents.result(cancelled)
        found = await scraped(
            metered, queue, lambda f: total(f, "agent_runs_finished", status="cancelled")
        )
    mine = {"agent": "assistant"}
    assert total(found, "agent_runs_finished", **mine, status="cancelled") == 1
    assert total(found, "agent_runs_finished", **mine, status="completed") == 1
    assert total(found, "agent_approval_wait_count", **mine, tool="send_email") == 1
    assert total(found, "agent_approval_wait_count", tool="add") == 0
    assert total(found, "agent_approval_wait_sum", **mine, tool="send_email") >= 500


async def test_a_tool_cut_off_by_its_timeout_counts_as_a_timed_out_failure(metered, model_server):
    model_server.script(Reply(tool_calls=(STALL,)), Reply(content="it stalled"))
    async with metered_worker(
        metered, model_server, modules=("tests.support.ops_agents",)
    ) as queue:
        handle = await metered.client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="napper", input="stall"),
            id=f"stall-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
            result_type=AgentResult,
        )
        assert (await asyncio.wait_for(handle.result(), 30)).final_output == "it stalled"
        found = await scraped(metered, queue, lambda f: total(f, telemetry.TOOL_FAILURES))
    assert total(found, telemetry.TOOL_CALLS, tool="stall") == 1
    assert total(found, telemetry.TOOL_FAILURES, tool="stall") == 1
    assert total(found, telemetry.TOOL_FAILURES, tool="stall", reason="timed_out") == 1


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nope", "metrics port must be PORT or HOST:PORT, not 'nope'"),
        ("127.0.0.1:70000", "metrics port must be PORT or HOST:PORT"),
    ],
)
async def test_worker_refuses_a_bad_metrics_port_with_one_line(value, message):
    env = {**without_openai_key(), "OPENAI_API_KEY": "test-key"}
    code, _, err = await run(
        "worker.py", "--agents", "tests.support.agents", "--metrics-port", value, env=env
    )
    assert code == 1
    [line] = err.strip().splitlines()
    assert line.startswith("worker: error: ") and message in line


def test_metrics_address_defaults_to_every_interface():
    assert telemetry.metrics_address("9464") == "127.0.0.1:9464"
    assert telemetry.metrics_address("0.0.0.0:9464") == "0.0.0.0:9464"
    assert telemetry.metrics_address("127.0.0.1:9464") == "127.0.0.1:9464"


@dataclass(frozen=True)
class Traced:
    exporter: InMemorySpanExporter
    tracing: telemetry.Tracing


@pytest.fixture
def traced() -> Iterator[Traced]:
    """Tracing through Temporal's plugin into memory, for one test only.

    The plugin traces through OpenTelemetry's process-wide tracer provider, which the
    API lets a process set once: the fixture sets it, then shuts it down (flushing its
    spans) and restores what was there, as OpenTelemetry's own test helpers do."""
    saved = (otel_trace._TRACER_PROVIDER_SET_ONCE, otel_trace._TRACER_PROVIDER)
    otel_trace._TRACER_PROVIDER_SET_ONCE, otel_trace._TRACER_PROVIDER = Once(), None
    exporter = InMemorySpanExporter()
    tracing = telemetry.tracing(span_processor=SimpleSpanProcessor(exporter))
    assert otel_trace.get_tracer_provider() is tracing.provider
    try:
        yield Traced(exporter, tracing)
    finally:
        tracing.provider.shutdown()
        otel_trace._TRACER_PROVIDER_SET_ONCE, otel_trace._TRACER_PROVIDER = saved


async def test_one_trace_per_run_with_model_and_tool_spans(env, model_server, traced):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 2, "b": 3}),), usage=(12, 4)), Reply(content="5")
    )
    queue = f"otel-{uuid.uuid4().hex[:8]}"
    openai_client = AsyncOpenAI(base_url=model_server.base_url, api_key="t", max_retries=0)
    running = build_worker(
        env.client,
        registry=AgentRegistry.from_modules(["tests.support.agents"]),
        model_client=openai_client,
        task_queue=queue,
        plugins=[traced.tracing.plugin],
    )
    async with running:
        worker = SimpleNamespace(client=env.client, task_queue=queue)
        handle = await start(worker)
        assert (await handle.result()).final_output == "5"
    await openai_client.close()

    mine = [s for s in traced.exporter.get_finished_spans() if _run_of(s) == handle.id]
    names = sorted(s.name for s in mine)
    assert "RunWorkflow:AgentWorkflow" in names
    assert names.count("RunActivity:call_model") == 2
    assert names.count("RunActivity:run_tool") == 1
    assert len({s.context.trace_id for s in mine}) == 1, "one trace per run"
    [tool] = [s for s in mine if s.name == "RunActivity:run_tool"]
    assert tool.attributes["agent.tool"] == "add"
    first_model_call = min(
        (s for s in mine if s.name == "RunActivity:call_model"), key=lambda s: s.start_time
    )
    assert first_model_call.attributes["agent.model"] == "test-model"
    assert first_model_call.attributes["agent.input_tokens"] == 12
    workflow_span = next(s for s in mine if s.name == "RunWorkflow:AgentWorkflow")
    assert tool.parent is not None
    assert tool.context.trace_id == workflow_span.context.trace_id


def _run_of(span) -> str | None:
    return (span.attributes or {}).get("temporalWorkflowID")


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace collector: keeps the bodies POSTed to /v1/traces."""

    bodies: list[bytes]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/v1/traces":
            self.server.bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


async def test_worker_otel_flag_exports_the_runs_spans_over_otlp(env, model_server):
    collector = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    collector.bodies = []
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    model_server.script(Reply(tool_calls=(Call("add", {"a": 1, "b": 1}),)), Reply(content="2"))
    queue = f"otlp-{uuid.uuid4().hex[:8]}"
    try:
        async with worker_process(
            env,
            model_server,
            "--otel",
            AGENT_MODULES="tests.support.agents",
            AGENT_TASK_QUEUE=queue,
            OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{collector.server_port}",
            OTEL_SERVICE_NAME="agents-under-test",
        ) as process:
            assert "worker: OpenTelemetry tracing on" in process.seen
            handle = await start(SimpleNamespace(client=env.client, task_queue=queue))
            assert (await asyncio.wait_for(handle.result(), 60)).final_output == "2"
        # SIGTERM: the worker flushes its last spans before it exits.
        assert process.returncode == 0, process.err.decode()
    finally:
        collector.shutdown()
        collector.server_close()
    exported = b"".join(collector.bodies)  # OTLP protobuf keeps strings verbatim
    for text in ("agents-under-test", "RunWorkflow:AgentWorkflow", "RunActivity:run_tool"):
        assert text.encode() in exported, text
    assert handle.id.encode() in exported
