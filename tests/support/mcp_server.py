"""A real MCP server for the tests (the `mcp` package's server): a read-only tool and a
destructive one, over stdio or streamable HTTP.

    python -m tests.support.mcp_server                 # stdio
    python -m tests.support.mcp_server --http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp

Each call of `delete_ticket` appends a line to the file $MCP_EFFECTS names (when
set), so a test can count the effects a run had.
"""

from __future__ import annotations

import argparse
import os

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer(name="tickets")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def lookup_ticket(ticket_id: str) -> str:
    """Look a ticket up by its id."""
    return f"ticket {ticket_id}: printer on fire, status open"


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True))
def delete_ticket(ticket_id: str, reason: str) -> str:
    """Delete a ticket for good."""
    effects = os.environ.get("MCP_EFFECTS")
    if effects:
        with open(effects, "a", encoding="utf-8") as out:
            out.write(f"deleted {ticket_id}: {reason}\n")
    return f"ticket {ticket_id} deleted"


@server.tool()
def failing_tool() -> str:
    """Always fails (an unannotated tool)."""
    raise ToolError("the ticket system is read-only today")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT")
    args = parser.parse_args()
    if args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
