"""Payloads of webhook deliveries: what a run asks its delivery workflow to send, what
the `deliver_webhook` activity is given and answers, and what a delivery reports back to
the run (`workflows.webhook_delivery`, `durable_agents.webhooks`)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DeliveryJob(_Payload):
    """Input of `AgentWebhookDelivery`: one event for one endpoint."""

    endpoint: str = Field(min_length=1, max_length=100)
    webhook_id: str = Field(min_length=1, max_length=300)
    """The Standard Webhooks `webhook-id`: the run and the event's number, the same on
    every attempt, so a receiver deduplicates by it."""
    run_id: str = Field(min_length=1)
    """The run (workflow id) told how the delivery goes (`webhook_delivery` signal)."""
    event: dict[str, JsonValue]


class DeliveryRequest(_Payload):
    """Input of the `deliver_webhook` activity: one attempt."""

    endpoint: str
    webhook_id: str
    event: dict[str, JsonValue]
    attempt: int = Field(ge=1)
    first_try_at: datetime
    """When the first attempt was scheduled: the worker gives up its endpoint's
    `give_up_after` later."""


class DeliveryResult(_Payload):
    """What one attempt came to (`deliver_webhook`)."""

    outcome: Literal["delivered", "retry", "refused", "gave_up"]
    """delivered: 2xx; retry: no answer, 408, 429 or 5xx, tried again after
    `retry_in_seconds`; refused: another answer (not tried again); gave_up: a retry was
    due past the endpoint's `give_up_after`."""
    code: int | None = None
    error: str | None = Field(None, max_length=500)
    retry_in_seconds: float | None = Field(None, ge=0)


class DeliveryReport(_Payload):
    """Payload of the `webhook_delivery` signal: how a delivery goes, from its delivery
    workflow to the run (recorded in `RunState.webhook_deliveries`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    endpoint: str = Field(min_length=1, max_length=100)
    webhook_id: str = Field(min_length=1, max_length=300)
    event: str = Field(min_length=1, max_length=50)
    status: Literal["sending", "failing", "delivered", "refused", "gave_up"]
    attempts: int = Field(ge=0, le=1_000_000)
    code: int | None = Field(None, ge=100, le=599)
    error: str | None = Field(None, max_length=500)
    next_try_at: str | None = Field(None, max_length=40)
