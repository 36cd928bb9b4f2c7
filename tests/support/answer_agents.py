"""Agents with external tools (`@tool(external=True)`): calls answered by people."""

from __future__ import annotations

from datetime import timedelta

from durable_agents.workflows.agent_spec import ApprovalPolicy
from pydantic import BaseModel

from durable_agents import Agent, tool
from tests.support.agents import send_email


class Line(BaseModel):
    sku: str
    quantity: int


class Refund(BaseModel):
    """What a person decides about a refund."""

    account: str
    amount: float
    lines: list[Line] = []


@tool(external=True)
def ask_refund(order_id: str) -> Refund:
    """Ask a person how much to refund for an order, and to which account."""
    raise AssertionError("an external tool's body never runs")


@tool(external=True, needs_approval=ApprovalPolicy(timeout=timedelta(seconds=1)))
def ask_quickly(question: str) -> str:
    """Ask a person; no answer within 1 s is a rejection."""
    raise AssertionError("never runs")


@tool(external=True, needs_approval=ApprovalPolicy(require_signature=True))
def ask_signed(question: str) -> int:
    """Ask a person for a number; only a signed answer counts."""
    raise AssertionError("never runs")


questioner = Agent(
    name="questioner",
    instructions="Ask people when you do not know.",
    model="test-model",
    tools=[ask_refund, ask_quickly, ask_signed, send_email],
    max_turns=6,
)

ANSWER_AGENTS = [questioner]
