"""An agent's tools as a run of it would get them, asked of the workers that serve it.

The tools live on the workers (their registry; MCP tools on servers only the
worker can reach, with the worker's credentials), so `agent_tools` asks a worker,
with the same activities a run's start uses, run as standalone activities (no
workflow, nothing in any run's history): `describe_agent`, then each MCP server's
tool list through `temporalio-mcp`. `workflows.mcp_tools.with_mcp_tools` then
freezes them as a run does, so the approval rules shown are the ones a run started
now would apply.
"""

from __future__ import annotations

from typing import Any

from durable_agents.client.ask_worker import WorkerUnavailable, ask_worker
from durable_agents.client.errors import AgentNotServed
from durable_agents.workflows import contract, mcp_tools
from durable_agents.workflows.agent_spec import AgentSpec
from durable_agents.workflows.payloads import DescribeAgentInput, DescribedAgent
from pydantic import ValidationError
from temporalio.client import Client

from durable_agents import served_agents


class ToolsUnavailable(WorkerUnavailable):
    """The workers could not say what an agent's tools are."""


async def agent_tools(client: Client, task_queue: str, agent: str) -> AgentSpec:
    """The spec `agent` would have in a run started now, its MCP tools included.
    Raises AgentNotServed when no worker serves it, WorkerUnavailable (ToolsUnavailable:
    the answer cannot be used) when a worker or an MCP server cannot answer."""
    try:
        queue = await served_agents.task_queue_for(client, task_queue, agent)
    except served_agents.NotServed as err:
        raise AgentNotServed(str(err)) from None
    described = await ask_worker(
        client,
        queue,
        contract.ACTIVITY_DESCRIBE_AGENT,
        DescribeAgentInput(agent=agent),
        DescribedAgent,
        "the worker",
    )
    spec = described.spec
    if spec is None:
        raise ToolsUnavailable(f"the worker described no spec of agent {agent!r}")
    listed: dict[str, list[dict[str, Any]]] = {}
    if spec.mcp_servers:  # imported only then: the MCP SDK takes 0.4 s to load
        from mcp.types import ListToolsResult
        from temporalio.mcp._activity import _activity_name  # pyright: ignore
    for server in spec.mcp_servers:
        name = _activity_name(server.name, "list-tools")
        answer = await ask_worker(
            client, queue, name, {"factory_argument": None}, dict, f"MCP server {server.name!r}"
        )
        try:  # as the workflow reads it (temporalio.mcp.TemporalMCPClient.list_tools)
            tools = ListToolsResult.model_validate(answer).tools
        except ValidationError as err:
            raise ToolsUnavailable(
                f"MCP server {server.name!r} listed no valid tools: {err}"
            ) from None
        listed[server.name] = [t.model_dump(mode="json", by_alias=True) for t in tools]
    try:
        return mcp_tools.with_mcp_tools(spec, listed)
    except ValueError as err:
        raise ToolsUnavailable(f"a run of {agent!r} could not start: {err}") from None
