"""How a worker reaches the MCP servers its agents name (`AGENT_MCP_SERVERS=FILE`).

The file is a JSON object, one entry per server name (the name agents give in
`MCPServer(name=...)`):

    {"tickets": {"command": ["python", "-m", "tickets_server"], "env": {"TOKEN": "$TICKETS_TOKEN"}},
     "wiki": {"url": "https://wiki.example/mcp", "headers": {"Authorization": "$WIKI_AUTH"}}}

A value `"$NAME"` is the worker's environment variable NAME (credentials stay on
the worker: never in a workflow's history, a snapshot or a query answer). The
connections are `temporalio-mcp`'s: its `MCPPlugin` registers, per server, the
activities the workflow's `TemporalMCPClient` calls, and keeps the transport
(the subprocess, the HTTP session) on the worker.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from durable_agents.config_file import json_file

ENV = "AGENT_MCP_SERVERS"


class MCPConfigError(ValueError):
    """An AGENT_MCP_SERVERS file the worker cannot use (the message says why)."""


@dataclass(frozen=True)
class MCPConnection:
    """One server: a command the worker starts (stdio), or a URL (streamable HTTP)."""

    command: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def client(self) -> Any:
        """A new `mcp.Client` for this server (not connected yet). A subprocess gets the
        MCP SDK's minimal environment (PATH, HOME, ...) and `env`, never the worker's
        own (its model key, codec keys, other servers' tokens)."""
        from mcp import StdioServerParameters

        Client = _client_class()
        if self.url is None:
            program, *args = self.command
            return Client(
                StdioServerParameters(command=program, args=args, env=dict(self.env) or None)
            )
        if not self.headers:
            return Client(self.url)
        return Client(_http_with_headers(self.url, dict(self.headers)))


@functools.cache
def _client_class() -> Any:
    """`mcp.Client` whose sessions take a tool's structured result as the server sent it.

    The MCP SDK checks a result against the output schema the same server listed, on
    the event loop: a server's own pattern (`^(a+)+$` against 40 a's and a `!`) held a
    worker's loop, and every run on it, for hours, past any activity timeout. The
    check proves nothing against the server that wrote both, and what a tool returns
    is data to the run whatever it claims (`workflows.mcp_tools.outcome`)."""
    from mcp import Client

    class _Client(Client):
        async def _build_session(self, exit_stack: Any) -> Any:
            session = await super()._build_session(exit_stack)
            session.validate_tool_result = _taken_as_sent  # type: ignore[method-assign]
            return session

    return _Client


async def _taken_as_sent(name: str, result: Any) -> None:
    """(A session's `validate_tool_result`.) Nothing to check: see `_client_class`."""


@contextlib.asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP with headers, its HTTP client closed with the connection."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def from_env(env: Mapping[str, str] | None = None) -> dict[str, MCPConnection]:
    """The connections of `AGENT_MCP_SERVERS` (none when it is unset)."""
    env = os.environ if env is None else env
    try:
        document = json_file(env, ENV)
    except ValueError as err:
        raise MCPConfigError(str(err)) from None
    return {} if document is None else parse(document, env)


def parse(document: object, env: Mapping[str, str]) -> dict[str, MCPConnection]:
    """The connections of an AGENT_MCP_SERVERS document; MCPConfigError if malformed."""
    if not isinstance(document, dict):
        raise MCPConfigError(f"{ENV}: a JSON object of server names, not {type(document).__name__}")
    found = {}
    for name, entry in document.items():
        found[name] = _connection(name, entry, env)
    return found


def _connection(name: str, entry: object, env: Mapping[str, str]) -> MCPConnection:
    where = f"{ENV}: server {name!r}"
    if not isinstance(entry, dict) or ("command" in entry) == ("url" in entry):
        raise MCPConfigError(f'{where}: give either "command" (a list) or "url"')
    unknown = set(entry) - {"command", "env", "url", "headers"}
    if unknown:
        raise MCPConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    if "command" in entry:
        command = entry["command"]
        if not (isinstance(command, list) and command and all(isinstance(a, str) for a in command)):
            raise MCPConfigError(f'{where}: "command" is a non-empty list of strings')
        variables = _strings(entry.get("env", {}), f'{where}: "env"', env)
        return MCPConnection(command=tuple(command), env=variables)
    url = entry["url"]
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise MCPConfigError(f'{where}: "url" is an http(s) URL')
    return MCPConnection(
        url=url, headers=_strings(entry.get("headers", {}), f'{where}: "headers"', env)
    )


def _strings(value: object, where: str, env: Mapping[str, str]) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise MCPConfigError(f"{where} is an object of strings")
    found = {}
    for key, text in value.items():
        if text.startswith("$"):
            variable = text[1:]
            if variable not in env:
                raise MCPConfigError(f"{where}: {key} names ${variable}, which is not set")
            text = env[variable]
        found[key] = text
    return found


def mcp_plugin(connections: Mapping[str, MCPConnection]) -> Any:
    """`temporalio-mcp`'s worker plugin for `connections` (None when there are none)."""
    if not connections:
        return None
    # The workflow side's client too (workflows.activity_calls imports it at first
    # use): imported here, at the start of a worker serving MCP agents, so no workflow
    # task of theirs waits for the import.
    from temporalio.mcp import MCPPlugin, TemporalMCPClient  # noqa: F401

    factories: dict[str, Callable[[], Any]] = {n: c.client for n, c in connections.items()}
    return MCPPlugin(factories)
