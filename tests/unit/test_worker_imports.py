"""What a worker process imports at start: `mcp` (28.6 MB of memory) only where an
agent uses an MCP server (bench.concurrency: 1,000 parked runs 310 -> 285 MB)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_worker_whose_agents_use_no_mcp_server_does_not_import_mcp() -> None:
    code = (
        "import sys, worker\n"
        "from durable_agents.activities.registry import AgentRegistry\n"
        "from durable_agents.plugin import AgentsPlugin\n"
        "AgentsPlugin(agents=AgentRegistry.from_modules(['tests.support.agents']))\n"
        "loaded = sorted(m for m in sys.modules\n"
        "                if m == 'mcp' or m.startswith(('mcp.', 'temporalio.mcp')))\n"
        "print(loaded)\n"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.strip().splitlines()[-1] == "[]"
