"""`fresh_id`: the random part of an id someone squatted the usual one of (a sub-agent's
run), drawn on the worker from the operating system's generator, never from the
workflow's seed (`workflows.fresh_ids`)."""

from __future__ import annotations

import secrets

from durable_agents.workflows import contract
from temporalio import activity


@activity.defn(name=contract.ACTIVITY_FRESH_ID)
async def fresh_id() -> str:
    """16 hex digits no one can compute ahead."""
    return secrets.token_hex(8)
