"""The agents the chaos suite runs in real worker processes: tools with durable,
keyed side effects (`tests.chaos.ledger`) and tools that misbehave on purpose."""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta

from temporalio.common import RetryPolicy

from durable_agents import Agent, ToolContext, tool
from tests.chaos import ledger

QUICK_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=2),
    maximum_attempts=5,
)


def _work(ctx: ToolContext, seconds: float) -> None:
    """Work for `seconds` in steps, reporting progress and stopping if cancelled."""
    steps = max(int(seconds * 10), 1)
    for step in range(steps):
        if ctx.cancelled:
            raise RuntimeError("cancelled")
        ctx.heartbeat({"step": step, "of": steps})
        time.sleep(seconds / steps)


@tool(retry_policy=QUICK_RETRY)
def charge(amount: int, seconds: float, ctx: ToolContext) -> str:
    """Charge `amount` after `seconds` of work; applied once per idempotency key."""
    ledger.attempt(ctx.idempotency_key, "charge")
    _work(ctx, seconds)
    return "charged" if ledger.apply(ctx.idempotency_key, "charge") else "already charged"


@tool(retry_policy=QUICK_RETRY, heartbeat_timeout=None)
def charge_silently(amount: int, seconds: float, ctx: ToolContext) -> str:
    """`charge` without a heartbeat timeout: how tools behaved before heartbeats."""
    ledger.attempt(ctx.idempotency_key, "charge_silently")
    _work(ctx, seconds)
    return "charged" if ledger.apply(ctx.idempotency_key, "charge_silently") else "already"


@tool(needs_approval=True, retry_policy=QUICK_RETRY)
def approved_charge(amount: int, seconds: float, ctx: ToolContext) -> str:
    """`charge`, after a person's approval."""
    ledger.attempt(ctx.idempotency_key, "approved_charge")
    _work(ctx, seconds)
    return "charged" if ledger.apply(ctx.idempotency_key, "approved_charge") else "already"


@tool(retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=2))
def explode(ctx: ToolContext) -> str:
    """Always raises."""
    ledger.attempt(ctx.idempotency_key, "explode")
    raise RuntimeError("boom")


@tool(
    timeout=timedelta(seconds=1),
    retry_policy=RetryPolicy(initial_interval=timedelta(milliseconds=100), maximum_attempts=2),
)
async def hang(ctx: ToolContext) -> str:
    """Never answers within its 1 s timeout."""
    import asyncio

    ledger.attempt(ctx.idempotency_key, "hang")
    await asyncio.sleep(3600)
    return "never"


@tool
def stubborn(seconds: float, ctx: ToolContext) -> str:
    """Works `seconds` without ever looking at `ctx.cancelled`."""
    ledger.attempt(ctx.idempotency_key, "stubborn")
    time.sleep(seconds)
    ledger.apply(ctx.idempotency_key, "stubborn")
    return "done anyway"


@tool(retry_policy=RetryPolicy(maximum_attempts=1))
def charge_once(amount: int, seconds: float, ctx: ToolContext) -> str:
    """`charge` with one attempt: a worker lost mid-call fails the call."""
    ledger.attempt(ctx.idempotency_key, "charge_once")
    _work(ctx, seconds)
    return "charged" if ledger.apply(ctx.idempotency_key, "charge_once") else "already"


@tool(at_most_once=True)
def pay_once(amount: int, seconds: float, ctx: ToolContext) -> str:
    """Pay `amount` after `seconds` of work: at most once (no key to deduplicate on)."""
    ledger.attempt(ctx.idempotency_key, "pay_once")
    _work(ctx, seconds)
    ledger.apply(ctx.idempotency_key, "pay_once")
    return "paid"


@tool(at_most_once=True, needs_approval=True)
def approved_pay_once(amount: int, seconds: float, ctx: ToolContext) -> str:
    """`pay_once`, after a person's approval."""
    ledger.attempt(ctx.idempotency_key, "approved_pay_once")
    _work(ctx, seconds)
    ledger.apply(ctx.idempotency_key, "approved_pay_once")
    return "paid"


@tool(at_most_once=True)
def declined_once(amount: int, ctx: ToolContext) -> str:
    """An at-most-once tool that raises before doing anything: its error is its answer."""
    ledger.attempt(ctx.idempotency_key, "declined_once")
    raise RuntimeError(f"card declined for {amount}")


AT_MOST_ONCE_QUEUE = "chaos-at-most-once-tools"
"""The queue `pay_once_elsewhere` runs on, served by a tools-only worker."""


@tool(at_most_once=True, task_queue=AT_MOST_ONCE_QUEUE)
def pay_once_elsewhere(amount: int, seconds: float, ctx: ToolContext) -> str:
    """`pay_once` on workers of a task queue of its own (`worker.py --tools-only`)."""
    ledger.attempt(ctx.idempotency_key, "pay_once_elsewhere")
    _work(ctx, seconds)
    ledger.apply(ctx.idempotency_key, "pay_once_elsewhere")
    return "paid"


@tool
def not_json(ctx: ToolContext) -> object:
    """Returns a value that is not JSON."""
    return object()


@tool
def huge(megabytes: int, ctx: ToolContext) -> str:
    """Returns `megabytes` MB of text."""
    return "x" * (megabytes * 1_000_000)


chaos = Agent(
    name="chaos",
    instructions="Chaos test agent.",
    model="chaos-model",
    tools=[
        charge,
        charge_silently,
        charge_once,
        approved_charge,
        explode,
        hang,
        stubborn,
        not_json,
        huge,
        pay_once,
        approved_pay_once,
        declined_once,
        pay_once_elsewhere,
    ],
    max_turns=4,
    model_timeout=timedelta(seconds=10),
    model_retry_policy=RetryPolicy(
        initial_interval=timedelta(milliseconds=200),
        maximum_interval=timedelta(seconds=2),
        maximum_attempts=1000,
    ),
    model_retry_budget=timedelta(minutes=5),
)

chaos_long = dataclasses.replace(chaos, name="chaos_long", turns_per_workflow_run=1)
"""Continues as new after every model call: kills land around continue-as-new too."""

chaos_lead = dataclasses.replace(
    chaos, name="chaos_lead", tools=[chaos.as_tool(name="delegate")], max_turns=4
)
"""Calls `chaos` as a tool: its plan goes to a child run (`Agent.as_tool`)."""
