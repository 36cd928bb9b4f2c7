"""Durable AI agents on Temporal: the public face.

    from durable_agents import Agent, AgentClient, AgentsPlugin, tool

Everything else lives in the subpackages (`durable_agents.workflows`: the workflow,
its pure loop and the RunState contract; `.activities`: model and tool calls;
`.client`: AgentClient, agentctl and the data plane; `.testing`: the scripted
OpenAI-compatible model). Names are loaded on first use, so importing the package
(as the workflow sandbox does for every run) costs nothing.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durable_agents.activities.agent import Agent
    from durable_agents.activities.approval_rules import ApprovalContext
    from durable_agents.activities.evaluate import Verdict
    from durable_agents.activities.guardrail import (
        GuardrailContext,
        input_guardrail,
        output_guardrail,
    )
    from durable_agents.activities.handoff import handoff
    from durable_agents.activities.instructions import InstructionsContext
    from durable_agents.activities.tool import Tool, ToolContext, tool
    from durable_agents.client.agent_client import AgentClient
    from durable_agents.client.errors import AgentClientError, RunFailed
    from durable_agents.client.run import AgentRun
    from durable_agents.plugin import AgentsPlugin
    from durable_agents.workflows.agent_spec import (
        ApprovalCondition,
        ApprovalPolicy,
        ContextPolicy,
        ModelPrice,
        ModelSettings,
        WebhookSubscription,
    )
    from durable_agents.workflows.check_payloads import GuardrailResult
    from durable_agents.workflows.errors import AgentError, DecisionRefused
    from durable_agents.workflows.payloads import AgentInput, AgentResult
    from durable_agents.workflows.state import RunState, RunStatus

_EXPORTS = {
    "Agent": "durable_agents.activities.agent",
    "AgentClient": "durable_agents.client.agent_client",
    "AgentClientError": "durable_agents.client.errors",
    "AgentInput": "durable_agents.workflows.payloads",
    "AgentResult": "durable_agents.workflows.payloads",
    "AgentRun": "durable_agents.client.run",
    "AgentsPlugin": "durable_agents.plugin",
    "ApprovalCondition": "durable_agents.workflows.agent_spec",
    "ApprovalContext": "durable_agents.activities.approval_rules",
    "ApprovalPolicy": "durable_agents.workflows.agent_spec",
    "ContextPolicy": "durable_agents.workflows.agent_spec",
    "DecisionRefused": "durable_agents.workflows.errors",
    "GuardrailContext": "durable_agents.activities.guardrail",
    "GuardrailResult": "durable_agents.workflows.check_payloads",
    "handoff": "durable_agents.activities.handoff",
    "InstructionsContext": "durable_agents.activities.instructions",
    "input_guardrail": "durable_agents.activities.guardrail",
    "output_guardrail": "durable_agents.activities.guardrail",
    "ModelSettings": "durable_agents.workflows.agent_spec",
    "MCPServer": "durable_agents.workflows.agent_spec",
    "ModelPrice": "durable_agents.workflows.agent_spec",
    "AgentError": "durable_agents.workflows.errors",
    "RunFailed": "durable_agents.client.errors",
    "RunState": "durable_agents.workflows.state",
    "RunStatus": "durable_agents.workflows.state",
    "Tool": "durable_agents.activities.tool",
    "Verdict": "durable_agents.activities.evaluate",
    "ToolContext": "durable_agents.activities.tool",
    "tool": "durable_agents.activities.tool",
    "WebhookSubscription": "durable_agents.workflows.agent_spec",
}

__all__ = [
    "Agent",
    "AgentClient",
    "AgentClientError",
    "AgentError",
    "AgentInput",
    "AgentResult",
    "AgentRun",
    "AgentsPlugin",
    "ApprovalCondition",
    "ApprovalContext",
    "ApprovalPolicy",
    "ContextPolicy",
    "DecisionRefused",
    "GuardrailContext",
    "GuardrailResult",
    "InstructionsContext",
    "MCPServer",
    "ModelPrice",
    "ModelSettings",
    "RunFailed",
    "RunState",
    "RunStatus",
    "Tool",
    "ToolContext",
    "Verdict",
    "WebhookSubscription",
    "handoff",
    "input_guardrail",
    "output_guardrail",
    "tool",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'durable_agents' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


# A checkout used without installing: the subpackages are the repository's
# top-level folders (`workflows/`, `activities/`, `client/`), which packaging maps
# into this namespace (pyproject.toml, `package-dir`); an installed wheel has them
# here, inside the package, and this does nothing.
_here = os.path.dirname(os.path.abspath(__file__))
_checkout = os.path.dirname(_here)
if not os.path.isdir(os.path.join(_here, "workflows")) and os.path.isfile(
    os.path.join(_checkout, "workflows", "contract.py")
):
    __path__.append(_checkout)
