"""Budget requests (`on_budget="ask"`) as pure data: what a run asks for, which edits an
approver may make, and snapshots whose requests and decisions contradict each other."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
from durable_agents.workflows import budget
from durable_agents.workflows.agent_spec import ApprovalCondition, ApprovalPolicy
from durable_agents.workflows.run_items import BudgetRequest
from durable_agents.workflows.snapshot import SnapshotError, loads
from durable_agents.workflows.state import ErrorInfo, RunState

from durable_agents import Agent, ModelSettings, tool
from tests.support.snapshot_golden import golden_state, golden_text, sign

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _before_any_request() -> RunState:
    """The golden run before it asked for a budget: its requests and their decisions gone."""
    state = golden_state("single")
    state.items = [i for i in state.items if not getattr(i, "call_id", "").startswith("budget/")]
    assert not any(isinstance(i, BudgetRequest) for i in state.items)
    return state


@tool
def extend_budget(by: int) -> str:
    """A tool whose name the budget requests take."""
    return str(by)


def request(kind: str = "tokens", needed: float = 810, proposed: float = 1200) -> BudgetRequest:
    return BudgetRequest(
        call_id="budget/1", kind=kind, budget=600, needed=needed, proposed=proposed,
        message="m", at=T0,
    )  # fmt: skip


@pytest.mark.parametrize(
    "arguments, problem",
    [
        ({"token_budget": 900}, None),
        ({"token_budget": 810}, None),
        ({"token_budget": 809}, "must be at least 810"),
        ({"token_budget": 900.0}, "must be a whole number"),
        ({"token_budget": "900"}, "must be a whole number"),
        ({"token_budget": None}, "must be a whole number"),
        ({"token_budget": False}, "must be a whole number"),
        ({}, "takes one argument, token_budget"),
        ({"token_budget": 900, "note": "x"}, "takes one argument, token_budget"),
    ],
)
def test_an_edit_must_name_a_whole_budget_the_next_call_fits_in(arguments, problem):
    found = budget.arguments_problem(request(), arguments)
    assert found == problem if problem is None else problem in (found or "")


@pytest.mark.parametrize(
    "value, problem",
    [
        (2.5, None),
        (3, None),
        (float("inf"), "a finite number"),
        (float("nan"), "a finite number"),
        (10**400, "at most 9,007,199,254,740,992"),
        (1.0, "at least"),
    ],
)
def test_a_cost_edit_is_a_finite_amount_the_next_call_fits_in(value, problem):
    found = budget.arguments_problem(
        request("cost", needed=2.1, proposed=4), {"cost_budget": value}
    )
    assert found == problem if problem is None else problem in (found or "")


def test_a_run_asks_for_its_budget_again_or_what_the_next_call_needs():
    state = _before_any_request()
    state.token_budget, state.agent.token_budget = 600, 600
    state.usage.total_tokens = 500
    over = ErrorInfo(type="BudgetExceeded", message="m", details={"next_call_bound": 300.4})
    first = budget.extension(state, over)
    assert first is not None
    assert (first.call_id, first.kind, first.needed, first.proposed) == (
        "budget/1",
        "tokens",
        801,
        1200,
    )
    budget.ask(state, first, now=T0)
    huge = ErrorInfo(type="BudgetExceeded", message="m", details={"next_call_bound": 5000})
    second = budget.extension(state, huge)
    assert second is not None
    assert (second.call_id, second.proposed) == ("budget/2", 5500)  # at least what it needs
    assert json.loads(budget.as_call(second).arguments) == {"token_budget": 5500}


def test_a_run_asks_within_the_limits_or_not_at_all():
    state = _before_any_request()
    state.token_budget, state.agent.token_budget = 600, 600
    state.usage.total_tokens = 500
    cap = ApprovalCondition(field="token_budget", op="<=", value=1000)
    other = ApprovalCondition(field="cost_budget", op="<=", value=1)  # not this budget's
    state.agent.budget_approval = ApprovalPolicy(approvers=["ann"], limits=[cap, other])
    over = ErrorInfo(type="BudgetExceeded", message="m", details={"next_call_bound": 300})
    capped = budget.extension(state, over)
    assert capped is not None and (capped.needed, capped.proposed) == (800, 1000)
    beyond = ErrorInfo(type="BudgetExceeded", message="m", details={"next_call_bound": 600})
    assert budget.extension(state, beyond) is None  # 1,100 needed: no approval could do


def _golden_doc() -> dict:
    return json.loads(golden_text("single"))


def _index(doc: dict, call_id: str, kind: str) -> int:
    return next(
        n for n, i in enumerate(doc["items"]) if i["type"] == kind and i["call_id"] == call_id
    )


def _refusal(doc: dict) -> str:
    with pytest.raises(SnapshotError) as raised:
        loads(json.dumps(sign(doc)))
    return str(raised.value)


def test_a_snapshot_cannot_decide_a_request_twice():
    doc = _golden_doc()
    decision = doc["items"][_index(doc, "budget/1", "decision")]
    doc["items"].append({**decision, "decision": "reject"})
    assert "second decision for budget request 'budget/1'" in _refusal(doc)


def test_a_snapshot_cannot_decide_a_request_by_rule_or_before_it_was_asked():
    doc = _golden_doc()
    doc["items"][_index(doc, "budget/1", "decision")]["via"] = "rule"
    assert "a budget request is decided once, by no rule" in _refusal(doc)
    doc = _golden_doc()
    asked = _index(doc, "budget/1", "budget_request")
    doc["items"].insert(asked, doc["items"].pop(_index(doc, "budget/1", "decision")))
    assert "decision for tool call 'budget/1', which no reply proposed" in _refusal(doc)


@pytest.mark.parametrize("call_id", ["budget/0", "budget/x", "call_1", "budget/1/2"])
def test_a_snapshot_request_id_must_be_one_no_model_call_can_have(call_id):
    doc = _golden_doc()
    doc["items"][_index(doc, "budget/2", "budget_request")]["call_id"] = call_id
    doc["items"][_index(doc, "budget/2", "decision")]["call_id"] = call_id
    assert "call_id" in _refusal(doc)


@pytest.mark.parametrize(
    "options, problem",
    [
        ({"budget_approval": ApprovalPolicy()}, "needs budget_approval to say who may extend"),
        (
            {
                "budget_approval": ApprovalPolicy(
                    approvers=["a"], limits=[ApprovalCondition(field="tokens", op="<=", value=9)]
                )
            },
            "budget_approval.limits name tokens; an extension has token_budget or cost_budget",
        ),
        (
            {
                "budget_approval": ApprovalPolicy(
                    approvers=["a"], when=[ApprovalCondition(field="x", op=">", value=1)]
                )
            },
            "budget_approval takes no `when`",
        ),
        ({"tools": [extend_budget]}, "the tool name 'extend_budget' is reserved"),
        ({"token_budget": None}, "on_budget='ask' needs a token or cost budget"),
    ],
)
def test_an_agent_that_asks_says_who_may_answer(options, problem):
    defaults = {
        "name": "a",
        "instructions": "",
        "token_budget": 100,
        "on_budget": "ask",
        "budget_approval": ApprovalPolicy(approvers=["ann"]),
        "model_settings": ModelSettings(max_output_tokens=10),
    }
    with pytest.raises(ValueError, match=re.escape(problem)):
        Agent(**{**defaults, **options})
