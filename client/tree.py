"""`agentctl tree RUN_ID`: a run and its sub-runs (agents it called as tools, each a
child AgentWorkflow, and theirs), with status, agent, turn and pending approvals.

A workflow cannot query its children, so the client assembles the tree: the run's
state names its calls of agent tools (`ToolSpec.runs_agent`) and the ids their runs
were started under (`workflows.agent_calls.child_of`: ids with a part only the workers
can make); each is asked in turn, at most `MAX_RUNS`.
A call whose child never started (a malformed call) has no node.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from durable_agents.client.errors import AgentClientError, RunNotFound
from durable_agents.workflows import agent_calls
from durable_agents.workflows.loop import status_view
from durable_agents.workflows.payloads import PendingApproval, StatusView
from durable_agents.workflows.run_items import AssistantMessage
from durable_agents.workflows.state import RunState

if TYPE_CHECKING:
    from durable_agents.client.agent_client import AgentClient

MAX_RUNS = 200
"""The most runs one tree shows (the rest are counted in `RunNode.left_out`)."""


@dataclass
class RunNode:
    """One run of the tree."""

    run_id: str
    view: StatusView
    pending: list[PendingApproval]
    call_id: str | None = None
    """The call of the parent that runs it (None: the root)."""
    children: list[RunNode] = field(default_factory=list)
    left_out: int = 0
    """Sub-runs not asked (past `MAX_RUNS`)."""
    background: bool = False
    """Its caller started it in the background (`Agent.as_tool(wait=False)`)."""
    unreadable: list[tuple[str, str, str]] = field(default_factory=list)
    """Sub-runs that could not be read: (call id, run id, why)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "call_id": self.call_id,
            "agent": self.view.agent,
            "current_agent": self.view.current_agent or self.view.agent,
            "status": self.view.status.value,
            "turn": self.view.turn,
            "pending_approvals": [p.model_dump(mode="json") for p in self.pending],
            "children": [c.as_json() for c in self.children],
            "unreadable": [
                {"call_id": c, "run_id": r, "error": why} for c, r, why in self.unreadable
            ],
            "left_out": self.left_out,
            "background": self.background,
        }


async def run_tree(agents: AgentClient, run_id: str) -> RunNode:
    """The tree under `run_id` (RunNotFound if there is no such run)."""
    budget = [MAX_RUNS]
    return await _node(agents, run_id, None, budget)


async def _node(
    agents: AgentClient, run_id: str, call_id: str | None, budget: list[int]
) -> RunNode:
    budget[0] -= 1
    state, pending = await asyncio.gather(agents.state(run_id), agents.pending(run_id))
    own = [p for p in pending if p.run_id in (None, run_id)]  # the others show under theirs
    node = RunNode(
        run_id=run_id,
        view=status_view(state),
        pending=own,
        call_id=call_id,
        background=state.background,
    )
    for child_call in child_calls(state):
        if budget[0] <= 0:
            node.left_out += 1
            continue
        child_id = agent_calls.child_of(state, child_call)
        if child_id is None:
            continue  # it started no child (its id is none anyone can compute)
        try:
            node.children.append(await _node(agents, child_id, child_call, budget))
        except RunNotFound:
            continue  # no child: not an agent call, or its child never started
        except AgentClientError as err:  # there, but it cannot say (starting, failed early)
            node.unreadable.append((child_call, child_id, err.message))
    return node


def child_calls(state: RunState) -> list[str]:
    """The ids of the run's calls that may have children, in order: calls of its agent's
    agent tools, and calls of tools its agent does not have (an agent it handed over
    from may have had them as agent tools; those without a child are skipped)."""
    found = []
    for item in state.items:
        for call in item.tool_calls if isinstance(item, AssistantMessage) else []:
            tool = state.agent.tool(call.tool)
            if tool is None or tool.runs_agent is not None:
                found.append(call.call_id)
    return found
