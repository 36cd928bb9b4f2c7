"""agentctl's exit code says what happened to the run, not that a request went out."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from durable_agents.client import cli_ops
from durable_agents.client.errors import AgentClientError
from durable_agents.workflows.payloads import StatusView
from durable_agents.workflows.run_items import Usage
from durable_agents.workflows.state import RunStatus


class EndedFirst:
    """A run that completed between `cancel` and its answer (the request came late)."""

    async def cancel(self, run_id: str, *, reason: str | None = None) -> None:
        return None

    async def result(self, run_id: str) -> object:
        return object()  # returned: it completed before the cancellation reached it

    async def status(self, run_id: str) -> StatusView:
        return StatusView(
            status=RunStatus.COMPLETED, agent="a", turn=1, pending_approvals=0, usage=Usage()
        )


async def test_cancel_wait_fails_when_the_run_ended_otherwise_first():
    args = argparse.Namespace(run_id="r1", reason=None, wait=True, json=False)
    with pytest.raises(AgentClientError, match=r"^run r1 ended completed before it could be"):
        await cli_ops.cancel(args, EndedFirst())  # type: ignore[arg-type]


def test_a_reader_that_stops_reading_ends_agentctl_quietly(tmp_path):
    """`agentctl ... | head` or `| grep -q`: the reader has closed the pipe before the
    output is written; agentctl exits as a program stopped by SIGPIPE does (141), with no
    traceback on stderr."""
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "runstate-2.0-single.json"
    reader, writer = os.pipe()
    os.close(reader)
    try:
        done = subprocess.run(
            [Path(sys.executable).parent / "agentctl", "validate", str(fixture)],
            stdout=writer,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(writer)
    assert (done.returncode, done.stderr) == (141, b"")
