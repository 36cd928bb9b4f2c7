"""The MCP demo behind `make demo-mcp`: an agent whose tools come from an MCP server.

It writes the worker's `AGENT_MCP_SERVERS` file (the ticket system of
`examples/mcp_tickets.py`, over stdio), starts `python worker.py --dev` with the
agent of `examples/mcp_agent.py`, then drives a run with the `agentctl` commands a
person would type: the agent's tools and approval rules, a run that looks a ticket
up at once and waits for approval to close it, the approval, the result.
"""

from __future__ import annotations

import json
import sys
import uuid

from examples.demo import (
    ROOT,
    SHOWN_AGENTCTL,
    DemoError,
    _wait_for_status,
    agentctl,
    serve_and_run,
)

REQUEST = "Ticket T-100: the printer works again, please close it."


def main(argv: list[str] | None = None) -> int:
    state = ROOT / ".temporal"
    state.mkdir(exist_ok=True)
    servers = state / "mcp_servers.json"
    tickets = state / f"tickets-{uuid.uuid4().hex[:6]}.json"
    servers.write_text(
        json.dumps(
            {
                "tickets": {
                    "command": [sys.executable, "-m", "examples.mcp_tickets"],
                    "env": {"PYTHONPATH": str(ROOT), "TICKETS_DB": str(tickets)},
                }
            },
            indent=2,
        )
    )
    print(f"demo: AGENT_MCP_SERVERS={servers}:\n{servers.read_text()}")
    return serve_and_run(
        argv,
        description=__doc__.splitlines()[0],
        agents="examples.mcp_agent",
        run=run_demo,
        env={"AGENT_MCP_SERVERS": str(servers)},
    )


def run_demo(*, address: str, ui_port: int) -> None:
    """The agent's tools, then a run: one MCP tool at once, one after an approval."""
    run_id = f"helpdesk-demo-{uuid.uuid4().hex[:6]}"
    ctl = ["--address", address]
    agentctl(*ctl, "tools", "it-helpdesk")
    agentctl(*ctl, "start", "it-helpdesk", REQUEST, "--id", run_id)
    _wait_for_status(ctl, run_id, "awaiting_approval")
    print(
        "\nThe read-only MCP tool ran at once; closing the ticket waits for a person. "
        f"In the UI: http://localhost:{ui_port}/namespaces/default/workflows/{run_id}"
    )
    agentctl(*ctl, "pending", run_id)
    pending = json.loads(agentctl(*ctl, "pending", run_id, "--json", show=False))
    if len(pending) != 1 or pending[0]["tool"] != "tickets_close_ticket":
        raise DemoError(f"expected one pending tickets_close_ticket call, got {pending}")
    agentctl(*ctl, "approve", run_id, pending[0]["call_id"], "--as", "demo-operator")
    agentctl(*ctl, "result", run_id)
    result = json.loads(agentctl(*ctl, "result", run_id, "--json", show=False))
    if result["status"] != "completed":
        raise DemoError(f"the run ended as {result['status']}")
    print(f"\nDone. Full state: {SHOWN_AGENTCTL} {' '.join(ctl)} state {run_id}")


if __name__ == "__main__":
    raise SystemExit(main())
