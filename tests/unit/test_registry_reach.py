"""A worker serves the agents an agent reaches as objects (`AgentRegistry.add`)."""

from __future__ import annotations

import pytest
from durable_agents.activities.agent import Agent
from durable_agents.activities.handoff import handoff
from durable_agents.activities.registry import AgentRegistry


def test_an_entry_agent_brings_its_handoff_targets_and_agents_called_as_tools():
    researcher = Agent(name="researcher", instructions="")
    billing = Agent(name="billing", instructions="", tools=[researcher.as_tool()])
    shipping = Agent(name="shipping", instructions="", handoffs=["triage"])
    triage = Agent(name="triage", instructions="", handoffs=[billing, handoff(shipping)])
    registry = AgentRegistry([triage])
    assert registry.names() == ["billing", "researcher", "shipping", "triage"]
    assert registry.get("researcher") is researcher
    assert registry.serving_problem() is None


def test_an_added_agent_wins_over_a_reached_copy_and_two_added_ones_clash():
    old = Agent(name="billing", instructions="old")
    new = Agent(name="billing", instructions="new")
    triage = Agent(name="triage", instructions="", handoffs=[old])
    registry = AgentRegistry([triage, new])
    assert registry.get("billing") is new
    assert AgentRegistry([new, triage]).get("billing") is new
    with pytest.raises(ValueError, match="two agents are called 'billing'"):
        AgentRegistry([new, old])
