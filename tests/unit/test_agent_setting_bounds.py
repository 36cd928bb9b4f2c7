"""Agent settings: the background check interval (`Agent(background_check_every=...)`),
hostile values refused at definition and in a run's state; a code rule given as a
function on an MCP server (an evaluator there is refused); how a failed signal to a
background run is read (`background.unreachable`: only a run not found has ended)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from durable_agents.workflows import background
from durable_agents.workflows.agent_spec import BACKGROUND_CHECK_EVERY, AgentSpec
from pydantic import ValidationError
from temporalio.exceptions import ApplicationError

from durable_agents import Agent


def _agent(**options) -> Agent:
    return Agent(name="lead", instructions="Lead.", **options)


def test_the_check_interval_defaults_to_five_minutes_and_reaches_the_spec():
    assert BACKGROUND_CHECK_EVERY == timedelta(minutes=5)
    default = _agent().spec()
    assert default.background_check_every == BACKGROUND_CHECK_EVERY
    assert "background_check_every" not in default.model_dump(mode="json")  # nothing new
    quick = _agent(background_check_every=timedelta(seconds=30)).spec()
    assert quick.model_dump(mode="json")["background_check_every"] == "PT30S"


@pytest.mark.parametrize(
    "hostile",
    [timedelta(0), timedelta(seconds=-300), timedelta(milliseconds=10), timedelta(days=2), 300],
)
def test_an_agent_refuses_a_check_interval_out_of_bounds(hostile):
    with pytest.raises(ValueError, match=r"background_check_every must be a timedelta from 0:00"):
        _agent(background_check_every=hostile)


@pytest.mark.parametrize("hostile", ["PT0S", "-PT5M", "P400D", "PT0.001S", "often", None, 1e308])
def test_a_runs_spec_refuses_a_check_interval_out_of_bounds(hostile):
    data = _agent().spec().model_dump(mode="json") | {"background_check_every": hostile}
    with pytest.raises(ValidationError, match="background_check_every"):
        AgentSpec.model_validate(data)


def test_only_a_run_that_is_not_found_counts_as_ended():
    gone = ApplicationError("Unable to signal external workflow because it was not found")
    assert background.unreachable(gone)
    assert background.unreachable(RuntimeError("Workflow execution NOT FOUND"))
    for transient in (
        ApplicationError("Signal count limit exceeded"),
        RuntimeError("deadline exceeded"),
        ApplicationError(""),
    ):
        assert not background.unreachable(transient)


def test_an_mcp_servers_code_rule_is_its_policys_rule_and_an_evaluator_is_refused():
    from durable_agents import ApprovalPolicy, MCPServer

    def rule(arguments: dict, context) -> bool:
        return True

    server = MCPServer(name="tickets", needs_approval=rule, approval={"approvers": ["ann"]})
    assert server.needs_approval is True and server.approval.rule_function is rule
    assert server.approval.approvers == ["ann"]  # the rest of the policy stays
    plain = server.model_dump(mode="json")  # what a run's spec carries: the name only
    assert plain["needs_approval"] is True and plain["approval"]["rule"].endswith(".rule")
    with pytest.raises(ValueError, match="MCP server tickets: its tools take no evaluator"):
        _agent(mcp_servers=[MCPServer(name="tickets", approval=ApprovalPolicy(evaluator=rule))])
    with pytest.raises(ValidationError):  # JSON cannot smuggle a function in
        MCPServer.model_validate({"name": "tickets", "needs_approval": "os.system"})
