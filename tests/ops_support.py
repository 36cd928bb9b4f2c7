"""Helpers of the operations tests: polling visibility, worker.py in a subprocess,
fresh namespaces."""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.client import Client

from tests.test_worker import ROOT, without_openai_key

T = TypeVar("T")


async def eventually(
    read: Callable[[], Awaitable[T]], ok: Callable[[T], bool], *, timeout: float = 10
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
