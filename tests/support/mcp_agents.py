"""An agent whose tools come from the tests' MCP server (tests/support/mcp_server.py),
beside a `@tool` of its own; served only by the MCP tests (`serving(..., extra_agents=)`),
whose worker is told how to reach the server."""

from __future__ import annotations

import dataclasses

from durable_agents.workflows.agent_spec import RetrySpec

from durable_agents import Agent, MCPServer, ToolContext, tool


@tool
def note(text: str, ctx: ToolContext) -> str:
    """Write a note (a local tool beside the MCP ones)."""
    return f"noted: {text}"


helpdesk = Agent(
    name="helpdesk",
    instructions="You handle support tickets.",
    model="test-model",
    tools=[note],
    mcp_servers=[
        MCPServer(
            name="tickets",
            prefix="tickets_",
            timeout_seconds=10,
            retry=RetrySpec(initial_interval_seconds=0.2, maximum_attempts=3),
        )
    ],
    max_turns=6,
)
"""`tickets_lookup_ticket` needs no approval (read-only), `tickets_delete_ticket` and
`tickets_failing_tool` do (destructive, unannotated)."""


frontdesk = dataclasses.replace(helpdesk, name="frontdesk", handoffs=["backoffice"])
"""The helpdesk's MCP tools, and a handoff to `backoffice`, which hands back."""

backoffice = Agent(
    name="backoffice",
    instructions="You handle what the front desk cannot; hand back when done.",
    model="test-model",
    handoffs=["frontdesk"],
    max_turns=6,
)
