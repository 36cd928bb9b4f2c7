"""Fixtures shared by the integration tests of several modules."""

from __future__ import annotations

import pytest

from tests.conftest import serving
from tests.support.multi_agents import AGENT_TOOL_AGENTS, NOTICES


@pytest.fixture
async def team(env, model_server):
    """A worker serving the agents that call each other as tools
    (`tests.support.multi_agents`), their notices cleared."""
    NOTICES.clear()
    async with serving(env.client, model_server, extra_agents=AGENT_TOOL_AGENTS) as running:
        yield running
        model_server.stop()  # a reply still delayed ends now, not in the worker's drain
