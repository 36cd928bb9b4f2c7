"""@tool, Agent and the registry: what a user writes to define an agent."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import pytest
from durable_agents.activities import Agent, ToolContext, tool
from durable_agents.activities.registry import AgentRegistry
from durable_agents.workflows.execution_settings import EXECUTION_FIELDS
from pydantic import Field
from temporalio.common import RetryPolicy


@tool(needs_approval=True, timeout=timedelta(seconds=5))
def refund(
    order_id: str,
    amount: Annotated[float, Field(gt=0, description="EUR")],
    ctx: ToolContext,
    note: str = "",
) -> str:
    """Refund an order.

    More text."""
    return order_id


def test_tool_schema_comes_from_type_hints_and_description_from_docstring():
    spec = refund.spec()
    assert spec.name == "refund"
    assert spec.description == "Refund an order.\n\nMore text."
    assert spec.parameters["required"] == ["order_id", "amount"]
    assert spec.parameters["properties"]["amount"] == {
        "type": "number",
        "exclusiveMinimum": 0,
        "description": "EUR",
        "title": "Amount",
    }
    assert "ctx" not in spec.parameters["properties"]
    assert spec.parameters["additionalProperties"] is False
    settings = refund.execution_settings()
    assert (spec.needs_approval, settings.timeout_seconds, settings.retry.maximum_attempts) == (
        True,
        5,
        3,
    )


def test_tool_arguments_are_validated_by_the_generated_model():
    with pytest.raises(ValueError, match="greater than 0"):
        refund.arguments.model_validate({"order_id": "A", "amount": -1})
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        refund.arguments.model_validate({"order_id": "A", "amount": 1, "bogus": 1})


def test_tool_without_type_hints_is_refused_at_definition():
    with pytest.raises(TypeError, match="parameter 'x' needs a type hint"):

        @tool
        def bad(x):
            """No hints."""


def test_tool_with_var_kwargs_is_refused():
    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs are not supported"):

        @tool
        def bad(**kw: int):
            """Kwargs."""


def test_unbounded_retry_policy_is_refused():
    with pytest.raises(ValueError, match="maximum_attempts bound"):

        @tool(retry_policy=RetryPolicy(maximum_attempts=0))
        def forever() -> str:
            """Never stops."""
            return ""


def test_retry_policy_keeps_its_non_retryable_error_types():
    @tool(retry_policy=RetryPolicy(maximum_attempts=4, non_retryable_error_types=["KeyError"]))
    def pick(key: str) -> str:
        """Pick."""
        return key

    assert pick.execution_settings().retry.non_retryable_error_types == ["KeyError"]


def test_agent_refuses_two_tools_with_one_name():
    with pytest.raises(ValueError, match="two tools are called 'refund'"):
        Agent(name="a", instructions="", tools=[refund, refund])


def test_agent_spec_freezes_model_limits_and_tools():
    spec = Agent(name="a", instructions="i", model="m", tools=[refund], max_turns=3).spec()
    assert (spec.name, spec.model, spec.max_turns, [t.name for t in spec.tools]) == (
        "a",
        "m",
        3,
        ["refund"],
    )


def test_registry_loads_every_agent_of_a_module():
    assert AgentRegistry.from_modules(["tests.support.agents"]).names() == [
        "asker",
        "assistant",
        "concierge",
        "custodian",
        "decider",
        "digester",
        "forgetful",
        "frugal",
        "guarded",
        "marathon",
        "quick",
        "sleepy",
        "support",
        "tally",
        "thinker",
        "treasurer",
        "tuned",
    ]


@pytest.mark.parametrize(
    ("module", "message"),
    [
        ("no.such.module", "cannot import agent module 'no.such.module'"),
        ("json", "module 'json' defines no Agent"),
    ],
)
def test_registry_refuses_modules_without_agents(module, message):
    with pytest.raises(ValueError, match=message):
        AgentRegistry.from_modules([module])


def test_the_worker_declares_heartbeats_and_the_model_retry_budget_outside_the_spec():
    agent = Agent(name="a", instructions="", tools=[refund])
    settings = agent.execution_settings()
    assert settings.model.heartbeat_timeout_seconds == 5.0
    assert settings.model.retry.budget_seconds == 6 * 3600
    assert settings.model.retry.maximum_interval_seconds == 60.0
    assert settings.tools["refund"].heartbeat_timeout_seconds == 5.0
    frozen = agent.spec().model_dump(mode="json")  # none of it is frozen into a run
    assert EXECUTION_FIELDS.isdisjoint(frozen) and EXECUTION_FIELDS.isdisjoint(frozen["tools"][0])
    quiet = Agent(
        name="b",
        instructions="",
        tools=[tool(refund.fn, name="quiet", heartbeat_timeout=None)],
        model_retry_budget=None,
        model_heartbeat_timeout=None,
    ).execution_settings()
    assert quiet.model.retry.budget_seconds is None
    assert quiet.model.heartbeat_timeout_seconds is None
    assert quiet.tools["quiet"].heartbeat_timeout_seconds is None


@pytest.mark.parametrize("bad", [timedelta(0), timedelta(seconds=-1)])
def test_a_heartbeat_timeout_must_be_positive(bad):
    with pytest.raises(ValueError, match="heartbeat_timeout must be positive"):
        tool(refund.fn, name="x", heartbeat_timeout=bad)
    with pytest.raises(ValueError, match="model_heartbeat_timeout must be positive"):
        Agent(name="a", instructions="", model_heartbeat_timeout=bad)
    with pytest.raises(ValueError, match="model_retry_budget must be positive"):
        Agent(name="a", instructions="", model_retry_budget=bad)


def test_the_example_refund_is_applied_once_per_key_in_a_durable_store(tmp_path, monkeypatch):
    from examples import support_agent

    monkeypatch.setattr(support_agent, "REFUNDS_DB", tmp_path / "refunds.db")
    ctx = ToolContext(idempotency_key="r1:c1", run_id="r1", call_id="c1", agent="s")
    first = support_agent.issue_refund.fn("A12", 40.0, "damaged", ctx)
    again = support_agent.issue_refund.fn("A12", 99.0, "retried with other args", ctx)
    assert first == again == "Refunded 40.00 EUR for order A12."
    other = ToolContext(idempotency_key="r2:c1", run_id="r2", call_id="c1", agent="s")
    assert support_agent.issue_refund.fn("B7", 25.0, "x", other) == (
        "Refunded 25.00 EUR for order B7."
    )


def test_every_spec_field_has_a_source_on_its_definition():
    """A new option added to AgentSpec or ToolSpec without its Agent/Tool field fails here
    instead of being frozen at its default."""
    from durable_agents.activities.spec_fields import derive
    from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec

    spec = Agent(name="a", instructions="i", tools=[refund]).spec()
    assert set(spec.model_fields_set) == set(AgentSpec.model_fields)
    assert set(spec.tools[0].model_fields_set) == set(ToolSpec.model_fields)

    class Thin:
        name = "x"

    with pytest.raises(TypeError, match=r"Thin has no source for ToolSpec\.description"):
        derive(ToolSpec, Thin())
