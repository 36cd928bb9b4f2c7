"""Example agent: customer support that looks orders up freely and refunds
only with a person's approval.

Serve it offline with `.venv/bin/python worker.py --dev --agents examples.support_agent
--scripted-model examples.support_agent:scripted_model` (`make demo` does, and drives a run).
`scripted_model` plays the model offline (the demo uses it when
OPENAI_API_KEY is unset): it reads the conversation and answers as a model
would for this agent, so it survives retries and worker restarts.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Annotated

from pydantic import Field

from durable_agents import Agent, ToolContext, tool
from durable_agents.testing import Call, Reply

ORDERS = {
    "A12": {"item": "kettle", "paid": 40.0, "status": "delivered damaged"},
    "B7": {"item": "lamp", "paid": 25.0, "status": "delivered"},
}
REFUNDS_DB = Path(os.environ.get("SUPPORT_REFUNDS_DB", ".temporal/refunds.db"))
"""The refunds issued, by idempotency key, in a durable store (SQLite here, your
payments system's idempotency keys in production). It must be durable: an attempt
whose worker died, or whose result the server never got, runs again in full on
another worker, and an in-memory record would be gone by then."""


@tool
def lookup_order(order_id: Annotated[str, Field(description="Order id, e.g. A12")]) -> dict:
    """Look up an order: item, amount paid and delivery status."""
    order = ORDERS.get(order_id.upper())
    if order is None:
        return {"error": f"no order {order_id}"}
    return {"order_id": order_id.upper(), **order}


@tool(needs_approval=True)
def issue_refund(
    order_id: str,
    amount: Annotated[float, Field(gt=0, description="Amount to refund, in EUR")],
    reason: str,
    ctx: ToolContext,
) -> str:
    """Refund part or all of an order. A person must approve every refund."""
    order, paid = _refund_once(ctx.idempotency_key, order_id, amount, reason)
    return f"Refunded {paid:.2f} EUR for order {order}."


def _refund_once(key: str, order_id: str, amount: float, reason: str) -> tuple[str, float]:
    """Record the refund under `key` unless it is there already; the refund on record."""
    REFUNDS_DB.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.closing(sqlite3.connect(REFUNDS_DB, timeout=30)) as db, db:
        db.execute(
            "create table if not exists refunds "
            "(key text primary key, order_id text, amount real, reason text)"
        )
        db.execute(
            "insert or ignore into refunds values (?, ?, ?, ?)", (key, order_id, amount, reason)
        )
        return db.execute("select order_id, amount from refunds where key = ?", (key,)).fetchone()


support = Agent(
    name="support",
    instructions=(
        "You are a customer support agent. Look the order up before acting. "
        "Refund only what the customer paid, and say what you did."
    ),
    model="gpt-4o-mini",
    tools=[lookup_order, issue_refund],
    max_turns=6,
)


def scripted_model(request: dict) -> Reply:
    """Offline stand-in for the model: look up, refund, then answer."""
    messages = request["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    if not tool_messages:
        user = next(m["content"] for m in messages if m["role"] == "user")
        found = re.search(r"\b([A-Z]\d+)\b", user)
        order_id = found.group(1) if found else "A12"
        return Reply(content=None, tool_calls=(Call("lookup_order", {"order_id": order_id}),))
    last = tool_messages[-1]["content"]
    if len(tool_messages) == 1:
        order = json.loads(last)
        if "error" in order:
            return Reply(content=f"I could not find that order: {order['error']}.")
        return Reply(
            content="The order is damaged; I am requesting a refund.",
            tool_calls=(
                Call(
                    "issue_refund",
                    {
                        "order_id": order["order_id"],
                        "amount": order["paid"],
                        "reason": order["status"],
                    },
                ),
            ),
        )
    return Reply(content=f"Done. {last}")
