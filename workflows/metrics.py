"""Workflow-side metrics; replay-safe (the SDK records nothing while replaying).

Exposed with the worker's runtime metrics (Prometheus when the worker enables it).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import MetricMeter

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows.agent_spec import ModelPrice
    from durable_agents.workflows.run_items import Usage


def turn(agent: str) -> None:
    """One model call made by a run of `agent`."""
    _meter(agent).create_counter("agent_turns", "Model calls made by agent runs").add(1)


def replied(agent: str, usage: Usage | None, price: ModelPrice | None) -> None:
    """A model call of a run of `agent` answered (`usage`: what it used, priced)."""
    turn(agent)
    if price is not None and usage is not None:
        cost(agent, price.currency, usage.cost)


def cost(agent: str, currency: str, amount: float) -> None:
    """What one model call of a run of `agent` cost, at the run's price (counted in
    millionths of the currency: counters are whole numbers)."""
    counter = _meter(agent).create_counter(
        "agent_model_cost", "Model spend at the worker's prices", "micro"
    )
    counter.add(round(amount * 1_000_000), {"currency": currency})


def finished(agent: str, status: str) -> None:
    """A run of `agent` ended with `status`."""
    counter = _meter(agent).create_counter("agent_runs_finished", "Agent runs by final status")
    counter.add(1, {"status": status})


def approval_wait(agent: str, tool: str, waited: timedelta) -> None:
    """How long a call of `tool` waited for its decision (workflow time)."""
    histogram = _meter(agent).create_histogram_timedelta(
        "agent_approval_wait", "Time from a tool call's proposal to its decision", unit="ms"
    )
    histogram.record(max(waited, timedelta(0)), {"tool": tool})


def webhook_attempt(endpoint: str, outcome: str, code: int | None) -> None:
    """One attempt to deliver a webhook, by its outcome (delivered, retry, refused,
    gave_up) and the receiver's status code (none: no answer)."""
    counter = workflow.metric_meter().create_counter(
        "agent_webhook_attempts", "Webhook delivery attempts by outcome"
    )
    counter.add(1, {"endpoint": endpoint, "outcome": outcome, "code": str(code or "none")})


def _meter(agent: str) -> MetricMeter:
    return workflow.metric_meter().with_additional_attributes({"agent": agent})
