"""`definitions.digest`: the digest `agentctl status` shows of the agent definition a run
uses, and `agentctl tools` of the one the workers serve now."""

from __future__ import annotations

import dataclasses

import pytest
from durable_agents.workflows import definitions, details, loop
from durable_agents.workflows.agent_spec import ModelPrice, ModelSettings
from durable_agents.workflows.audit import REDEFINITIONS_KEPT
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ToolCall,
    ToolResult,
    UserMessage,
)
from durable_agents.workflows.state import DefinitionCheck, RunState
from pydantic import ValidationError

from durable_agents.signing import Trust
from tests.support import agents
from tests.support.approver_keys import WORKER_TRUST
from tests.support.snapshot_golden import at


def test_the_same_definition_has_the_same_digest_whatever_the_workers_keys_and_prices():
    plain = definitions.digest(agents.assistant.spec())
    assert len(plain) == 12 and int(plain, 16) >= 0
    assert definitions.digest(agents.assistant.spec(WORKER_TRUST)) == plain
    assert (
        definitions.digest(agents.assistant.spec(Trust(), ModelPrice(input=1, output=2))) == plain
    )
    streamed = agents.assistant.spec().model_copy(update={"stream": True})  # a run's choice
    assert definitions.digest(streamed) == plain


def test_a_changed_definition_has_another_digest():
    plain = definitions.digest(agents.assistant.spec())
    reworded = dataclasses.replace(agents.assistant, instructions="Be brief.")
    fewer = dataclasses.replace(agents.assistant, tools=agents.assistant.tools[:1])
    assert definitions.digest(reworded.spec()) != plain
    assert definitions.digest(fewer.spec()) != plain


# --- a changed definition reaching a run in flight (`definitions.due` / `take`) ------


def _session(agent=agents.assistant, **start) -> RunState:
    spec = agent.spec()
    state = loop.new_state(
        spec, AgentInput(agent=spec.name, input="hi", session=True, **start), run_id="r",
        now=at(0),
    )  # fmt: skip
    state.workflow_runs = ["wr-1"]
    definitions.start(state, workflow_run="wr-1")
    return state


def _answered(state: RunState, text: str = "hello") -> None:
    state.turn += 1
    state.items.append(AssistantMessage(turn=state.turn, content=text, at=at(state.turn)))


NEXT = dataclasses.replace(agents.assistant, definition_updates="next_message")
AT_SWITCH = dataclasses.replace(agents.assistant, definition_updates="continue_as_new")


def test_a_run_whose_agent_says_never_never_asks():
    state = _session()
    assert state.definition_checked is None
    _answered(state)
    state.items.append(UserMessage(content="again"))
    state.workflow_runs.append("wr-2")
    assert definitions.due(state) is None
    assert not isinstance(loop.next_step(state), loop.Redefine)


def test_next_message_asks_before_the_message_is_checked_or_answered():
    state = _session(NEXT)
    assert state.definition_checked == DefinitionCheck(messages=1, workflow_run="wr-1")
    assert isinstance(loop.next_step(state), loop.CallModel)  # the first message: as started
    _answered(state)
    state.workflow_runs.append("wr-2")  # a continue-as-new is not a message
    assert definitions.due(state) is None
    state.items.append(UserMessage(content="again"))
    assert loop.next_step(state) == loop.Redefine("session_message")


def test_continue_as_new_asks_at_the_first_step_of_each_new_workflow_run():
    state = _session(AT_SWITCH)
    _answered(state)
    state.items.append(UserMessage(content="again"))
    assert definitions.due(state) is None  # a message is not a continue-as-new
    state.workflow_runs.append("wr-2")
    assert loop.next_step(state) == loop.Redefine("continue_as_new")


def test_nothing_is_asked_while_a_call_or_a_budget_request_is_open():
    state = _session(AT_SWITCH)
    call = ToolCall(call_id="c1", tool="send_email", arguments='{"to":"a","body":"b"}')
    call.needs_approval = True
    state.turn = 1
    state.items.append(AssistantMessage(turn=1, content=None, tool_calls=[call], at=at(1)))
    state.workflow_runs.append("wr-2")
    assert definitions.due(state) is None
    assert isinstance(loop.next_step(state), loop.AwaitDecisions)
    state.items.append(ToolResult(call_id="c1", content="sent"))
    assert definitions.due(state) == "continue_as_new"  # then, once nothing is open


