"""`@tool(local=True)`'s rules: what may be local, and how `agentctl tools` shows it."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from durable_agents.activities.tool import tool
from durable_agents.client.render import tools

from tests.support import agents


def test_a_local_tool_is_frozen_as_local_without_a_heartbeat():
    spec = agents.lookup.spec()
    assert spec.local and agents.lookup.execution_settings().heartbeat_timeout_seconds is None
    assert "local" not in agents.add.spec().model_dump(mode="json")  # left out when not
    assert "  lookup · @tool (local) · no approval" in tools(agents.quick.spec()).splitlines()


def test_a_tool_that_needs_approval_or_runs_long_cannot_be_local():
    def act(x: int) -> int:
        """Act."""
        return x

    with pytest.raises(ValueError, match="a tool that needs approval cannot be local"):
        tool(act, needs_approval=True, local=True)
    with pytest.raises(ValueError, match=r"timeout is at most 60 s .* not 120 s"):
        tool(act, timeout=timedelta(seconds=120), local=True)
    with pytest.raises(ValueError, match="a local tool has no heartbeat"):
        tool(act, heartbeat_timeout=timedelta(seconds=9), local=True)
    with pytest.raises(ValueError, match="cannot be local"):
        dataclasses.replace(agents.send_email, local=True)  # however it is made
    with pytest.raises(ValueError, match="never local"):
        dataclasses.replace(agents.assistant.as_tool(), local=True)


@pytest.mark.parametrize("queue", ["", " gpu", "gpu ", "a\nb", "/_sys/x", "é" * 101])
def test_a_tool_queue_name_temporal_would_refuse_or_no_worker_could_match_is_refused(queue):
    def act(x: int) -> int:
        """Act."""
        return x

    with pytest.raises(ValueError, match="task_queue must be 1 to 200 bytes"):
        tool(act, task_queue=queue)
