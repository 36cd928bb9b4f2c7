"""Agents written with the OpenAI Agents SDK, the way its documentation writes them (the
customer-service example: a triage agent handing over to specialists, one tool that
needs approval, an agent used as a tool), converted for a worker by `from_sdk_agent`.

Only `desk` is exposed as an `Agent`: the worker serves everything it reaches."""

from __future__ import annotations

from agents import Agent, ModelSettings, RunContextWrapper, function_tool, handoff
from pydantic import BaseModel

from durable_agents.openai_agents import from_sdk_agent

CALLS: list[tuple[str, object]] = []
"""What the SDK tools ran with: (tool, arguments or context), in order."""


class AirlineContext(BaseModel):
    """The run's context as the SDK's example types it."""

    passenger_name: str | None = None
    confirmation_number: str | None = None


@function_tool
def faq_lookup(question: str) -> str:
    """Look up frequently asked questions.

    Args:
        question: The customer's question, in their words.
    """
    CALLS.append(("faq_lookup", question))
    if "bag" in question:
        return "You may bring one bag under 50 pounds."
    return "I'm sorry, I don't know the answer to that question."


@function_tool(needs_approval=True)
async def update_seat(
    ctx: RunContextWrapper[AirlineContext], confirmation_number: str, new_seat: str
) -> str:
    """Update the seat for a given confirmation number.

    Args:
        confirmation_number: The confirmation number for the flight.
        new_seat: The new seat to update to.
    """
    passenger = ctx.context.passenger_name
    CALLS.append(("update_seat", (confirmation_number, new_seat, passenger, ctx.tool_call_id)))
    return f"Updated seat to {new_seat} for {passenger} ({confirmation_number})"


translator = Agent(
    name="sdk_translator",
    instructions="Translate the user's message to Spanish.",
    model="translator-model",
)

faq_agent = Agent(
    name="sdk_faq",
    handoff_description="A helpful agent that can answer questions about the airline.",
    instructions="You are an FAQ agent. Use the faq lookup tool to answer.",
    model="faq-model",
    tools=[faq_lookup],
)

seat_booking_agent = Agent(
    name="sdk_seat_booking",
    handoff_description="A helpful agent that can update a seat on a flight.",
    instructions="You are a seat booking agent. Use the update seat tool.",
    model="seat-model",
    tools=[update_seat],
)

triage_agent = Agent(
    name="sdk_triage",
    handoff_description="A triage agent that can delegate a customer's request.",
    instructions="You are a helpful triaging agent.",
    model="triage-model",
    model_settings=ModelSettings(temperature=0.2),
    tools=[
        translator.as_tool(
            tool_name="translate_to_spanish",
            tool_description="Translate the user's message to Spanish",
        )
    ],
    handoffs=[
        handoff(faq_agent, tool_description_override="Questions about the airline."),
        seat_booking_agent,
    ],
)
faq_agent.handoffs.append(triage_agent)
seat_booking_agent.handoffs.append(triage_agent)

desk = from_sdk_agent(triage_agent, context_type=AirlineContext)
