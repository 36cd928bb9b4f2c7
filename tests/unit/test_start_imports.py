"""What a process of ours imports at start, and what it leaves out: a worker imports
`mcp` (28.6 MB of memory) only where an agent uses an MCP server (bench.concurrency:
1,000 parked runs 310 -> 285 MB); `agentctl` imports neither the `openai` client nor the
agent API that brings it (about half of every start: `agentctl --help` 1.19 -> 0.53 s on
the 2-core reference machine) — it talks to Temporal; agents and model calls are the
worker's."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def loaded_at_start(setup: str, prefixes: tuple[str, ...]) -> list[str]:
    """The modules whose names are or begin with one of `prefixes` (`x` or `x.`) that a
    fresh interpreter has imported once it ran `setup`."""
    code = (
        f"import sys\n{setup}\n"
        f"prefixes = {prefixes!r}\n"
        "print(sorted(m for m in sys.modules\n"
        "             if any(m == p or m.startswith(p + '.') for p in prefixes)))\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr[-2000:]
    return ast.literal_eval(found.stdout.strip().splitlines()[-1])


def test_a_worker_whose_agents_use_no_mcp_server_does_not_import_mcp() -> None:
    setup = (
        "import worker\n"
        "from durable_agents.activities.registry import AgentRegistry\n"
        "from durable_agents.plugin import AgentsPlugin\n"
        "AgentsPlugin(agents=AgentRegistry.from_modules(['tests.support.agents']))"
    )
    assert loaded_at_start(setup, ("mcp", "temporalio.mcp")) == []


def test_agentctl_starts_without_the_openai_client_or_the_agent_api() -> None:
    setup = "from durable_agents.client import cli\ncli.build_parser()"
    assert loaded_at_start(setup, ("openai", "durable_agents.activities.agent")) == []


def test_the_agent_api_is_still_where_it_was() -> None:
    """The lazy `durable_agents.activities` still answers its names (and only those)."""
    from durable_agents.activities import agent as agent_module
    from durable_agents.activities.agent import Agent

    from durable_agents import activities
    from durable_agents.signing import Trust

    assert activities.Agent is Agent and "Agent" in dir(activities)
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
