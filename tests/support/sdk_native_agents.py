"""An OpenAI Agents SDK agent written as the SDK's documentation writes dynamic
instructions (`instructions=` a function of the run context and the agent), converted by
`from_sdk_agent` (tests/integration/test_sdk_native_gaps.py, issue 46)."""

from __future__ import annotations

from dataclasses import dataclass

from agents import Agent, RunContextWrapper, function_tool, handoff
from pydantic import BaseModel

from durable_agents.openai_agents import from_sdk_agent

ASKED: list[str] = []
"""The names the instructions function was asked with, in order."""


@dataclass
class UserContext:
    name: str
    uid: str


def dynamic_instructions(context: RunContextWrapper[UserContext], agent: Agent[UserContext]) -> str:
    ASKED.append(context.context.name)
    if context.context.uid == "banned":
        raise PermissionError(f"{context.context.name} may not use {agent.name}")
    return f"The user's name is {context.context.name}. Help them with their questions."


sdk_helper = Agent[UserContext](
    name="sdk_helper",
    instructions=dynamic_instructions,
    model="helper-model",
)

helper = from_sdk_agent(sdk_helper, context_type=UserContext)


class AirlineAgentContext(BaseModel):
    """The SDK customer-service example's context."""

    passenger_name: str | None = None
    confirmation_number: str | None = None
    seat_number: str | None = None
    flight_number: str | None = None


@function_tool
async def update_seat(
    context: RunContextWrapper[AirlineAgentContext], confirmation_number: str, new_seat: str
) -> str:
    """
    Update the seat for a given confirmation number.

    Args:
        confirmation_number: The confirmation number for the flight.
        new_seat: The new seat to update to.
    """
    # Update the context based on the customer's input
    context.context.confirmation_number = confirmation_number
    context.context.seat_number = new_seat
    # Ensure that the flight number has been set by the incoming handoff
    assert context.context.flight_number is not None, "Flight number is required"
    return f"Updated seat to {new_seat} for confirmation number {confirmation_number}"


sdk_seat_booking = Agent[AirlineAgentContext](
    name="sdk_native_seat_booking",
    instructions="You are a seat booking agent.",
    model="seat-model",
    tools=[update_seat],
)

seat_booking = from_sdk_agent(sdk_seat_booking, context_type=AirlineAgentContext)


async def on_seat_booking_handoff(context: RunContextWrapper[AirlineAgentContext]) -> None:
    """The SDK example's hook: the flight number set as the seat agent takes over."""
    context.context.flight_number = "FLT-123"


class EscalationData(BaseModel):
    reason: str


ESCALATED: list[str] = []


async def on_escalation(ctx: RunContextWrapper[AirlineAgentContext], input: EscalationData) -> None:
    ESCALATED.append(input.reason)


sdk_escalation = Agent[AirlineAgentContext](
    name="sdk_native_escalation", instructions="You take escalations.", model="escalation-model"
)
sdk_native_triage = Agent[AirlineAgentContext](
    name="sdk_native_triage",
    instructions="You are a helpful triaging agent.",
    model="triage-model",
    handoffs=[
        handoff(agent=sdk_seat_booking, on_handoff=on_seat_booking_handoff),
        handoff(agent=sdk_escalation, on_handoff=on_escalation, input_type=EscalationData),
    ],
)

native_triage = from_sdk_agent(sdk_native_triage, context_type=AirlineAgentContext)