def test_a_changed_definition_is_taken_with_what_is_the_runs_own():
    state = _session(NEXT, max_turns=3, model_settings=ModelSettings(temperature=0.3))
    state.agent = state.agent.model_copy(update={"stream": True})  # the run's choice
    calls = [ToolCall(call_id="e1", tool="send_email", arguments='{"to":"a","body":"b"}')]
    state.turn = 1
    state.items += [
        AssistantMessage(turn=1, content=None, tool_calls=calls, at=at(1)),
        Decision(call_id="e1", decision="approve", approver="ann", always=True, via="signal",
                 at=at(2)),
        ToolResult(call_id="e1", content="sent"),
        UserMessage(content="again"),
    ]  # fmt: skip
    before = definitions.digest(state.agent)
    changed = dataclasses.replace(
        NEXT,
        instructions="Be brief.",
        max_turns=8,
        model_settings=ModelSettings(top_p=0.5),
        tools=[t for t in NEXT.tools if t.name != "send_email"],
    )
    definitions.take(state, changed.spec(), "session_message", workflow_run="wr-1", now=at(5))
    assert state.agent.instructions == "Be brief." and state.agent.tool("send_email") is None
    assert state.agent.stream is True  # the run's
    assert state.max_turns == 3  # lower than the old definition's 4: the run's own
    assert (state.model_settings.temperature, state.model_settings.top_p) == (0.3, 0.5)
    assert state.revoked_rules == ["e1"]  # an always rule on a tool that went away
    entry = state.redefinitions[-1]
    assert (entry.before, entry.after) == (before, definitions.digest(state.agent))
    assert entry.changed == ["instructions", "max_turns", "model_settings", "tools"]
    assert entry.error is None and entry.reason == "session_message" and entry.turn == 1
    assert state.definition_checked == DefinitionCheck(messages=2, workflow_run="wr-1")
    assert definitions.due(state) is None
    assert f"`{entry.before}` → `{entry.after}`: instructions, max_turns" in details.render(state)


def _asked_again(state: RunState) -> None:
    _answered(state)
    state.items.append(UserMessage(content="again"))


BOUNDED = dataclasses.replace(NEXT, model_settings=ModelSettings(max_output_tokens=100))


def test_limits_only_go_down_in_flight_whoever_set_them():
    # The start input's max_turns equal to the agent's: the new definition cannot lift it.
    state = _session(NEXT, max_turns=4)
    _asked_again(state)
    lifted = dataclasses.replace(NEXT, max_turns=50).spec()
    definitions.take(state, lifted, "session_message", workflow_run="wr-1", now=at(5))
    assert state.max_turns == 4 and state.agent.max_turns == 50
    # A budget the start input asked for: an agent that drops its own keeps the run's.
    state = _session(dataclasses.replace(BOUNDED, token_budget=500), token_budget=1000)
    _asked_again(state)
    definitions.take(state, BOUNDED.spec(), "session_message", workflow_run="wr-1", now=at(5))
    assert state.token_budget == 500
    # A child's share of its caller's budget stays its ceiling.
    state = _session(dataclasses.replace(BOUNDED, token_budget=500), token_budget=400)
    state.depth = 1
    _asked_again(state)
    generous = dataclasses.replace(BOUNDED, token_budget=100_000, instructions="more").spec()
    definitions.take(state, generous, "session_message", workflow_run="wr-1", now=at(5))
    assert state.token_budget == 400
    # And a new definition that lowers a limit lowers the run's.
    lower = dataclasses.replace(BOUNDED, token_budget=200, max_turns=2).spec()
    definitions.take(state, lower, "session_message", workflow_run="wr-1", now=at(6))
    assert (state.token_budget, state.max_turns) == (200, 2)


def test_the_workers_keys_and_price_stay_the_runs():
    priced = NEXT.spec(Trust(), ModelPrice(input=1, output=2, currency="USD"))
    state = loop.new_state(
        priced, AgentInput(agent="assistant", input="hi", session=True), run_id="r", now=at(0)
    )
    state.workflow_runs = ["wr-1"]
    definitions.start(state, workflow_run="wr-1")
    _asked_again(state)
    euros = dataclasses.replace(NEXT, instructions="v2").spec(
        WORKER_TRUST, ModelPrice(input=1, output=2, currency="EUR")
    )
    definitions.take(state, euros, "session_message", workflow_run="wr-1", now=at(5))
    assert state.agent.instructions == "v2"
    assert state.agent.price == priced.price and state.agent.approver_keys == []
    assert state.redefinitions[-1].changed == ["instructions"]


