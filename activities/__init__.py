"""Activities (model calls, tool calls) and the API for defining agents."""

from activities.agent import Agent
from activities.tool import Tool, ToolContext, tool

__all__ = ["Agent", "Tool", "ToolContext", "tool"]
