"""`Agent.clone(...)` and handoffs by name described by their target (issue 46)."""

from __future__ import annotations

import pytest
from durable_agents.activities.handoff import described_by_target

from durable_agents import Agent, handoff
from tests.support.native_agents import concierge, night_desk, seats


def test_clone_changes_only_what_it_is_given_and_leaves_the_original():
    assert (night_desk.name, night_desk.instructions) == (
        "night_desk",
        "You help passengers at night.",
    )
    assert night_desk.tools == concierge.tools and night_desk.handoffs == concierge.handoffs
    assert concierge.instructions == "You help passengers."
    grown = concierge.clone(handoffs=[*concierge.handoffs, handoff(seats, tool_name="to_seats")])
    assert [t.name for t in grown.all_tools()] == [
        "find_passenger",
        "transfer_to_seats",
        "to_seats",
    ]
    assert [t.name for t in concierge.all_tools()] == ["find_passenger", "transfer_to_seats"]


def test_clone_refuses_a_field_an_agent_does_not_have():
    with pytest.raises(TypeError, match=r"agent air_desk: clone\(\) got handofs, tols, which"):
        concierge.clone(tols=[], handofs=[])


def test_a_clone_is_checked_as_a_new_agent_is():
    with pytest.raises(ValueError, match="max_turns must be at least 1"):
        concierge.clone(max_turns=0)
    with pytest.raises(ValueError, match="two tools are called 'transfer_to_seats'"):
        concierge.clone(handoffs=["seats", seats])


def test_a_handoff_by_name_takes_its_target_s_description_unless_it_has_one():
    by_name = handoff("seats").spec()
    assert described_by_target(by_name, "Seat changes.").description == (
        "Hand the conversation over to the seats agent. Seat changes."
    )
    assert described_by_target(by_name, None) == by_name
    given = handoff("seats", description="Only for upgrades.").spec()
    assert described_by_target(given, "Seat changes.") == given
    by_object = handoff(seats).spec()
    assert described_by_target(by_object, "something else") == by_object
    assert Agent(name="x", instructions="", handoffs=[seats]).all_tools()[0].description == (
        by_object.description
    )
