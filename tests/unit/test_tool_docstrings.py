"""Tool descriptions: `@tool(description=...)`, and each argument's description read from
the docstring (Google `Args:`, Sphinx `:param:`, NumPy `Parameters`), below a
description the annotation gives (activities/docstrings.py)."""

from __future__ import annotations

from typing import Annotated

import pytest
from pydantic import Field

from durable_agents import ToolContext, tool


def _properties(found) -> dict:
    return found.spec().parameters["properties"]


def test_google_args_describe_the_arguments_and_leave_the_description():
    @tool
    def book(flight: str, seat: int, ctx: ToolContext) -> str:
        """Book a seat on a flight.

        Say which seat.

        Args:
            flight: The flight number,
                as printed on the ticket.
            seat: The seat's number.
            ctx: The call's context (not an argument the model gives).

        Returns:
            The booking's reference.
        """
        return "ok"

    spec = book.spec()
    assert spec.description == "Book a seat on a flight.\n\nSay which seat."
    properties = _properties(book)
    assert properties["flight"]["description"] == "The flight number, as printed on the ticket."
    assert properties["seat"]["description"] == "The seat's number."
    assert "ctx" not in properties


def test_sphinx_and_numpy_docstrings_are_read_too():
    @tool
    def sphinx(city: str) -> str:
        """Weather in a city.

        :param city: The city's name.
        """
        return city

    @tool
    def numpy(city: str) -> str:
        """Weather in a city.

        Parameters
        ----------
        city : str
            The city's name.
        """
        return city

    for found in (sphinx, numpy):
        assert found.description == "Weather in a city."
        assert _properties(found)["city"]["description"] == "The city's name."


def test_a_description_in_the_annotation_or_default_wins_over_the_docstring():
    @tool
    def refund(
        order: Annotated[str, Field(description="From the annotation.", min_length=2)],
        amount: float = Field(default=1.0, description="From the default."),
        note: str = "",
    ) -> str:
        """Refund.

        Args:
            order: From the docstring.
            amount: From the docstring.
            note: From the docstring.
        """
        return order

    properties = _properties(refund)
    assert properties["order"] == {
        "description": "From the annotation.",
        "minLength": 2,
        "title": "Order",
        "type": "string",
    }
    assert properties["amount"]["description"] == "From the default."
    assert properties["note"]["description"] == "From the docstring."
    with pytest.raises(ValueError, match="at least 2 characters"):
        refund.arguments.model_validate({"order": "x"})  # the annotation's checks stay


def test_description_override_replaces_the_docstring_text_only():
    @tool(description="Look a customer up by email.")
    def lookup(email: str) -> str:
        """Internal: hits the CRM.

        Args:
            email: The customer's email.
        """
        return email

    assert lookup.spec().description == "Look a customer up by email."
    assert _properties(lookup)["email"]["description"] == "The customer's email."


def test_a_docstring_without_sections_is_the_description_as_written():
    @tool
    def add(a: int, b: int) -> int:
        """Add two integers.

        Returns: nothing surprising."""
        return a + b

    assert add.description == "Add two integers.\n\nReturns: nothing surprising."
    assert "description" not in _properties(add)["a"]


@pytest.mark.parametrize("bad", ["", "   ", 3, b"bytes"])
def test_a_description_that_is_no_text_is_refused(bad):
    with pytest.raises(TypeError, match="tool description: a text"):
        tool(description=bad)


def test_a_docstring_describing_a_parameter_that_does_not_exist_is_refused():
    with pytest.raises(TypeError, match=r"tool ship: its docstring describes adress, which is no"):

        @tool
        def ship(address: str) -> str:
            """Ship.

            Args:
                adress: Where to.
            """
            return address
