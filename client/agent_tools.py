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

from datetime import timedelta
from typing import Any
from uuid import uuid4

from durable_agents.client.errors import AgentClientError, AgentNotServed
from durable_agents.workflows import contract, mcp_tools
from durable_agents.workflows.payloads import DescribeAgentInput
from durable_agents.workflows.state import AgentSpec
from mcp.types import ListToolsResult
from pydantic import ValidationError
from temporalio.client import ActivityFailureError, Client
from temporalio.common import RetryPolicy
from temporalio.mcp._activity import _activity_name  # pyright: ignore[reportPrivateUsage]
from temporalio.service import RPCError, RPCStatusCode

from durable_agents import served_agents

TIMEOUT = timedelta(seconds=30)
"""How long one question to a worker may take, queued and run."""


class ToolsUnavailable(AgentClientError):
    """The workers could not say what an agent's tools are."""


async def agent_tools(client: Client, task_queue: str, agent: str) -> AgentSpec:
    """The spec `agent` would have in a run started now, its MCP tools included.
    Raises AgentNotServed when no worker serves it, ToolsUnavailable when a worker or
    an MCP server cannot answer."""
    try:
        queue = await served_agents.task_queue_for(client, task_queue, agent)
    except served_agents.NotServed as err:
        raise AgentNotServed(str(err)) from None
    spec = await _ask(
        client, queue, contract.ACTIVITY_DESCRIBE_AGENT, DescribeAgentInput(agent=agent), AgentSpec
    )
    listed: dict[str, list[dict[str, Any]]] = {}
    for server in spec.mcp_servers:
        name = _activity_name(server.name, "list-tools")
        answer = await _ask(client, queue, name, {"factory_argument": None}, dict, server.name)
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


async def _ask(
    client: Client,
    queue: str,
    activity: str,
    arg: object,
    result_type: type,
    server: str | None = None,
) -> Any:
    """One standalone activity on the agent's task queue, tried once."""
    what = f"MCP server {server!r}" if server else "the worker"
    try:
        return await client.execute_activity(
            activity,
            arg,
            id=f"agent-tools-{uuid4().hex[:12]}",
            task_queue=queue,
            result_type=result_type,
            schedule_to_close_timeout=TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
            summary=f"agentctl tools: {activity}",
        )
    except ActivityFailureError as err:
        cause: BaseException = err
        while cause.__cause__ is not None:
            cause = cause.__cause__
        message = getattr(cause, "message", None) or str(cause)
        raise ToolsUnavailable(f"{what} did not answer: {message}") from None
    except RPCError as err:
        hint = (
            "; listing tools runs standalone activities, which this Temporal server must "
            "allow (dynamic config activity.enableStandalone)"
            if err.status in (RPCStatusCode.UNIMPLEMENTED, RPCStatusCode.FAILED_PRECONDITION)
            or "standalone" in err.message.lower()
            else ""
        )
        raise ToolsUnavailable(f"cannot ask {what}: {err.message}{hint}") from None
    except (ValueError, TypeError) as err:  # an answer this client cannot read
        raise ToolsUnavailable(
            f"cannot read the answer of {what} (a worker of another build?): {err}"
        ) from None
