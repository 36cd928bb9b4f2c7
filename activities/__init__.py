"""Activities (model calls, tool calls) and the API for defining agents."""

if (
    __name__ != "durable_agents.activities"
):  # the repository's folder imported as a top-level package
    raise ImportError(
        f"import durable_agents.activities, not {__name__}: everything installs under the "
        "durable_agents namespace (agents: `from durable_agents import Agent, tool`)"
    )


import importlib
from typing import Any

# `tool` is bound here, not when first asked for: it names a submodule too, and the
# import of `durable_agents.activities.tool` would leave the module under that name.
from durable_agents.activities.tool import Tool, ToolContext, tool
from durable_agents.workflows.agent_spec import ApprovalCondition, ApprovalPolicy

_EXPORTS = {"Agent": "durable_agents.activities.agent"}
"""Imported when first asked for: a module of this package (the CLI's
`user_content`, say) is imported without the agent API and the `openai` client it
brings (about half a second of every `agentctl` start)."""

__all__ = ["Agent", "ApprovalCondition", "ApprovalPolicy", "Tool", "ToolContext", "tool"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'durable_agents.activities' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
