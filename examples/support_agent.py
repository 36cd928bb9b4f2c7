"""Example agent: customer support that looks orders up freely and refunds
only with a person's approval.

Serve it with `python worker.py --agents examples.support_agent`.
`scripted_model` plays the model offline (the demo uses it when
OPENAI_API_KEY is unset): it reads the conversation and answers as a model
would for this agent, so it survives retries and worker restarts.
"""

from __future__ import annotations

import json
import re
from typing import Annotated

from pydantic import Field

from activities import Agent, ToolContext, tool
from examples.scripted_openai import Call, Reply

ORDERS = {
    "A12": {"item": "kettle", "paid": 40.0, "status": "delivered damaged"},
    "B7": {"item": "lamp", "paid": 25.0, "status": "delivered"},
}
REFUNDS: dict[str, dict] = {}
"""Refunds issued, by idempotency key: a retried call refunds once."""


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
    refund = REFUNDS.setdefault(
        ctx.idempotency_key, {"order_id": order_id, "amount": amount, "reason": reason}
    )
    return f"Refunded {refund['amount']:.2f} EUR for order {refund['order_id']}."


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
