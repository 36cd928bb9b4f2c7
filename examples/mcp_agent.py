"""The MCP example's agent: an IT helpdesk agent whose tools come from the ticket
system's MCP server (`examples/mcp_tickets.py`), reached by the worker as
`AGENT_MCP_SERVERS` says (see `examples/mcp_demo.py`).

The agent's configuration says nothing of approvals, so the server's annotations
decide: `tickets_find_ticket` (read-only) runs at once, `tickets_close_ticket`
(destructive) waits for a person. `scripted_model` plays the model offline.
"""

from __future__ import annotations

import json
import re

from durable_agents import Agent, MCPServer
from durable_agents.testing import Call, Reply

helpdesk = Agent(
    name="it-helpdesk",
    instructions=(
        "You are an IT helpdesk agent. Look a ticket up before acting on it, and say what you did."
    ),
    model="gpt-4o-mini",
    mcp_servers=[MCPServer(name="tickets", prefix="tickets_", timeout_seconds=30)],
    max_turns=6,
)


def scripted_model(request: dict) -> Reply:
    """Offline stand-in for the model: find the ticket, close it, then answer."""
    messages = request["messages"]
    results = [m["content"] for m in messages if m["role"] == "tool"]
    if not results:
        user = next(m["content"] for m in messages if m["role"] == "user")
        found = re.search(r"\bT-\d+\b", user)
        ticket = found.group(0) if found else "T-100"
        return Reply(content=None, tool_calls=(Call("tickets_find_ticket", {"ticket_id": ticket}),))
    if len(results) == 1:
        ticket = json.loads(results[0])
        if "error" in ticket:
            return Reply(content=f"I could not find that ticket: {ticket['error']}.")
        return Reply(
            content=f"{ticket['id']} is {ticket['status']}; closing it.",
            tool_calls=(
                Call(
                    "tickets_close_ticket",
                    {"ticket_id": ticket["id"], "resolution": "fixed, confirmed by the user"},
                ),
            ),
        )
    return Reply(content=f"Done: {results[-1]}")
