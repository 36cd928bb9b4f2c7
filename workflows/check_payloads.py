"""Payloads of the checks made beside a run's calls, each an activity of its own: a
policy's evaluator deciding a waiting call (`evaluate_call`) and a guardrail checking a
message or an output (`run_guardrail`). Plain JSON, as every payload
(`workflows.payloads`)."""

from __future__ import annotations

from typing import Literal

from durable_agents.workflows.agent_spec import EvaluatorRef
from durable_agents.workflows.payloads import ModelRequest
from durable_agents.workflows.run_items import Usage
from pydantic import BaseModel, ConfigDict, Field, JsonValue


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvaluationRequest(_Payload):
    """Input of `evaluate_call`: one waiting call, for its policy's evaluator."""

    run_id: str
    agent: str
    tool: str
    call_id: str
    arguments: str
    """The call's arguments (JSON text), as the person deciding sees them."""
    context: JsonValue = None
    evaluator: EvaluatorRef
    """Which evaluator: the worker checks it is the one its tool names now."""
    model_request: ModelRequest | None = None
    """(An agent) the model call to make, built by the run (so it is held to the run's
    budgets before it starts)."""


class EvaluationResult(_Payload):
    """Result of `evaluate_call`: what the evaluator said."""

    verdict: Literal["approve", "reject", "escalate"]
    reason: str | None = Field(None, max_length=2_000)
    usage: Usage | None = None
    """(An agent) what its model call used."""


class GuardrailResult(_Payload):
    """What a guardrail function returns."""

    tripped: bool
    """True: stop the run (`guardrail_tripped`)."""
    reason: str | None = None
    """Why, for the people who read the run (kept in RunState, at most 2,000 characters)."""


class GuardrailRequest(_Payload):
    """Input of `run_guardrail`."""

    run_id: str
    agent: str
    name: str
    kind: Literal["input", "output"]
    value: JsonValue
    """What it checks: the user's message, or the final output (JSON for a typed one)."""
    context: JsonValue = None


class GuardrailVerdict(_Payload):
    """Result of `run_guardrail`."""

    name: str
    tripped: bool
    reason: str | None = None
    usage: Usage | None = None
    """What its model calls used (the agents it ran), priced by the worker if it can."""
