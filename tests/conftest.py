"""Shared fixtures: one real Temporal dev server per session, and per test a real
scripted OpenAI-compatible HTTP server and a real worker on a fresh task queue."""

from __future__ import annotations

import os
import ssl
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType

import pytest
from durable_agents.activities.agent import Agent
from durable_agents.activities.registry import AgentRegistry
from durable_agents.workflows import search_attributes
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Plugin

from durable_agents import gate
from durable_agents.dev_server_config import dev_server_args
from durable_agents.mcp_connections import MCPConnection
from durable_agents.signing import Trust
from durable_agents.testing import ScriptedModelServer
from durable_agents.webhooks import Endpoint
from durable_agents.worker import build_worker
from tests.support import agents, priced_agents, recording
from tests.support.approver_keys import WORKER_TRUST
from tests.support.dev_servers import local_server

# The workers' gate key of this test process (`durable_agents.gate`): workers started
# in-process and as subprocesses share it through the environment. Recording scenario
# histories, the development key: the replay makes the ids and checks the tags with it.
if recording.folder() is not None:
    os.environ[gate.ENV] = gate.DEVELOPMENT_KEY_ID
os.environ.setdefault(gate.ENV, gate.new_key_entry("test"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The scenario markers are sound (`recording.check_marked`)."""
    recording.check_marked(items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Keeps the test's own outcome on it: the `scenario` fixture records a passed test only."""
    report = yield
    if report.when == "call":
        item.stash[PASSED] = report.passed
    return report


PASSED = pytest.StashKey[bool]()

SCENARIOS_RUN: set[str] = set()
"""Record mode: the scenarios whose tests began (in this process or, under xdist, any)."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Notes the scenarios that began (the `scenario` fixture says so in user_properties,
    which xdist carries to the controller)."""
    SCENARIOS_RUN.update(v for k, v in report.user_properties if k == recording.MARKER)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Record mode: a scenario that began but has no history in the folder (its test
    failed or skipped itself) fails the run, by name: a release is not cut without it."""
    target = recording.folder()
    if target is None or hasattr(session.config, "workerinput"):  # xdist: the controller's
        return
    if missing := recording.unrecorded(target, SCENARIOS_RUN):
        print(f"\nscenario histories not recorded into {target}: {', '.join(missing)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def payload_store_of_the_session(tmp_path_factory) -> Iterator[None]:
    """Workers and agentctl started by tests store large payloads in a directory of
    the session's, never in the user's `~/.cache` (AGENT_PAYLOAD_STORE is inherited)."""
    before = os.environ.get("AGENT_PAYLOAD_STORE")
    os.environ["AGENT_PAYLOAD_STORE"] = str(tmp_path_factory.mktemp("payload-store"))
    yield
    if before is None:
        os.environ.pop("AGENT_PAYLOAD_STORE", None)
    else:
        os.environ["AGENT_PAYLOAD_STORE"] = before


@pytest.fixture(scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    """A real Temporal dev server (the pip-installed `temporal` binary), nothing downloaded."""
    environment = await local_server(
        data_converter=pydantic_data_converter,
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=dev_server_args(),
    )
    yield environment
    await environment.shutdown()


@pytest.fixture
async def scenario(
    request: pytest.FixtureRequest, env: WorkflowEnvironment
) -> AsyncIterator[recording.HistoryRecorder]:
    """Where a scenario test (`@pytest.mark.history("NAME")`) names its runs
    (`scenario.run(handle)`); in record mode (RECORD_HISTORIES=FOLDER) they are written
    into FOLDER once the test has passed (`tests/support/recording.py`)."""
    marker = request.node.get_closest_marker(recording.MARKER)
    name = recording.scenario_name(marker.args) if marker else None
    target = recording.folder()
    if name and target is not None:
        request.node.user_properties.append((recording.MARKER, name))
    if name and target is not None and (kept := recording.recorded_already(target, name)):
        pytest.skip(f"scenario {name!r} is recorded already: {[p.name for p in kept]}")
    recorder = recording.HistoryRecorder(name=name, client=env.client)
    yield recorder
    if name and request.node.stash.get(PASSED, False):
        if not recorder.runs:
            pytest.fail(f"scenario {name!r} named no run: call scenario.run(handle)")
        if target is not None:
            await recorder.save(target)


@pytest.fixture
def model_server() -> Iterator[ScriptedModelServer]:
    """A real HTTP server speaking the Chat Completions API, scripted by the test."""
    with ScriptedModelServer() as server:
        yield server


@dataclass(frozen=True)
class RunningWorker:
    """A worker running for one test."""

    task_queue: str
    client: Client
    address: str
    namespace: str


TLS = ssl.create_default_context()
"""One TLS context for the test workers' model clients: each client would load the CA
bundle again (40 ms of CPU; 14% of a test process's Python CPU), for a model server
that speaks plain HTTP."""

NO_DRAIN = timedelta(0)
"""The `worker` fixture's drain: nothing a test left running is waited for at its end."""

NO_WEBHOOKS: Mapping[str, Endpoint] = MappingProxyType({})
"""A test worker's webhook endpoints unless the test gives some (None: AGENT_WEBHOOKS)."""


@asynccontextmanager
async def serving(
    client: Client,
    model_server: ScriptedModelServer,
    *,
    task_queue: str | None = None,
    trust: Trust = WORKER_TRUST,
    prices: dict | None = None,
    extra_agents: Sequence[Agent] = (),
    mcp_servers: Mapping[str, MCPConnection] | None = None,
    webhook_endpoints: Mapping[str, Endpoint] | None = NO_WEBHOOKS,
    plugins: Sequence[Plugin] = (),
    drain: timedelta | None = None,
) -> AsyncIterator[RunningWorker]:
    """A real worker for the test agents on `task_queue` (default: a fresh one),
    talking to `model_server`; `plugins` are added to the worker's; `drain`: how long
    its running activities get to finish when it stops (None: the worker's default)."""
    agents.CALLS.clear()
    task_queue = task_queue or f"test-{uuid.uuid4().hex[:8]}"
    openai_client = AsyncOpenAI(
        base_url=model_server.base_url,
        api_key="test",
        max_retries=0,
        http_client=DefaultAsyncHttpxClient(verify=TLS),
    )
    registry = AgentRegistry.from_modules(["tests.support.agents", "tests.support.priced_agents"])
    for extra in extra_agents:
        registry.add(extra)
    running = build_worker(
        client,
        registry=registry,
        model_client=openai_client,
        task_queue=task_queue,
        trust=trust,
        prices=priced_agents.PRICES if prices is None else prices,
        mcp_servers=mcp_servers,
        webhook_endpoints=webhook_endpoints,
        plugins=plugins,
        **({} if drain is None else {"drain": drain}),
    )
    async with running:
        yield RunningWorker(
            task_queue=task_queue,
            client=client,
            address=client.service_client.config.target_host,
            namespace=client.namespace,
        )
    await openai_client.close()


@pytest.fixture
async def worker(
    env: WorkflowEnvironment, model_server: ScriptedModelServer
) -> AsyncIterator[RunningWorker]:
    """A worker on the session's dev server (see `serving`). What a test leaves running
    ends when it does: its activities are cancelled at once (a model reply delayed 30 s
    or a 30 s nap held the teardown 1.5 s each)."""
    async with serving(env.client, model_server, drain=NO_DRAIN) as running:
        yield running
