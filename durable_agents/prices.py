"""A worker's price table: what a million tokens of each model cost, by kind.

`AGENT_PRICES` names a JSON file mapping model names to `ModelPrice` objects:
`{"gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.6, "currency": "USD"}}`.
A run takes its agent's model's price when it starts or resumes
(`AgentSpec.price`): its replies are priced from their recorded tokens, its cost
is summed in `RunState.usage.cost`, and a cost budget can be kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from durable_agents.activities.agent import Agent
from durable_agents.workflows.agent_spec import ModelPrice
from durable_agents.workflows.errors import AgentError
from durable_agents.workflows.payloads import problems

PRICES_ENV = "AGENT_PRICES"
"""Worker environment: path of the JSON price table (unset: no prices)."""

PriceTable = Mapping[str, ModelPrice]
"""Model name -> its price."""

_TABLE = TypeAdapter(dict[str, ModelPrice])


class PriceTableError(AgentError):
    """A price table that cannot be used; the message says why."""


def parse_prices(text: str | bytes, *, source: str = "the price table") -> dict[str, ModelPrice]:
    """The price table in `text` (JSON); PriceTableError with every problem otherwise."""
    try:
        table = _TABLE.validate_json(text, strict=True)
    except ValidationError as err:
        raise PriceTableError(f"{source} is not a valid price table: {problems(err)}") from None
    blank = [name for name in table if not name.strip()]
    if blank:
        raise PriceTableError(f"{source}: a model name cannot be blank")
    return table


def prices_from_env(environ: Mapping[str, str] | None = None) -> dict[str, ModelPrice]:
    """The table `AGENT_PRICES` names; unset: none."""
    env = os.environ if environ is None else environ
    path = env.get(PRICES_ENV)
    if not path:
        return {}
    try:
        text = Path(path).read_bytes()
    except OSError as err:
        raise PriceTableError(f"{PRICES_ENV}: cannot read {path}: {err.strerror}") from None
    return parse_prices(text, source=f"{PRICES_ENV} ({path})")


def unpriced_budgets(agents: Iterable[Agent], table: PriceTable) -> str | None:
    """Why `agents` cannot be served with `table` (an agent with a cost budget whose
    model has no price), or None."""
    unpriced = [
        f"{agent.name} ({agent.model})"
        for agent in agents
        if agent.cost_budget is not None and agent.model not in table
    ]
    if not unpriced:
        return None
    return (
        f"agents with a cost_budget need their model's price ({PRICES_ENV}): {', '.join(unpriced)}"
    )


def describe_prices(table: PriceTable) -> str:
    """One start-up line: the priced models."""
    return f"worker: prices for: {', '.join(sorted(table)) or 'none'}"
