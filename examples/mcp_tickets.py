"""A small ticket system as an MCP server (the `mcp` package's server, over stdio): the
MCP example's tools. `find_ticket` is read-only (no approval); `close_ticket` changes
the ticket (approval), and is idempotent by the key each call carries in its `_meta`
(`durable-agents/idempotency-key`): a retried call closes the ticket once.

    python -m examples.mcp_tickets        # speaks MCP on stdin/stdout

Tickets are kept in the JSON file $TICKETS_DB (default `.temporal/tickets.json`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations

IDEMPOTENCY_KEY = "durable-agents/idempotency-key"
DB = Path(os.environ.get("TICKETS_DB", ".temporal/tickets.json"))
TICKETS = {
    "T-100": {"title": "Printer on floor 2 jams", "status": "open"},
    "T-101": {"title": "VPN drops every hour", "status": "open"},
}

server = MCPServer(name="tickets")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def find_ticket(ticket_id: str) -> dict:
    """A ticket by its id: title and status."""
    ticket = _load().get(ticket_id.upper())
    return {"error": f"no ticket {ticket_id}"} if ticket is None else {"id": ticket_id, **ticket}


@server.tool(annotations=ToolAnnotations(destructiveHint=True, idempotentHint=True))
def close_ticket(ticket_id: str, resolution: str, ctx: Context) -> str:
    """Close a ticket with a resolution. A person approves each closing."""
    key = str((ctx.request_context.meta or {}).get(IDEMPOTENCY_KEY, ""))
    tickets = _load()
    ticket = tickets.get(ticket_id.upper())
    if ticket is None:
        return f"no ticket {ticket_id}"
    if key and ticket.get("closed_by_key") == key:
        return f"{ticket_id} was closed already by this call"
    ticket.update(status="closed", resolution=resolution, closed_by_key=key)
    DB.parent.mkdir(parents=True, exist_ok=True)
    DB.write_text(json.dumps(tickets, indent=2))
    return f"{ticket_id} closed: {resolution}"


def _load() -> dict[str, dict]:
    return json.loads(DB.read_text()) if DB.exists() else json.loads(json.dumps(TICKETS))


if __name__ == "__main__":
    server.run("stdio")
