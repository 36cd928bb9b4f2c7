"""Activities (model calls, tool calls) and the API for defining agents."""

from activities.agent import Agent
from activities.tool import Tool, ToolContext, tool
from workflows.state import ApprovalCondition, ApprovalPolicy

__all__ = [
    "Agent",
    "ApprovalCondition",
    "ApprovalPolicy",
    "Tool",
    "ToolContext",
    "tool",
]
