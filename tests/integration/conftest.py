"""Fixtures shared by the integration tests of several modules."""

from __future__ import annotations

import pytest

from tests.conftest import NO_DRAIN, serving
from tests.support.multi_agents import AGENT_TOOL_AGENTS, NOTICES


@pytest.fixture
async def team(env, model_server):
    """A worker serving the agents that call each other as tools
    (`tests.support.multi_agents`), their notices cleared."""
    NOTICES.clear()
    agents = AGENT_TOOL_AGENTS
    async with serving(env.client, model_server, extra_agents=agents, drain=NO_DRAIN) as running:
        yield running
