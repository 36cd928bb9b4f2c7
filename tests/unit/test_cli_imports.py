"""What `agentctl` imports at start: not the `openai` client, nor the agent API that
brings it (about half of every start: `agentctl --help` 1.19 -> 0.53 s on the 2-core
reference machine). It talks to Temporal; agents and model calls are the worker's."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_agentctl_starts_without_the_openai_client_or_the_agent_api() -> None:
    code = (
        "import sys\n"
        "from durable_agents.client import cli\n"
        "cli.build_parser()\n"
        "loaded = sorted(m for m in sys.modules if m == 'openai' or m.startswith('openai.')\n"
        "                or m == 'durable_agents.activities.agent')\n"
        "print(loaded)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.strip().splitlines()[-1] == "[]"


def test_the_agent_api_is_still_where_it_was() -> None:
    """The lazy `durable_agents.activities` still answers its names (and only those)."""
    from durable_agents.activities.agent import Agent

    from durable_agents import activities
    from durable_agents.signing import Trust

    assert activities.Agent is Agent
    assert "Agent" in dir(activities)
    from durable_agents.activities import agent as agent_module

    assert agent_module.Trust is Trust  # `from durable_agents.activities.agent import Trust`
    try:
        activities.NotAName  # noqa: B018
    except AttributeError as err:
        assert "NotAName" in str(err)
    else:
        raise AssertionError("an unknown name must raise AttributeError")


def test_tool_is_the_decorator_even_once_its_module_is_imported() -> None:
    from durable_agents.activities import tool

    from durable_agents import activities

    tool_module = importlib.import_module("durable_agents.activities.tool")
    assert callable(tool) and tool is tool_module.tool and activities.tool is tool
