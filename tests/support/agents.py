"""Agents used by the tests, with tools that record what they did."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from datetime import timedelta

from pydantic import BaseModel
from temporalio.common import RetryPolicy

from durable_agents import (
    Agent,
    ApprovalCondition,
    ApprovalPolicy,
    ContextPolicy,
    GuardrailContext,
    GuardrailResult,
    ModelSettings,
    ToolContext,
    input_guardrail,
    output_guardrail,
    tool,
)

CALLS: list[tuple[str, dict, str]] = []
"""(tool, arguments, idempotency key) of every tool execution in this process."""

NAPS: list[tuple[float, float]] = []
"""(start, end) on the monotonic clock of every `nap` that finished."""

FAST_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=100),
    maximum_interval=timedelta(seconds=1),
    maximum_attempts=3,
)


@tool
def add(a: int, b: int, ctx: ToolContext) -> int:
    """Add two integers."""
    CALLS.append(("add", {"a": a, "b": b}, ctx.idempotency_key))
    return a + b


@tool(needs_approval=True)
async def send_email(to: str, body: str, ctx: ToolContext) -> str:
    """Send an email (needs a person's approval)."""
    CALLS.append(("send_email", {"to": to, "body": body}, ctx.idempotency_key))
    return f"sent to {to}"


@tool(retry_policy=FAST_RETRY)
def flaky(ctx: ToolContext) -> str:
    """Always raises, to show that a tool's failure goes back to the model."""
    CALLS.append(("flaky", {}, ctx.idempotency_key))
    raise RuntimeError("disk on fire")


@tool(
    needs_approval=ApprovalPolicy(
        when=[ApprovalCondition(field="amount", op=">", value=100)], approvers=["ann", "boss"]
    )
)
def refund(order: str, amount: float, ctx: ToolContext) -> str:
    """Refund an order; above 100 only ann or boss may approve."""
    CALLS.append(("refund", {"order": order, "amount": amount}, ctx.idempotency_key))
    return f"refunded {amount} on {order}"


@tool(needs_approval=ApprovalPolicy(timeout=timedelta(seconds=1)))
def wire(amount: float, ctx: ToolContext) -> str:
    """Wire money; a call not decided within 1 s is rejected."""
    CALLS.append(("wire", {"amount": amount}, ctx.idempotency_key))
    return "wired"


@tool(needs_approval=ApprovalPolicy(timeout=timedelta(seconds=1), on_timeout="fail"))
def launch(ctx: ToolContext) -> str:
    """Launch; a call not decided within 1 s fails the run."""
    CALLS.append(("launch", {}, ctx.idempotency_key))
    return "launched"


assistant = Agent(
    name="assistant",
    instructions="You are a test assistant.",
    model="test-model",
    tools=[add, send_email, flaky, refund, wire, launch],
    max_turns=4,
    model_retry_policy=RetryPolicy(
        initial_interval=timedelta(milliseconds=200),
        maximum_interval=timedelta(seconds=5),
        maximum_attempts=4,
    ),
)


@tool
def blob(size: int, ctx: ToolContext) -> str:
    """Return `size` characters (a very large tool output)."""
    CALLS.append(("blob", {"size": size}, ctx.idempotency_key))
    return "B" * size


@tool
async def nap(seconds: float, ctx: ToolContext) -> str:
    """Sleep `seconds`: a slow tool that needs no approval."""
    CALLS.append(("nap", {"seconds": seconds}, ctx.idempotency_key))
    began = time.monotonic()
    await asyncio.sleep(seconds)
    NAPS.append((began, time.monotonic()))
    return f"slept {seconds}"


assistant = dataclasses.replace(assistant, tools=[*assistant.tools, blob, nap])

concierge = dataclasses.replace(
    assistant, name="concierge", turns_per_workflow_run=2, tool_output_limit=1000
)
"""Continues as new every 2 model calls, shows the model 1,000 characters per result."""

sleepy = dataclasses.replace(assistant, name="sleepy", session_idle_timeout=timedelta(seconds=1))
"""A session that ends after 1 s without a message."""

marathon = dataclasses.replace(assistant, name="marathon", max_turns=200)
"""Allowed 200 model calls per message (long tool loops; a start input may not lift
an agent's own limit); the default continue-as-new budget (300 model calls)."""

frugal = dataclasses.replace(
    assistant, name="frugal", history_bytes_per_workflow_run=8_000, turns_per_workflow_run=1_000
)
"""Continues as new once a workflow run's history passes 8,000 bytes."""


@tool(retry_policy=RetryPolicy(maximum_attempts=5, non_retryable_error_types=["LookupError"]))
def find(key: str, ctx: ToolContext) -> str:
    """Look `key` up; a missing key raises LookupError, which is never retried."""
    CALLS.append(("find", {"key": key}, ctx.idempotency_key))
    raise LookupError(f"no {key}")


assistant = dataclasses.replace(assistant, tools=[*assistant.tools, find])


@tool(
    needs_approval=ApprovalPolicy(
        require_signature=True,
        approvers=["alice"],
        allow_always=False,
        limits=[ApprovalCondition(field="amount", op="<=", value=1000)],
    )
)
def pay(order: str, amount: float, ctx: ToolContext) -> str:
    """Pay out; only alice, with a signed decision, never more than 1000 at once."""
    CALLS.append(("pay", {"order": order, "amount": amount}, ctx.idempotency_key))
    return f"paid {amount} on {order}"


treasurer = dataclasses.replace(
    assistant, name="treasurer", tools=[pay, refund, send_email, add], max_turns=6
)
"""Moves money: `pay` needs alice's signed decision (workers know her key,
`tests.support.approver_keys`) within a limit; `refund` and `send_email` as the
assistant's."""


@tool(
    needs_approval=ApprovalPolicy(require_signature=True, separate_duties=True),
    sensitive=["iban"],
)
def transfer(iban: str, amount: float, ctx: ToolContext) -> str:
    """Wire money; approved (signed) by someone other than who started the run. The
    account number is sensitive: people see it only on request."""
    CALLS.append(("transfer", {"iban": iban, "amount": amount}, ctx.idempotency_key))
    return f"sent {amount}"


custodian = dataclasses.replace(assistant, name="custodian", tools=[transfer, add], max_turns=6)
"""Four eyes: `transfer` separates duties (the signed starter may not approve it) and
hides the account number."""


@tool(name="lookup_order")
def _lookup_order(order_id: int, ctx: ToolContext) -> str:
    """Find an order."""
    CALLS.append(("lookup_order", {"order_id": order_id}, ctx.idempotency_key))
    return f"order {order_id}"


@tool(
    name="refund",
    needs_approval=ApprovalPolicy(
        when=[ApprovalCondition(field="amount", op=">", value=100)],
        approvers=["alice", "bob"],
        timeout=timedelta(hours=24),
    ),
)
def _support_refund(order_id: int, amount: float, ctx: ToolContext) -> str:
    """Refund an order."""
    CALLS.append(("refund", {"order_id": order_id, "amount": amount}, ctx.idempotency_key))
    return f"refunded {amount} on order {order_id}"


@tool(
    name="delete_account",
    needs_approval=ApprovalPolicy(
        approvers=["bob"], timeout=timedelta(minutes=30), on_timeout="fail"
    ),
)
def _delete_account(ctx: ToolContext) -> str:
    """Delete the account."""
    CALLS.append(("delete_account", {}, ctx.idempotency_key))
    return "deleted"


support = dataclasses.replace(
    assistant,
    name="support",
    instructions="Help customers with orders.",
    tools=[_lookup_order, _support_refund, _delete_account],
    max_turns=8,
)
"""The agent of the golden snapshots (tests/fixtures): a resumed snapshot takes its
tools and policies from the worker, so the worker must serve it."""


class RefundDecision(BaseModel):
    """A structured answer: whether to refund, how much, and why."""

    approve: bool
    amount: float
    reason: str | None


decider = dataclasses.replace(
    assistant, name="decider", tools=[add], output_type=RefundDecision, max_turns=6
)
"""Answers with a RefundDecision (structured output, two retries)."""

tally = dataclasses.replace(
    assistant, name="tally", tools=[add], output_type=int, output_retries=0, max_turns=6
)
"""Answers with an int, and no second chance."""

tuned = dataclasses.replace(
    assistant,
    name="tuned",
    tools=[add],
    model_settings=ModelSettings(
        temperature=0.3,
        top_p=0.8,
        max_output_tokens=256,
        tool_choice="add",
        parallel_tool_calls=False,
        reasoning_effort="low",
        seed=11,
        stop=["END"],
        metadata={"team": "qa"},
        extra_headers={"X-Tenant": "acme"},
        extra_body={"top_k": 40},
    ),
)
"""Sets every model setting."""


@input_guardrail(retry_policy=FAST_RETRY)
def no_passwords(text: str, ctx: GuardrailContext) -> GuardrailResult:
    """Trips on a message that gives a password away; "boom" makes it fail."""
    CALLS.append(("no_passwords", {"text": text}, ctx.run_id))
    if "boom" in text:
        raise RuntimeError("the checker is down")
    return GuardrailResult(tripped="password" in text.lower(), reason="a password was shared")


@output_guardrail(retry_policy=RetryPolicy(maximum_attempts=1))
async def refund_cap(decision: RefundDecision) -> GuardrailResult:
    """Trips on a refund over 1000."""
    CALLS.append(("refund_cap", decision.model_dump(), ""))
    return GuardrailResult(tripped=decision.amount > 1000, reason=f"{decision.amount} is over 1000")


guarded = dataclasses.replace(
    decider, name="guarded", input_guardrails=[no_passwords], output_guardrails=[refund_cap]
)
"""Checks each message, and its RefundDecision."""

thinker = dataclasses.replace(
    assistant,
    name="thinker",
    model="o-test",
    model_api="responses",
    model_settings=ModelSettings(reasoning_effort="medium"),
    max_turns=6,
)
"""Speaks the Responses API (reasoning items carried in the run), with the assistant's
tools: `send_email` needs approval."""

asker = dataclasses.replace(
    assistant,
    name="asker",
    tools=[add],
    token_budget=600,
    on_budget="ask",
    model_settings=ModelSettings(max_output_tokens=100),
    budget_approval=ApprovalPolicy(
        approvers=["ann", "alice"],
        limits=[ApprovalCondition(field="token_budget", op="<=", value=5000)],
        timeout=timedelta(seconds=20),
    ),
)
"""At its budget of 600 tokens, asks ann or alice to extend it (to 5,000 at most; a
request waits 20 s, then counts as rejected)."""

forgetful = dataclasses.replace(
    assistant,
    name="forgetful",
    max_turns=10,
    context=ContextPolicy(max_input_tokens=2_500, keep_recent_turns=2),
)
"""Sends the model at most about 2,500 tokens: older tool outputs become stubs."""

digester = dataclasses.replace(
    forgetful,
    name="digester",
    context=ContextPolicy(max_input_tokens=2_500, strategy="summarize", keep_recent_turns=2),
)
"""The same window, the older turns summarized by the model."""


@tool(local=True)
def lookup(key: str, ctx: ToolContext) -> str:
    """Look `key` up in a table (a local activity: fast, reads only)."""
    CALLS.append(("lookup", {"key": key}, ctx.idempotency_key))
    return {"a12": "delivered", "b7": "in transit"}.get(key.lower(), "unknown")


quick = dataclasses.replace(assistant, name="quick", tools=[lookup, send_email])
"""Looks orders up with a local tool; emails need approval (an activity of their own)."""
