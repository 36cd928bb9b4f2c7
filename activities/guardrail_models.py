"""A guardrail's own model calls, made with the worker's model API and counted.

A guardrail that runs an agent (`GuardrailContext.run_agent`, or an OpenAI Agents SDK
guardrail that calls `Runner.run`, `durable_agents.openai_agents`) asks the model
through the worker's client, never a client of its own: the tokens come back with
the verdict (`GuardrailVerdict.usage`), priced from the worker's price table, and the
run counts them in its usage and budgets (`workflows.guardrails.record`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import openai
from durable_agents.activities.output_type import output_type
from durable_agents.workflows import loop
from durable_agents.workflows.agent_spec import ModelPrice
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.run_items import Usage
from pydantic import JsonValue, TypeAdapter

if TYPE_CHECKING:
    from durable_agents.activities.agent import Agent
    from durable_agents.activities.model_api import ModelActivities


class GuardrailModels:
    """The worker's model API as one guardrail check sees it; sums what it used."""

    def __init__(
        self, models: ModelActivities, prices: Mapping[str, ModelPrice] | None = None
    ) -> None:
        self._models = models
        self._prices = dict(prices or {})
        self.used: Usage | None = None
        """What this check's model calls used (None: it made none)."""

    def for_check(self) -> GuardrailModels:
        """A fresh counter for one guardrail check, on the same API."""
        return GuardrailModels(self._models, self._prices)

    @property
    def openai_client(self) -> openai.AsyncOpenAI | None:
        """The worker's `openai` client (None: the worker speaks through another API)."""
        return self._models.openai_client

    @property
    def api(self) -> str:
        """The model API the worker speaks by default (`chat_completions`, `responses`)."""
        return self._models.default_api

    def count(self, usage: Usage, *, model: str | None) -> None:
        """Add `usage` (of calls to `model`), priced if the worker has its price."""
        price = self._prices.get(model) if model is not None else None
        if price is not None:
            usage = usage.model_copy(update={"cost": price.cost(usage)})
        self.used = usage if self.used is None else self.used.plus(usage)

    async def run_agent(self, agent: Agent, text: str, *, context: JsonValue, run_id: str) -> Any:
        """`agent`'s answer to `text` in one model call (its typed output if it has an
        output type); ValueError if it has tools or handoffs, or its reply is no output."""
        if agent.tools or agent.handoffs:
            raise ValueError(
                f"a guardrail's agent answers in one model call: {agent.name} has tools or handoffs"
            )
        spec = agent.spec(None, self._prices.get(agent.model))
        state = loop.new_state(
            spec,
            AgentInput(agent=agent.name, input=text, context=context),
            run_id=f"{run_id}/guardrail/{agent.name}",
            now=datetime.now(UTC),
        )
        typed = output_type(agent.output_type) if agent.output_type is not None else None
        reply = await self._models.reply(
            loop.model_request(state), output=typed.spec if typed is not None else None
        )
        self.count(reply.usage, model=agent.model)
        if reply.tool_calls:
            raise ValueError(f"guardrail agent {agent.name} called a tool instead of answering")
        if typed is None:
            return reply.content or ""
        check = typed.check(reply.content)
        if not check.valid:
            raise ValueError(f"guardrail agent {agent.name}'s reply is no output: {check.problem}")
        return TypeAdapter(agent.output_type).validate_python(check.value)
