"""`AgentsPlugin`: durable agents in your own Temporal Client and Worker.

    plugin = AgentsPlugin(agents=[support], model_client=AsyncOpenAI(max_retries=0))
    client = await Client.connect("localhost:7233", plugins=[plugin])
    worker = Worker(client, task_queue="agents", workflows=[YourWorkflow])  # + AgentWorkflow

Built on Temporal's plugin API (`temporalio.plugin.SimplePlugin`): on the client it
sets the data converter every process of ours shares (pydantic, the codec, the
payload store: `durable_agents.dataplane.codec.data_converter_from_env`); on a worker
of that client it adds `AgentWorkflow`, the model and tool activities, the sandbox
pass-through and our liveness settings, next to whatever the worker already has.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import timedelta

from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.converter import DataConverter, ExternalStorage
from temporalio.plugin import SimplePlugin
from temporalio.worker import Worker, WorkerConfig, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from durable_agents import gate, mcp_connections, served_agents, webhooks
from durable_agents.activities.agent import Agent
from durable_agents.activities.evaluate import EvaluatorActivities
from durable_agents.activities.fresh_ids import fresh_id
from durable_agents.activities.model_api import DEFAULT_MAX_CONCURRENT, ModelActivities
from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.run_tool import ToolActivities
from durable_agents.dataplane.codec import CodecKeys, data_converter, data_converter_from_env
from durable_agents.dataplane.store_gc import collect_store_garbage
from durable_agents.gate import GateKeys
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.mcp_connections import MCPConnection
from durable_agents.prices import prices_from_env, unpriced_budgets
from durable_agents.signing import Trust, trust_from_env
from durable_agents.webhooks import Endpoint, WebhookActivities
from durable_agents.workflows.agent_spec import ModelAPIName, ModelPrice, WebhookSubscription
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.workflows.store_gc_workflow import StoreGCWorkflow
from durable_agents.workflows.webhook_delivery import WebhookDeliveryWorkflow

PLUGIN_NAME = "durable_agents.AgentsPlugin"

STICKY_TIMEOUT = timedelta(seconds=5)
"""How long a run's next task waits for the worker that has it cached before any
worker takes it (replaying its history): what a run cached on a dead worker loses
(Temporal's default: 10 s)."""

HEARTBEAT_THROTTLE = timedelta(seconds=1)
"""Longest a heartbeat is held back by the SDK (its default: 80% of the heartbeat
timeout, which leaves a 5 s timeout one late beat from expiring)."""

SANDBOX_PASSTHROUGH = ("durable_agents", "cryptography", "openai", "httpx", "httpx2")
"""Imported once per process instead of once per workflow run by a sandboxed workflow
(our own workflows are `sandboxed=False`; a user's workflows on the same worker that
import our package are sandboxed): our package is plain
data and pure functions to the sandbox (models, the pure loop, AgentWorkflow) and
workflow code never imports activity or client code (tests/unit/test_determinism_guard.py
checks it, statically, since the sandbox no longer does). Re-importing it held
~0.2 MB per cached run and its import CPU at every run start (bench/RESULTS.md, 3).
`cryptography` (Ed25519 verification of signed decisions and snapshots) is a native
extension: re-imported inside the sandbox, a failed verification aborted the worker
process (its Rust code raising an exception class from a second module copy).
`openai` and the HTTP client it is built on (`httpx`; `httpx2` in some builds): a
user's workflow module that imports them at the top (beside the activities that call
the model) failed the worker's workflow validation, `RestrictedWorkflowAccessError:
Cannot access urllib.request.Request.__mro_entries__` (their import subclasses
`urllib.request.Request`, which the sandbox restricts). Passed through, they are
imported once, outside the sandbox; workflow code must still not call them (no I/O).
Measured: with these, a workflow module importing `openai`, `httpx2`, `anyio`,
`jiter`, `pydantic`, `aiohttp`, `standardwebhooks`, `opentelemetry` or
`google.protobuf` at the top validates (tests/integration/test_plugin.py)."""

_SDK_DEFAULTS = {
    "sticky_queue_schedule_to_start_timeout": timedelta(seconds=10),
    "max_heartbeat_throttle_interval": timedelta(seconds=60),
    "default_heartbeat_throttle_interval": timedelta(seconds=30),
}


def _converter(
    given: DataConverter | None, codec: CodecKeys | None, store: ExternalStorage | None
) -> DataConverter:
    if given is not None and (codec is not None or store is not None):
        raise AgentsPluginError(
            "give AgentsPlugin either data_converter or codec/payload_store, not both"
        )
    if given is not None:
        return given
    if codec is not None or store is not None:
        return data_converter(codec, store)
    return data_converter_from_env()


def _with_agent_workflow(existing: Sequence[type] | None) -> Sequence[type]:
    """The worker's workflows, AgentWorkflow, the webhook delivery and the store
    collection workflows, once each (a worker may list them itself)."""
    workflows = list(existing or [])
    ours = (AgentWorkflow, WebhookDeliveryWorkflow, StoreGCWorkflow)
    return workflows + [w for w in ours if w not in workflows]


def _webhook_endpoints(
    registry: AgentRegistry, endpoints: Mapping[str, Endpoint] | None
) -> dict[str, Endpoint]:
    """The worker's webhook endpoints (None: AGENT_WEBHOOKS); every endpoint an agent or
    tool names must be one, or the worker is refused."""
    try:
        known = webhooks.from_env() if endpoints is None else dict(endpoints)
    except webhooks.WebhookConfigError as err:
        raise AgentsPluginError(str(err)) from None
    for agent in registry.agents():
        named = [w.endpoint for w in agent.webhooks]
        named += [w.endpoint for t in agent.tools for w in t.webhooks or ()]
        missing = sorted({n for n in named if n not in known})
        if missing:
            raise AgentsPluginError(
                f"agent {agent.name} sends events to webhook endpoints {', '.join(missing)}, "
                f"which {webhooks.ENV} does not list"
            )
    return known


_log = logging.getLogger(__name__)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.warning("the worker announcing served agents stopped: %s", task.exception())


def _mcp_plugin(
    registry: AgentRegistry, connections: Mapping[str, MCPConnection] | None
) -> SimplePlugin | None:
    """The MCP servers' worker plugin, for the servers the agents name: each must be in
    `connections` (None: AGENT_MCP_SERVERS), or the worker is refused."""
    named = sorted({m.name for a in registry.agents() for m in a.mcp_servers})
    if not named:
        return None
    try:
        known = mcp_connections.from_env() if connections is None else dict(connections)
    except mcp_connections.MCPConfigError as err:
        raise AgentsPluginError(str(err)) from None
    missing = [n for n in named if n not in known]
    if missing:
        users = sorted(
            a.name for a in registry.agents() if any(m.name in missing for m in a.mcp_servers)
        )
        raise AgentsPluginError(
            f"agents {', '.join(users)} use MCP servers {', '.join(missing)}, which "
            f"{mcp_connections.ENV} does not say how to reach"
        )
    plugin: SimplePlugin = mcp_connections.mcp_plugin({n: known[n] for n in named})
    return plugin


class AgentsPluginError(ValueError):
    """The plugin cannot be used as configured; the message says what to change."""


class AgentsPlugin(SimplePlugin):
    """Adds durable agents to a Temporal Client and its Workers.

    `agents`: the agents the worker serves (an `AgentRegistry` or Agents).
    `model_client`: the `openai` client for model calls, built with `max_retries=0`
    (Temporal owns retries); None: a client-only plugin (no activities), e.g. for
    `AgentClient` or a service that only starts and approves runs.
    `codec` (keys for payload encryption) and `payload_store` (Temporal's
    `ExternalStorage` for large payloads): given either, the converter is built from
    them (`dataplane.codec.data_converter`), nothing from the environment.
    `data_converter`: the whole converter instead (built on the pydantic one).
    None of the three: `data_converter_from_env()` (AGENT_CODEC_KEYS,
    AGENT_PAYLOAD_STORE), as `worker.py` and `agentctl` do.
    `max_model_calls` (default 64): model calls a worker has in flight at once.
    `model_api`: the API of agents that name none (`Agent.model_api`):
    "chat_completions" (default; every OpenAI-compatible server) or "responses".
    `prices`: the price table, model name -> `ModelPrice` (frozen into each run at
    start and resume: its costs, a cost budget); None: from the environment
    (`AGENT_PRICES`, `durable_agents.prices`) when the plugin serves agents. An agent
    with a `cost_budget` needs its model's price.
    `sandbox_passthrough`: modules a sandboxed workflow of the worker (yours: ours run
    outside the sandbox) imports once per process, not once per run
    (SANDBOX_PASSTHROUGH; `()`: the SDK's default restrictions).
    `sticky_timeout`: see STICKY_TIMEOUT; applied unless the worker sets its own.
    `trust`: the approver keys whose signed decisions runs accept, the snapshot keys
    whose signed snapshots a resume trusts, and whether unverified snapshots are
    refused (frozen into each run at start and resume); None: from the environment
    (`durable_agents.signing.trust_from_env`).
    `gate_keys`: the keys that prove an activity execution was scheduled by a run of
    ours (`durable_agents.gate`); None: from `AGENT_GATE_KEYS` (required when the
    plugin serves agents: a worker without them is refused).
    """

    def __init__(
        self,
        *,
        agents: AgentRegistry | Iterable[Agent] = (),
        model_client: AsyncOpenAI | None = None,
        codec: CodecKeys | None = None,
        payload_store: ExternalStorage | None = None,
        data_converter: DataConverter | None = None,
        max_model_calls: int | None = DEFAULT_MAX_CONCURRENT,
        sandbox_passthrough: Sequence[str] = SANDBOX_PASSTHROUGH,
        sticky_timeout: timedelta = STICKY_TIMEOUT,
        trust: Trust | None = None,
        model_api: ModelAPIName = "chat_completions",
        prices: Mapping[str, ModelPrice] | None = None,
        mcp_servers: Mapping[str, MCPConnection] | None = None,
        webhook_endpoints: Mapping[str, Endpoint] | None = None,
        gate_keys: GateKeys | None = None,
    ) -> None:
        self.registry = agents if isinstance(agents, AgentRegistry) else AgentRegistry(agents)
        self.trust = trust if trust is not None else trust_from_env()
        # Only a worker prices runs: a client-only plugin never reads AGENT_PRICES.
        served = prices_from_env() if model_client is not None else {}
        self.prices = dict(prices) if prices is not None else served
        problem = self.registry.serving_problem() or unpriced_budgets(
            self.registry.agents(), self.prices
        )
        if problem is not None:
            raise AgentsPluginError(problem)
        self.converter = _converter(data_converter, codec, payload_store)
        self._passthrough = tuple(sandbox_passthrough)
        self._sticky_timeout = sticky_timeout
        activities = None
        self._mcp = None
        self._serves = model_client is not None
        self.gate_keys = gate_keys
        if model_client is not None:
            if gate_keys is None:
                try:
                    self.gate_keys = gate.required_keys()
                except gate.GateConfigError as err:
                    raise AgentsPluginError(str(err)) from None
            self._mcp = _mcp_plugin(self.registry, mcp_servers)
            endpoints = _webhook_endpoints(self.registry, webhook_endpoints)
            worker_wide = [
                WebhookSubscription(endpoint=e.name, events=list(e.events))  # type: ignore[arg-type]
                for e in endpoints.values()
            ]
            model = ModelActivities(
                model_client,
                max_concurrent=max_model_calls,
                output_types=self.registry.output_type,
                default_api=model_api,
                approval_rules=self.registry.approval_rule,
                instructions=self.registry.instructions,
            )
            tools = ToolActivities(
                self.registry,
                trust=self.trust,
                prices=self.prices,
                webhooks=worker_wide,
                models=model,
            )
            deliveries = WebhookActivities(endpoints)
            evaluators = EvaluatorActivities(self.registry, model)
            activities = [
                tools.describe_agent,
                tools.run_tool,
                tools.run_guardrail,
                model.call_model,
                evaluators.evaluate_call,
                deliveries.deliver_webhook,
                collect_store_garbage,
                fresh_id,
            ]
        super().__init__(
            PLUGIN_NAME,
            data_converter=self._client_converter,
            activities=activities,
            workflows=_with_agent_workflow if activities else None,
            workflow_runner=self._runner if activities else None,
            interceptors=[GateInterceptor(self.gate_keys, trust=self.trust)]
            if activities
            else None,
        )

    async def run_worker(self, worker: Worker, next: Callable[[Worker], Awaitable[None]]) -> None:
        """Runs the worker; one that serves agents runs beside it a small worker whose
        identity announces them (`durable_agents.served_agents`)."""
        config = worker.config()
        queue = config.get("task_queue", "")
        if self._mcp is not None and not served_agents.is_announce_queue(queue):
            mcp, inner = self._mcp, next

            async def next(worker: Worker) -> None:
                await mcp.run_worker(worker, inner)

        announcer = self._announcer(worker, queue, config.get("identity"))
        if announcer is None:
            await super().run_worker(worker, next)
            return
        # Its own task: announcing helps clients; its failure (a server that refuses the
        # identity, say) is logged and never stops the worker that serves.
        announcing = asyncio.create_task(announcer.run())
        announcing.add_done_callback(_log_failure)
        try:
            await super().run_worker(worker, next)
        finally:
            with contextlib.suppress(Exception):
                await announcer.shutdown()
            with contextlib.suppress(BaseException):
                await announcing

    def _announcer(self, worker: Worker, queue: str, identity: str | None) -> Worker | None:
        """The small worker announcing what this one serves (None: nothing to announce,
        or it cannot be made)."""
        serving = self.registry.names() and self._serves
        if not serving or served_agents.is_announce_queue(queue) or "@" in queue:
            return None  # a client-only plugin, the announcer itself, an agent's own queue
        announced = served_agents.identity(
            identity or worker.client.identity, self.registry.names()
        )
        if announced is None:
            return None
        client = worker.client
        try:  # a bare client: other client plugins do not dress the announcer up
            bare = Client(client.service_client, namespace=client.namespace)
            return Worker(
                bare,
                task_queue=served_agents.announce_queue(queue),
                activities=[served_agents.announce],
                identity=announced,
                max_concurrent_activities=1,
            )
        except Exception as err:
            _log.warning("not announcing the agents of task queue %r: %s", queue, err)
            return None

    def _client_converter(self, existing: DataConverter | None) -> DataConverter:
        """Ours on a client that has the default converter; refused over another."""
        if existing is None or existing is DataConverter.default or existing is self.converter:
            return self.converter
        raise AgentsPluginError(
            "the client already has a data converter of its own; pass it to "
            "AgentsPlugin(data_converter=...) (it must convert pydantic models: build it "
            "on temporalio.contrib.pydantic.pydantic_data_converter) so client and "
            "workers agree"
        )

    def _runner(self, existing: WorkflowRunner | None) -> WorkflowRunner:
        """The worker's sandbox, with our pass-through modules added."""
        if existing is None:
            restrictions = SandboxRestrictions.default.with_passthrough_modules(*self._passthrough)
            return SandboxedWorkflowRunner(restrictions=restrictions)
        if isinstance(existing, SandboxedWorkflowRunner):
            restrictions = existing.restrictions.with_passthrough_modules(*self._passthrough)
            return dataclasses.replace(existing, restrictions=restrictions)
        return existing  # not sandboxed: nothing to pass through

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Adds our workflow and activities; a worker whose client lacks our converter
        is refused (the worker converts payloads with its client's converter)."""
        if served_agents.is_announce_queue(config.get("task_queue", "")):
            return config  # the small worker that announces what another one serves
        client = config.get("client")
        if client is not None and client.data_converter is not self.converter:
            raise AgentsPluginError(
                "the worker's client does not have AgentsPlugin's data converter: add the "
                "plugin to Client.connect(plugins=[...]) (a worker of that client gets it "
                "too), or build the client with data_converter=plugin.converter"
            )
        config = super().configure_worker(config)
        settings = {
            "sticky_queue_schedule_to_start_timeout": self._sticky_timeout,
            "max_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
            "default_heartbeat_throttle_interval": HEARTBEAT_THROTTLE,
        }
        for key, value in settings.items():
            if config.get(key, _SDK_DEFAULTS[key]) == _SDK_DEFAULTS[key]:
                config[key] = value  # type: ignore[literal-required]
        if self._mcp is not None:  # the MCP servers' activities (temporalio-mcp)
            config = self._mcp.configure_worker(config)
        return config
