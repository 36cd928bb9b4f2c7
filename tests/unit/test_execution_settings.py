"""Execution settings (timeouts, retries, heartbeats, queue waits) are the worker's: declared
in code, given by `describe_agent` beside the spec, never frozen into a run, and refused
where a snapshot tries to carry them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.run_tool import ToolActivities
from durable_agents.workflows.agent_spec import MCPServer, ToolSpec
from durable_agents.workflows.execution_settings import (
    EXECUTION_FIELDS,
    ExecutionSettings,
    RetrySpec,
)
from durable_agents.workflows.payloads import DescribeAgentInput, DescribedAgent
from durable_agents.workflows.snapshot import SnapshotError, loads
from temporalio.common import RetryPolicy
from temporalio.testing import ActivityEnvironment

from durable_agents import Agent, GuardrailResult, input_guardrail, tool
from tests.support.snapshot_golden import edited, set_at


@tool(timeout=timedelta(seconds=7), retry_policy=RetryPolicy(maximum_attempts=2))
def lookup(order_id: str) -> str:
    """Look an order up."""
    return order_id


@tool(task_queue="gpu", queue_timeout=timedelta(seconds=90), heartbeat_timeout=None)
def render(scene: str) -> str:
    """Render a scene."""
    return scene


@input_guardrail(timeout=timedelta(seconds=3))
def polite(text: str) -> GuardrailResult:
    return GuardrailResult(tripped=False)


AGENT = Agent(
    name="clerk",
    instructions="Help.",
    tools=[lookup, render],
    input_guardrails=[polite],
    model_timeout=timedelta(seconds=45),
    mcp_servers=[MCPServer(name="desk", timeout_seconds=12)],
)


def test_the_spec_a_run_freezes_holds_no_execution_setting():
    frozen = AGENT.spec().model_dump(mode="json")
    parts = [frozen, *frozen["tools"], *frozen["input_guardrails"], *frozen["mcp_servers"]]
    assert [sorted(EXECUTION_FIELDS & set(part)) for part in parts] == [[]] * len(parts)
    assert frozen["tools"][1]["task_queue"] == "gpu"  # kept: which workers get the call


def test_the_worker_declares_each_setting_in_code():
    settings = AGENT.execution_settings()
    assert settings.model.timeout_seconds == 45
    assert settings.model.retry.budget_seconds == 6 * 3600  # DEFAULT_MODEL_RETRY_BUDGET
    assert (settings.tools["lookup"].timeout_seconds, settings.tools["lookup"].retry) == (
        7,
        RetrySpec(maximum_attempts=2, maximum_interval_seconds=100),  # Temporal: 100 x initial
    )
    assert settings.tools["render"].queue_timeout_seconds == 90
    assert settings.tools["render"].heartbeat_timeout_seconds is None
    assert settings.tools["lookup"].heartbeat_timeout_seconds == 5  # DEFAULT_HEARTBEAT_TIMEOUT
    assert settings.input_guardrails["polite"].timeout_seconds == 3
    assert settings.mcp_servers["desk"].timeout_seconds == 12


def test_an_mcp_tool_takes_its_servers_settings_and_an_unknown_tool_is_no_guess():
    settings = AGENT.execution_settings()
    listed = ToolSpec(
        name="desk_close", description="", parameters={}, mcp_server="desk", mcp_tool="close"
    )
    assert settings.tool(listed).timeout_seconds == 12
    assert settings.tool(listed).retry.maximum_attempts == 1  # not said to be repeatable
    repeatable = listed.model_copy(update={"mcp_repeatable": True})
    assert settings.tool(repeatable).retry.maximum_attempts == 3
    stranger = ToolSpec(name="stranger", description="", parameters={})
    with pytest.raises(LookupError, match="declares no settings for tool 'stranger'"):
        settings.tool(stranger)
    with pytest.raises(LookupError, match="no settings for MCP server 'gone'"):
        settings.tool(listed.model_copy(update={"mcp_server": "gone"}))


async def test_describe_agent_answers_the_spec_and_the_settings_apart():
    activities = ToolActivities(AgentRegistry([AGENT]))
    described = await ActivityEnvironment().run(
        activities.describe_agent, DescribeAgentInput(agent="clerk")
    )
    assert isinstance(described, DescribedAgent)
    assert described.settings == AGENT.execution_settings()
    assert "model_timeout_seconds" not in described.spec.model_dump(mode="json")
    # plain JSON both ways, as a workflow reads it from history
    again = DescribedAgent.model_validate_json(described.model_dump_json())
    assert again.settings == described.settings
    # a run continued as new asks for the settings only: its history pays for them alone,
    # written without their defaults
    only = await ActivityEnvironment().run(
        activities.describe_agent, DescribeAgentInput(agent="clerk", settings_only=True)
    )
    assert only.spec is None and only.settings == described.settings
    assert len(only.model_dump_json()) < len(described.model_dump_json()) / 4
    assert '"maximum_attempts":3' not in only.model_dump_json()  # the default, left out


@pytest.mark.parametrize(
    "path",
    [
        "agent.model_timeout_seconds",
        "agent.model_retry",
        "agent.model_heartbeat_timeout_seconds",
        "agent.tools.0.timeout_seconds",
        "agent.tools.0.retry",
        "agent.tools.0.heartbeat_timeout_seconds",
        "agent.tools.0.queue_timeout_seconds",
        "agent.input_guardrails.0.timeout_seconds",
        "agent.mcp_servers.0.retry",
    ],
)
def test_a_snapshot_holding_an_execution_setting_is_refused_with_one_clear_line(path):
    """A snapshot written before the settings left the run, or made to carry them (a
    timeout of a millisecond, a retry policy without end): refused, never applied."""
    value = {"maximum_attempts": 1} if path.endswith("retry") else 0.001
    with pytest.raises(SnapshotError) as refused:
        loads(edited(set_at(path, value)))
    shown = "$." + ".".join(f"[{p}]" if p.isdigit() else p for p in path.split(".")).replace(
        ".[", "["
    )
    assert str(refused.value) == (
        f"invalid snapshot at {shown}: an execution setting, not part of a run: timeouts and "
        "retries come from the worker's code (describe_agent), never from a snapshot or an "
        "input; remove it"
    )


def test_an_unknown_field_elsewhere_is_still_just_unknown():
    with pytest.raises(SnapshotError, match=r"\$\.retry: unknown field"):
        loads(edited(set_at("retry", 1)))


def test_settings_json_refuses_what_is_not_a_setting():
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        ExecutionSettings.model_validate(
            {"model": {"timeout_seconds": 1, "retry": {}}, "approval": {}}
        )
    with pytest.raises(ValueError, match="greater than 0"):
        ExecutionSettings.model_validate({"model": {"timeout_seconds": 0, "retry": {}}})
