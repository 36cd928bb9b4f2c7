"""Code rules and evaluators are checked where they are defined: a function that cannot
be called `(arguments, context)`, an evaluator that is neither a function nor an agent,
limits without an evaluator, a rule beside `when`; and they travel as names only."""

from __future__ import annotations

import pytest
from durable_agents.workflows.agent_spec import ApprovalPolicy
from pydantic import ValidationError

from durable_agents import Agent, ApprovalCondition, ModelSettings, Verdict, tool

WITHIN = [ApprovalCondition(field="amount", op="<=", value=100)]


def in_oakland(arguments: dict, context: object) -> bool:
    return "oakland" in arguments["city"].casefold()


def screen(arguments: dict, context: object) -> Verdict:
    return Verdict(decision="escalate")


def test_a_rule_with_the_wrong_arity_is_refused_at_definition():
    with pytest.raises(ValueError, match="must take \\(arguments, context\\)"):

        @tool(needs_approval=lambda arguments: True)
        def get_weather(city: str) -> str:
            return city


def test_needs_approval_of_another_kind_is_refused():
    with pytest.raises(
        TypeError, match="needs_approval is a bool, an ApprovalPolicy or a function"
    ):

        @tool(needs_approval="yes")  # type: ignore[arg-type]
        def get_weather(city: str) -> str:
            return city


def test_an_evaluator_must_be_a_function_or_an_agent():
    with pytest.raises(ValueError, match="an evaluator is a function or an Agent, not int"):
        ApprovalPolicy(evaluator=42, auto_approve_within=WITHIN)


def test_limits_for_an_evaluator_need_an_evaluator_and_a_rule_takes_no_when():
    with pytest.raises(ValidationError, match="auto_approve_within limits an evaluator"):
        ApprovalPolicy(auto_approve_within=WITHIN)
    with pytest.raises(ValidationError, match="takes no `when`"):
        ApprovalPolicy(rule=in_oakland, when=WITHIN)
    with pytest.raises(ValidationError):
        ApprovalPolicy(evaluator=screen, auto_approve_within=[])  # at least one condition


def test_the_spec_carries_names_and_the_worker_keeps_the_functions():
    helper = Agent(name="helper", instructions="Decide refunds.", model="m2", tools=[])
    policy = ApprovalPolicy(rule=in_oakland, evaluator=helper, auto_approve_within=WITHIN)
    assert policy.rule == f"{__name__}.in_oakland" and policy.rule_function is in_oakland
    assert policy.evaluator is not None and policy.evaluator_object is helper
    assert (policy.evaluator.kind, policy.evaluator.model) == ("agent", "m2")
    data = policy.model_dump(mode="json")
    assert data["rule"] == f"{__name__}.in_oakland"
    assert data["evaluator"] == {
        "kind": "agent",
        "name": "helper",
        "model": "m2",
        "instructions": "Decide refunds.",
    }
    loaded = ApprovalPolicy.model_validate_json(policy.model_dump_json(), strict=True)
    assert loaded.rule_function is None and loaded.evaluator_object is None  # names only
    assert loaded.model_dump() == policy.model_dump()


def test_a_policy_without_the_new_fields_is_written_as_before():
    assert set(ApprovalPolicy().model_dump()) == {
        "when",
        "approvers",
        "timeout",
        "on_timeout",
        "require_signature",
        "allow_always",
        "limits",
        "separate_duties",
    }


def test_a_budget_extension_is_decided_by_a_person_only():
    with pytest.raises(ValueError, match="budget_approval takes no code rule or evaluator"):
        Agent(
            name="spender",
            instructions="-",
            model="m",
            token_budget=1_000,
            model_settings=ModelSettings(max_output_tokens=100),
            on_budget="ask",
            budget_approval=ApprovalPolicy(
                approvers=["ann"], evaluator=screen, auto_approve_within=WITHIN
            ),
        )


def test_a_handoff_and_an_agent_tool_take_a_code_rule():
    from durable_agents.activities.registry import AgentRegistry

    from durable_agents import handoff

    helper = Agent(name="helper", instructions="-", model="m")
    caller = Agent(
        name="caller",
        instructions="-",
        model="m",
        tools=[helper.as_tool(needs_approval=in_oakland)],
        handoffs=[handoff(helper, needs_approval=in_oakland)],
    )
    registry = AgentRegistry([caller])
    for tool_name in ("helper", "transfer_to_helper"):
        assert registry.approval_rule("caller", tool_name) == (
            f"{__name__}.in_oakland",
            in_oakland,
        )
