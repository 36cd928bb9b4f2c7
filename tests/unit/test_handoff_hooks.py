"""Handoff hooks (`handoff(agent, on_handoff=FUNCTION)`, issue 46): checked where they are
declared, run by `run_tool` with the call's context, and a request from outside for a
handoff without a hook runs nothing."""

from __future__ import annotations

import re

import pytest
from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.run_tool import ToolActivities
from durable_agents.workflows.payloads import ToolRequest
from pydantic import BaseModel
from temporalio.testing import ActivityEnvironment

from durable_agents import Agent, ToolContext, handoff
from tests.support.native_agents import HOOKED, boarding


class Why(BaseModel):
    reason: str


def _hook(ctx: ToolContext) -> None:
    return None


def _hook_with_input(ctx: ToolContext, input: Why) -> None:
    return None


def test_the_hook_is_named_in_the_spec_and_a_handoff_without_one_names_none():
    spec = handoff("b", on_handoff=_hook).spec()
    assert spec.on_handoff == "tests.unit.test_handoff_hooks._hook"
    assert "on_handoff" not in handoff("b").spec().model_dump()


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"on_handoff": _hook_with_input}, "on_handoff must take ctx (without an input_type)"),
        (
            {"on_handoff": _hook, "input_type": Why},
            "on_handoff must take ctx and input (with an input_type)",
        ),
        ({"on_handoff": "not a function"}, "on_handoff takes a function"),
    ],
)
def test_a_hook_that_cannot_take_what_it_is_given_is_refused_where_it_is_declared(options, said):
    with pytest.raises(TypeError, match=re.escape(f"handoff to b: {said}")):
        handoff("b", **options)


def _request(tool: str, arguments: str = "{}", agent: str = "boarding") -> ToolRequest:
    return ToolRequest(
        run_id="r",
        agent=agent,
        tool=tool,
        call_id="h1",
        arguments=arguments,
        idempotency_key="r/h1",
        context={"passenger": "Ann"},
    )


TOOLS = ToolActivities(AgentRegistry([boarding]))


async def test_run_tool_runs_the_hook_with_the_context_and_sends_its_change_back():
    HOOKED.clear()
    outcome = await ActivityEnvironment().run(TOOLS.run_tool, _request("transfer_to_cabin"))
    assert HOOKED == [("assign_flight", {"passenger": "Ann"})]
    assert outcome.context_update.keys == {"flight_number": "FLT-123"}
    assert outcome.handoff_to is None  # the workflow takes the handoff, never run_tool


async def test_a_request_for_a_handoff_without_a_hook_or_with_bad_input_runs_nothing():
    HOOKED.clear()
    plain = Agent(name="plain", instructions="", handoffs=[boarding])
    tools = ToolActivities(AgentRegistry([plain]))
    forged = _request("transfer_to_boarding", agent="plain")
    outcome = await ActivityEnvironment().run(tools.run_tool, forged)
    assert outcome.is_error and "is not available" in outcome.content
    bad = _request("transfer_to_upgrades", '{"reason": 7}')
    outcome = await ActivityEnvironment().run(TOOLS.run_tool, bad)
    assert outcome.is_error and "invalid arguments" in outcome.content
    assert HOOKED == []
