"""Which agents a worker serves: every `Agent` found in the modules it is told about."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from durable_agents.activities.agent import Agent
from durable_agents.activities.output_type import OutputType
from durable_agents.activities.output_type import output_type as as_output
from durable_agents.activities.tool import Tool


class AgentRegistry:
    """Agents by name."""

    def __init__(self, agents: Iterable[Agent] = ()) -> None:
        self._agents: dict[str, Agent] = {}
        self._reached: set[str] = set()
        """Names registered only because an added agent reaches them."""
        for agent in agents:
            self.add(agent)

    def add(self, agent: Agent) -> None:
        """Register an agent and the agents it reaches as objects (the `Agent` given to
        a handoff or whose `as_tool` it calls, and theirs in turn), so a module that
        exposes one entry agent serves them all. Two agents added may not share a name;
        an agent only reached never displaces one added (an older copy of it, say)."""
        existing = self._agents.get(agent.name)
        if existing is not None and existing is not agent and agent.name not in self._reached:
            raise ValueError(f"two agents are called '{agent.name}'")
        self._agents[agent.name] = agent
        self._reached.discard(agent.name)
        pending = [agent]
        while pending:
            for tool in pending.pop().all_tools():
                found = tool.target
                if isinstance(found, Agent) and found.name not in self._agents:
                    self._agents[found.name] = found
                    self._reached.add(found.name)
                    pending.append(found)

    def get(self, name: str) -> Agent | None:
        """The agent called `name`, or None."""
        return self._agents.get(name)

    def instructions(self, agent: str) -> Callable[..., Any] | None:
        """`agent`'s instructions function (`Agent(instructions=FUNCTION)`), or None."""
        found = self._agents.get(agent)
        given = found.instructions if found is not None else None
        return given if callable(given) else None

    def approval_rule(
        self, agent: str, tool: str, mcp_server: str | None = None
    ) -> tuple[str, Callable[..., Any]] | None:
        """The code rule of `agent`'s tool `tool` (its name and function), if it has one;
        for a tool of MCP server `mcp_server`, the rule of the agent's server."""
        if mcp_server is not None:
            owner = self._agents.get(agent)
            servers = owner.mcp_servers if owner is not None else ()
            server = next((s for s in servers if s.name == mcp_server), None)
            policy = server.approval if server is not None else None
        else:
            found = self.tool(agent, tool)
            policy = found.approval if found is not None else None
        if policy is None or policy.rule is None or policy.rule_function is None:
            return None
        return policy.rule, policy.rule_function

    def tool(self, agent: str, tool: str) -> Tool | None:
        """`agent`'s tool `tool` on this worker, or None."""
        found = self._agents.get(agent)
        everything = found.all_tools() if found is not None else []  # handoffs too
        return next((t for t in everything if t.name == tool), None)

    def output_type(self, sha256: str) -> OutputType | None:
        """The output type of a served agent whose strict schema has this digest."""
        for agent in self._agents.values():
            if agent.output_type is not None:
                found = as_output(agent.output_type)
                if found.spec.sha256 == sha256:
                    return found
        return None

    def serving_problem(self) -> str | None:
        """Why these agents cannot be served: an agent hands over to, or calls as a tool,
        one not registered here (a run would fail mid-way), or agents call each other
        as tools in a cycle; None if they can."""
        for agent in self.agents():
            for tool in agent.all_tools():
                for target, how in ((tool.handoff, "hands over to"), (tool.runs_agent, "calls")):
                    if target is not None and target not in self._agents:
                        return (
                            f"agent {agent.name} {how} {target!r}, which this worker does "
                            f"not serve (serving: {', '.join(self.names())})"
                        )
        return self._cycle()

    def _cycle(self) -> str | None:
        """Why agents calling each other as tools could nest without end (a cycle:
        A calls B calls A), or None."""
        calls = {
            agent.name: [t.runs_agent for t in agent.all_tools() if t.runs_agent is not None]
            for agent in self.agents()
        }
        for start in calls:
            path, seen = [start], {start}
            stack = [iter(calls[start])]
            while stack:
                step = next(stack[-1], None)
                if step is None:
                    stack.pop()
                    seen.discard(path.pop())
                    continue
                if step == start:
                    return (
                        f"agents call each other as tools in a cycle: {' -> '.join([*path, start])}"
                    )
                if step not in seen and step in calls:
                    path.append(step)
                    seen.add(step)
                    stack.append(iter(calls[step]))
        return None

    def agents(self) -> list[Agent]:
        """Every registered agent, by name."""
        return [self._agents[name] for name in self.names()]

    def names(self) -> list[str]:
        """Every registered agent name, sorted."""
        return sorted(self._agents)

    @classmethod
    def from_modules(cls, module_names: Iterable[str]) -> AgentRegistry:
        """Import each module and register every Agent defined at its top level, and the
        agents each reaches (`add`)."""
        registry = cls()
        for module_name in module_names:
            try:
                module = importlib.import_module(module_name)
            except ImportError as err:
                raise ValueError(f"cannot import agent module '{module_name}': {err}") from err
            found = [v for v in vars(module).values() if isinstance(v, Agent)]
            if not found:
                raise ValueError(f"module '{module_name}' defines no Agent")
            for agent in found:
                registry.add(agent)
        return registry
