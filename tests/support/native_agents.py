"""Agents that use what issue 46 added to our own API (tests/integration/test_native_agents.py):
tool descriptions from docstrings and `@tool(description=...)`, `Agent.clone(...)`, a
handoff by name described by its target."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from durable_agents import Agent, tool  # the public face

BOOKED: list[dict] = []


@tool
def book_seat(
    flight: str,
    seat: Annotated[str, Field(description="A seat such as 12C.", pattern=r"^\d{1,2}[A-K]$")],
) -> str:
    """Book a seat on a flight.

    Args:
        flight: The flight number, as printed on the ticket.
        seat: Left to the annotation, which says it first.
    """
    BOOKED.append({"flight": flight, "seat": seat})
    return f"booked {seat} on {flight}"


@tool(description="Look a passenger up by booking reference.")
def find_passenger(reference: str) -> str:
    """Internal: reads the reservations table.

    :param reference: The six-letter booking reference.
    """
    return f"passenger of {reference}: Ann"


seats = Agent(
    name="seats",
    instructions="You change seats.",
    model="seats-model",
    tools=[book_seat],
    handoff_description="Seat changes and upgrades.",
)
concierge = Agent(
    name="air_desk",
    instructions="You help passengers.",
    model="air-model",
    tools=[find_passenger],
    handoffs=["seats"],  # by name: described by the served agent's handoff_description
    max_turns=4,
)
night_desk = concierge.clone(name="night_desk", instructions="You help passengers at night.")

NATIVE_AGENTS = [seats, concierge, night_desk]
