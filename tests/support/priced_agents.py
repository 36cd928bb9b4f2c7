"""A priced agent, in a module of its own: its worker needs the price table
(`PRICES`, given by the test workers of `tests.conftest`), which workers started
as `worker.py` with `tests.support.agents` do not have."""

from __future__ import annotations

import dataclasses

from durable_agents import ModelPrice, ModelSettings
from tests.support import agents

PRICES = {
    "priced-model": ModelPrice(input=1000.0, cached_input=500.0, output=2000.0, currency="EUR")
}
"""The test workers' price table: one model, priced so a few tokens cost a lot
(1 EUR per thousand input tokens, 2 EUR per thousand output tokens)."""

spender = dataclasses.replace(
    agents.assistant,
    name="spender",
    model="priced-model",
    tools=[agents.add, agents.send_email],
    cost_budget=50.0,
    model_settings=ModelSettings(max_output_tokens=100),
)
"""Priced (`PRICES`), with a cost budget of 50 EUR a run may lower."""
