"""Example of several agents: a triage agent that asks a researcher (an agent called as a
tool: a run of its own) and hands the customer over to billing (a handoff: the same run
goes on with billing), whose refunds need a person's approval.
Serve them offline with `.venv/bin/python worker.py --dev --agents examples.team_agent
--scripted-model examples.team_agent:scripted_model`; `make demo-team` drives a run.
`scripted_model` plays the model offline (when OPENAI_API_KEY is unset), telling the
agents apart by their instructions.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, Field

from durable_agents import Agent, handoff
from durable_agents.testing import Call, Reply
from examples.support_agent import issue_refund, lookup_order

RESEARCHER = "You research orders: look the order up and say what you found, in one line."
TRIAGE = "You talk to the customer first. Ask the researcher about orders; hand refunds to billing."
BILLING = "You handle refunds. Refund only what the customer paid, and say what you did."

researcher = Agent(
    name="researcher",
    instructions=RESEARCHER,
    model="gpt-4o-mini",
    tools=[lookup_order],
    handoff_description="Looks orders up and says what it found.",
    max_turns=4,
)
billing = Agent(
    name="billing",
    instructions=BILLING,
    model="gpt-4o-mini",
    tools=[issue_refund],
    handoff_description="Refunds: every one needs a person's approval.",
    max_turns=4,
)


class Reason(BaseModel):
    reason: str = Field(description="Why billing takes over, for the record")


triage = Agent(
    name="triage",
    instructions=TRIAGE,
    model="gpt-4o-mini",
    tools=[researcher.as_tool(name="ask_researcher")],
    handoffs=[handoff(billing, input_type=Reason)],
    max_turns=6,
)


def scripted_model(request: dict) -> Reply:
    """Offline stand-in for the model of each agent (known by its instructions)."""
    messages = request["messages"]
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    tools = [m for m in messages if m["role"] == "tool"]
    user = next((m["content"] for m in messages if m["role"] == "user"), "")
    named = re.search(r"\b([A-Z]\d+)\b", user)
    order_id = named.group(1) if named else "A12"
    if system == RESEARCHER:
        if not tools:
            return Reply(tool_calls=(Call("lookup_order", {"order_id": order_id}),))
        order = json.loads(tools[-1]["content"])
        return Reply(
            content=f"Order {order.get('order_id', order_id)}: {order.get('item')}, paid "
            f"{order.get('paid')} EUR, {order.get('status')}."
        )
    if system == TRIAGE:
        if not tools:
            ask = {"input": f"What do we know about order {order_id}?"}
            return Reply(tool_calls=(Call("ask_researcher", ask),))
        reason = {"reason": f"refund for order {order_id}: {tools[-1]['content']}"}
        return Reply(tool_calls=(Call("transfer_to_billing", reason),))
    if system == BILLING:
        found = re.search(
            r"paid ([0-9.]+) EUR, ([^.]+)", " ".join(m["content"] or "" for m in tools)
        )
        if not any(m["content"].startswith("Refunded") for m in tools):
            amount = float(found.group(1)) if found else 1.0
            why = found.group(2) if found else "customer request"
            refund = {"order_id": order_id, "amount": amount, "reason": why}
            return Reply(
                content="I am requesting the refund.", tool_calls=(Call("issue_refund", refund),)
            )
        return Reply(content=f"Done: {tools[-1]['content']} Sorry for the trouble.")
    return Reply(content="I cannot help with that.")
