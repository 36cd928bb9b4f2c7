"""Activities (model calls, tool calls) and the API for defining agents."""

if (
    __name__ != "durable_agents.activities"
):  # the repository's folder imported as a top-level package
    raise ImportError(
        f"import durable_agents.activities, not {__name__}: everything installs under the "
        "durable_agents namespace (agents: `from durable_agents import Agent, tool`)"
    )


from durable_agents.activities.agent import Agent
from durable_agents.activities.tool import Tool, ToolContext, tool
from durable_agents.workflows.agent_spec import ApprovalCondition, ApprovalPolicy

__all__ = [
    "Agent",
    "ApprovalCondition",
    "ApprovalPolicy",
    "Tool",
    "ToolContext",
    "tool",
]
