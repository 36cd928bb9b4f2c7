"""Helpers of the operations tests: polling visibility, worker.py in a subprocess,
fresh namespaces, an in-process worker whose metrics are scraped over HTTP."""

from __future__ import annotations

import asyncio
import re
import sys
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

from durable_agents.activities import telemetry
from durable_agents.activities.registry import AgentRegistry
from google.protobuf.duration_pb2 import Duration
from openai import AsyncOpenAI
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import Runtime

from durable_agents.worker import build_worker
from tests.integration.test_worker import ROOT, free_port, without_openai_key

T = TypeVar("T")


async def eventually(
    read: Callable[[], Awaitable[T]], ok: Callable[[T], bool], *, timeout: float = 30
) -> T:
    """Poll `read` until `ok` holds (visibility is eventually consistent)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = await read()
        if ok(value):
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not met in {timeout}s; last value: {value!r}")
        await asyncio.sleep(0.2)


@asynccontextmanager
async def worker_process(env, model_server, *args: str, **variables: str) -> AsyncIterator:
    """`python worker.py ARGS` against the test server and model server, until SIGTERM.

    The process has `seen` (its start-up lines), then on exit `out` and `err` (the rest)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "worker.py",
        *args,
        cwd=ROOT,
        env={
            **without_openai_key(),
            "TEMPORAL_ADDRESS": env.client.service_client.config.target_host,
            "TEMPORAL_NAMESPACE": env.client.namespace,
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": model_server.base_url,
            **variables,
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        seen = b""
        while b"serving agents" not in seen:
            line = await asyncio.wait_for(process.stdout.readline(), 30)
            assert line, (seen + await process.stderr.read()).decode()
            seen += line
        process.seen = seen.decode()
        yield process
    finally:
        if process.returncode is None:
            process.terminate()
        process.out, process.err = await asyncio.wait_for(process.communicate(), 60)


async def fresh_namespace(env) -> Client:
    """A new namespace on the test server, without our search attributes; a client for it."""
    name = f"ns-{uuid.uuid4().hex[:8]}"
    await env.client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=name, workflow_execution_retention_period=Duration(seconds=86400)
        )
    )
    return await Client.connect(env.client.service_client.config.target_host, namespace=name)


_SAMPLE = re.compile(r"^(\w+)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a Prometheus text exposition: (name, labels, value)."""
    found = []
    for line in text.splitlines():
        match = _SAMPLE.match(line)
        if match and not line.startswith("#"):
            labels = dict(_LABEL.findall(match.group(2) or ""))
            found.append((match.group(1), labels, float(match.group(3))))
    return found


def total(found, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    return sum(
        value
        for sample, have, value in found
        if sample == name and all(have.get(k) == v for k, v in labels.items())
    )


@dataclass(frozen=True)
class Metered:
    """A client on the test server whose runtime serves Prometheus metrics on `port`:
    a worker built with it reports Temporal's metrics and ours there."""

    client: Client
    runtime: Runtime
    port: int

    def scrape(self) -> str:
        """The metrics endpoint's text exposition."""
        url = f"http://127.0.0.1:{self.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode()


async def metered_client(env) -> Metered:
    """A `Metered` client (one runtime per call: create it once per module)."""
    port = free_port()
    runtime = telemetry.prometheus_runtime(f"127.0.0.1:{port}")
    client = await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        data_converter=pydantic_data_converter,
        runtime=runtime,
    )
    return Metered(client, runtime, port)


@asynccontextmanager
async def metered_worker(
    metered: Metered, model_server, *, modules: tuple[str, ...] = ("tests.support.agents",)
) -> AsyncIterator[str]:
    """An in-process worker for `modules`' agents on a fresh task queue; yields the queue."""
    queue = f"metered-{uuid.uuid4().hex[:8]}"
    openai_client = AsyncOpenAI(base_url=model_server.base_url, api_key="t", max_retries=0)
    running = build_worker(
        metered.client,
        registry=AgentRegistry.from_modules(list(modules)),
        model_client=openai_client,
        task_queue=queue,
    )
    try:
        async with running:
            yield queue
    finally:
        await openai_client.close()