def test_an_mcp_tool_that_comes_back_read_only_still_needs_approval():
    from durable_agents.workflows.agent_spec import AgentSpec, MCPServer
    from durable_agents.workflows.mcp_tools import with_mcp_tools, without_mcp_tools

    lookup = {"name": "lookup", "inputSchema": {"type": "object"},
              "annotations": {"readOnlyHint": True}}  # fmt: skip
    delete = {"name": "delete", "annotations": {"destructiveHint": True}}
    base = AgentSpec(name="a", instructions="", model="m", mcp_servers=[MCPServer(name="t")],
                     definition_updates="next_message")  # fmt: skip
    state = RunState(
        run_id="r", agent=with_mcp_tools(base, {"t": [lookup, delete]}), max_turns=5,
        session=True, items=[UserMessage(content="hi")], created_at=at(0), updated_at=at(0),
        workflow_runs=["wr-1"],
    )  # fmt: skip
    definitions.start(state, workflow_run="wr-1")
    assert state.agent.require_tool("delete").needs_approval
    back = {**delete, "annotations": {"readOnlyHint": True}}  # dropped, then back read-only
    wipe = {"name": "wipe", "annotations": {"readOnlyHint": True}}  # new, read-only it says
    for n, listed in enumerate(([lookup], [lookup, back], [lookup, back, wipe])):
        _asked_again(state)
        fresh = with_mcp_tools(without_mcp_tools(base), {"t": listed})
        definitions.take(state, fresh, "session_message", workflow_run="wr-1", now=at(5 + n))
        if n == 1:
            assert state.agent.require_tool("delete").needs_approval
    assert state.agent.require_tool("wipe").needs_approval
    assert state.agent.require_tool("delete").needs_approval
    assert not state.agent.require_tool("lookup").needs_approval  # as it was at the start


def test_a_definition_that_cannot_be_had_or_does_not_fit_is_not_taken_and_says_why():
    state = _session(NEXT)
    _answered(state)
    state.items.append(UserMessage(content="again"))
    kept = state.agent
    definitions.take(state, "unknown agent 'assistant'", "session_message", workflow_run="wr-1",
                     now=at(5))  # fmt: skip
    unbounded = NEXT.spec().model_copy(update={"token_budget": 500})  # no max_output_tokens
    definitions.take(state, unbounded, "session_message", workflow_run="wr-1", now=at(6))
    other = dataclasses.replace(NEXT, name="someone-else")
    definitions.take(state, other.spec(), "session_message", workflow_run="wr-1", now=at(7))
    assert state.agent == kept
    errors = [r.error for r in state.redefinitions]
    assert [r.after for r in state.redefinitions] == [None, None, None]
    assert errors[0] == "unknown agent 'assistant'"
    assert errors[1].startswith("the new definition does not fit this run: a token budget")
    assert "'someone-else', not 'assistant'" in errors[2]
    assert "**Definition kept**" in details.render(state)
    assert definitions.due(state) is None  # asked: not again until the next message


def test_the_same_definition_records_nothing_and_the_record_is_bounded():
    state = _session(NEXT)
    definitions.take(state, NEXT.spec(), "session_message", workflow_run="wr-1", now=at(1))
    assert state.redefinitions == []
    for n in range(REDEFINITIONS_KEPT + 5):
        definitions.take(state, f"down {n}", "session_message", workflow_run="wr-1", now=at(n))
    assert len(state.redefinitions) == REDEFINITIONS_KEPT
    assert state.redefinitions[-1].error == f"down {REDEFINITIONS_KEPT + 4}"


def test_a_resume_looks_afresh_and_a_snapshot_cannot_bend_the_record():
    state = _session(NEXT)
    _answered(state)
    resumed = loop.resume(state, run_id="r2", workflow_run="wr-9", now=at(9))
    assert resumed.definition_checked is None  # the resumer takes the definition anew
    data = state.model_dump(mode="json")
    for forged in (
        {"definition_checked": {"messages": -1, "workflow_run": "wr-1"}},
        {"definition_checked": {"messages": 1, "workflow_run": ""}},
        {"redefinitions": [{"at": "2026-01-01T00:00:00Z", "turn": 1,
          "reason": "session_message", "before": "x" * 65}]},
        {"redefinitions": [{"at": "2026-01-01T00:00:00Z", "turn": 1, "reason": "whenever",
          "before": "abc"}]},
        {"agent": {**data["agent"], "definition_updates": "always"}},
    ):  # fmt: skip
        with pytest.raises(ValidationError):
            RunState.model_validate({**data, **forged})


def test_an_agent_declares_when_with_a_clear_error_for_anything_else():
    with pytest.raises(ValueError, match="definition_updates must be 'never', 'next_message'"):
        dataclasses.replace(agents.assistant, definition_updates="sometimes")
