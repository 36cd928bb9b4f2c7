"""Temporal dev servers that tests start, started again on new ports when one could not
start.

A test's server binds ports picked free a moment before (its own, and the random ones
the dev server picks for its HTTP, metrics and internal services); with three pytest
processes starting servers and listeners side by side, another process can take one of
them in between, and the server exits: CI on 2026-11-26 failed a browser test with "did
not start within 30s". A start that failed is tried again, on ports picked anew, and the
failure is printed so a run that needed it says so.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from temporalio.converter import DataConverter
from temporalio.testing import WorkflowEnvironment

from durable_agents.worker import start_dev_server, temporal_binary
from tests.support.runs import free_port

STARTS = 3
"""How many times a test tries to start its server."""

FAILED_START = "Failed starting Temporal dev server"
"""How the SDK's error for a server that did not come up begins (nothing else is retried)."""


async def started(
    start: Callable[[], Awaitable[WorkflowEnvironment]], *, starts: int = STARTS
) -> WorkflowEnvironment:
    """What `start()` returns, calling it again (up to `starts` calls in all) while it
    fails with the SDK's error for a server that did not come up."""
    for attempt in range(1, starts + 1):
        try:
            return await start()
        except RuntimeError as err:
            if attempt == starts or not str(err).startswith(FAILED_START):
                raise
            print(f"dev server start {attempt} of {starts} failed ({err}); again", file=sys.stderr)
    raise AssertionError("unreachable: the last attempt returns or raises")


async def local_server(**options) -> WorkflowEnvironment:
    """`WorkflowEnvironment.start_local` on the pip-installed `temporal` binary (the SDK
    picks a free port at each attempt)."""
    binary = temporal_binary()
    return await started(
        lambda: WorkflowEnvironment.start_local(dev_server_existing_path=binary, **options)
    )


async def ui_server(db: Path, data_converter: DataConverter) -> tuple[WorkflowEnvironment, int]:
    """The dev server as `worker.py --dev` starts it (with the UI), on free ports picked
    at each attempt; the server and its UI's port."""
    ui_port = 0

    def start() -> Awaitable[WorkflowEnvironment]:
        nonlocal ui_port
        ui_port = free_port()
        return start_dev_server(
            port=free_port(), ui_port=ui_port, db=db, data_converter=data_converter
        )

    return await started(start), ui_port
