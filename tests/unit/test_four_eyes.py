"""Decisions bound to the run's execution, separation of duties with a signed start, and
how sensitive arguments are shown: pure, without Temporal."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from durable_agents.workflows import argument_view, decisions, signed_start
from durable_agents.workflows.agent_spec import ApprovalPolicy
from durable_agents.workflows.payloads import AgentInput, DecideInput, StartSignature
from durable_agents.workflows.state import Starter

from durable_agents import signing
from tests.unit.test_bound_decisions import ALICE, HUGE, MALLORY, T0, refusal, signed, state_with

BOB = signing.generate("bob-1", "bob")
EXECUTION = "0b6b2a9e-0000-4000-8000-000000000001"
FOUR_EYES = ApprovalPolicy(require_signature=True, separate_duties=True)


def executing(policy: ApprovalPolicy | None = None, starter: Starter | None = None):
    state = state_with(("c1", HUGE), policy=policy, keys=(ALICE, BOB))
    state.execution_id = EXECUTION
    state.started_by = starter
    return state


# --- the execution a decision names --------------------------------------------------------


def test_a_decision_for_another_execution_of_the_same_workflow_id_is_refused():
    state = executing()
    why = refusal(state, signed(ALICE, "c1", HUGE, execution_id="an-earlier-run"))
    assert why.startswith("the decision is for execution 'an-earlier-run' of run 'run-1'")
    unsigned = DecideInput(call_id="c1", decision="approve", approver="ann", execution_id="x")
    assert "is for execution 'x'" in refusal(state, unsigned)


def test_a_signed_decision_must_name_the_execution_once_the_run_has_one():
    state = executing()
    assert refusal(state, signed(ALICE, "c1", HUGE)) == (
        "a signed decision must carry execution_id"
    )
    recorded = decisions.apply(
        state, signed(ALICE, "c1", HUGE, execution_id=EXECUTION), via="update", now=T0
    )
    assert recorded.execution_id == EXECUTION and recorded.signed_by == "alice-1"


def test_runs_from_before_execution_binding_accept_decisions_without_it():
    state = executing()
    state.execution_id = None  # a 1.3 run
    assert decisions.apply(state, signed(ALICE, "c1", HUGE), via="update", now=T0).signed_by


def test_pending_items_name_the_execution_and_the_sensitive_arguments():
    state = executing()
    state.agent.tools[0].sensitive = ["order"]
    [item] = decisions.pending_approvals(state)
    assert (item.execution_id, item.sensitive) == (EXECUTION, ["order"])


# --- separation of duties ----------------------------------------------------------------------


def test_the_starter_may_not_approve_but_another_key_owner_may():
    state = executing(FOUR_EYES, Starter(key_id="alice-1", owner="alice"))
    why = refusal(state, signed(ALICE, "c1", HUGE, execution_id=EXECUTION))
    assert "alice started this run (key 'alice-1') and may not approve its calls" in why
    recorded = decisions.apply(
        state, signed(BOB, "c1", HUGE, execution_id=EXECUTION), via="update", now=T0
    )
    assert (recorded.approver, recorded.decision) == ("bob", "approve")


def test_the_starter_may_reject_their_own_call():
    state = executing(FOUR_EYES, Starter(key_id="alice-1", owner="alice"))
    rejection = signed(ALICE, "c1", HUGE, execution_id=EXECUTION, decision="reject")
    assert decisions.apply(state, rejection, via="update", now=T0).decision == "reject"


@pytest.mark.parametrize(
    ("starter", "request_", "why"),
    [
        (None, lambda: signed(BOB, "c1", HUGE, execution_id=EXECUTION), "start must be signed"),
        (
            Starter(key_id="alice-1", owner="alice"),
            lambda: signed(ALICE, "c1", HUGE, execution_id=EXECUTION, approver="bob"),
            "signed with alice's key 'alice-1', but names 'bob'",
        ),
        (
            Starter(key_id="bob-1", owner="bob"),
            lambda: signed(MALLORY, "c1", HUGE, execution_id=EXECUTION),
            "which this run does not know",
        ),
    ],
    ids=["unsigned-start", "typed-in-other-approver", "unknown-key"],
)
def test_separation_of_duties_cannot_be_talked_around(starter, request_, why):
    assert why in refusal(executing(FOUR_EYES, starter), request_())


def test_separation_of_duties_requires_signed_decisions():
    state = executing(FOUR_EYES, Starter(key_id="alice-1", owner="alice"))
    typed = DecideInput(call_id="c1", decision="approve", approver="bob")
    assert refusal(state, typed) == "the tool's policy requires a signed decision (`signature`)"


# --- the signed start --------------------------------------------------------------------------


def start_input(**changes) -> dict:
    plain = AgentInput(agent="bot", input="wire").model_dump(mode="json")
    return ALICE.sign_start(plain, workflow_id="run-1", expires_at="2026-01-01T01:00:00Z") | changes


def verify(document: dict, *, workflow_id: str = "run-1", now=T0, keys=(ALICE, BOB)):
    claim = signed_start.claim_of(document)
    assert claim is not None
    return signed_start.verify(claim, [k.public() for k in keys], workflow_id=workflow_id, now=now)


def test_a_signed_start_names_its_key_owner_and_the_input_model_takes_it():
    document = start_input()
    assert verify(document) == Starter(key_id="alice-1", owner="alice")
    parsed = AgentInput.model_validate(document)
    assert isinstance(parsed.start_signature, StartSignature)


@pytest.mark.parametrize(
    ("document", "options", "why"),
    [
        (lambda: start_input(input="wire more"), {}, "does not verify"),
        (lambda: start_input(context={"to": "x"}), {}, "does not verify"),
        (lambda: start_input(), {"workflow_id": "run-2"}, "is for workflow 'run-1'"),
        (lambda: start_input(), {"now": T0 + timedelta(hours=2)}, "expired at"),
        (lambda: start_input(), {"keys": (BOB,)}, "which this worker lacks"),
    ],
    ids=["input-changed", "field-added", "other-workflow", "expired", "unknown-key"],
)
def test_a_start_signature_that_does_not_hold_is_refused(document, options, why):
    with pytest.raises(ValueError, match=why):
        verify(document(), **options)


def test_a_changed_expiry_or_key_id_breaks_the_signature():
    document = start_input()
    document["start_signature"]["expires_at"] = "2027-01-01T00:00:00Z"
    with pytest.raises(ValueError, match="does not verify"):
        verify(document)


def test_hostile_start_signatures_are_refused_by_the_input_model():
    from pydantic import ValidationError

    for bad in (
        {"key_id": "alice-1"},
        {**start_input()["start_signature"], "sig": "x" * 86 + "="},
        {**start_input()["start_signature"], "expires_at": "tomorrow"},
        {**start_input()["start_signature"], "extra": 1},
        "alice",
    ):
        with pytest.raises(ValidationError):
            AgentInput.model_validate(start_input(start_signature=bad))
    assert signed_start.claim_of(["not", "an", "object"]) is None
    assert signed_start.claim_of({"start_signature": None}) is None


def test_a_start_without_a_signature_claims_nothing():
    assert signed_start.claim_of(AgentInput(agent="bot", input="x").model_dump(mode="json")) is None


# --- sensitive arguments -------------------------------------------------------------------------


def test_sensitive_values_are_masked_with_their_length_and_others_shown_in_full():
    arguments = json.dumps({"card": "4111111111111111", "amount": 12.5, "note": "x" * 300})
    shown = argument_view.named_values(arguments, ["card"])
    assert shown == [("card", "<sensitive, 16 chars>"), ("amount", "12.5"), ("note", "x" * 300)]
    assert argument_view.named_values(arguments, ["card"], reveal=True)[0] == (
        "card",
        "4111111111111111",
    )
    assert "4111" not in argument_view.redacted(arguments, ["card"])
    assert argument_view.redacted(arguments, []) == arguments


def test_arguments_that_are_not_an_object_are_hidden_whole_for_a_tool_with_secrets():
    broken = '{"card": "4111111111111111", '
    assert "4111" not in str(argument_view.named_values(broken, ["card"]))
    assert "4111" not in argument_view.redacted(broken, ["card"])
    assert argument_view.named_values(broken, []) == broken


def test_an_older_reader_takes_query_answers_with_fields_a_later_build_added():
    from durable_agents.workflows.payloads import DecisionSignal, PendingApproval, StatusView
    from pydantic import ValidationError

    item = {"call_id": "c1", "tool": "t", "arguments": "{}", "requested_at": "2026-01-01T00:00Z"}
    assert PendingApproval.model_validate({**item, "added_later": 1}).call_id == "c1"
    status = {"status": "running", "agent": "a", "turn": 0, "pending_approvals": 0, "usage": {}}
    assert StatusView.model_validate({**status, "current_agent": "a"}).agent == "a"
    with pytest.raises(ValidationError):  # what senders send is still refused if unknown
        DecisionSignal.model_validate({"call_id": "c1", "approver": "a", "added_later": 1})


def test_a_standing_rule_of_the_run_s_starter_decides_nothing_under_separation_of_duties():
    # Bob's `always` rule came with a verified snapshot that Bob resumed (he signed its
    # start): his rule would approve a call of a run he started.
    from durable_agents.workflows import decisions as rules
    from durable_agents.workflows.run_items import Decision

    state = executing(FOUR_EYES, Starter(key_id="bob-1", owner="bob"))
    call = rules.pending_calls(state)[0]
    rule = Decision(
        call_id="c0",
        decision="approve",
        approver="bob",
        always=True,
        via="update",
        signed_by="bob-1",
        arguments_sha256=rules.signed_decisions.call_sha256(call),
        at=T0,
    )
    assert not rules.covers(state, rule, call, now=T0)
    state.started_by = Starter(key_id="alice-1", owner="alice")
    assert rules.covers(state, rule, call, now=T0)
    state.started_by = None
    assert not rules.covers(state, rule, call, now=T0)


def test_a_limit_on_a_sensitive_argument_does_not_quote_its_value():
    from durable_agents.workflows.agent_spec import ApprovalCondition
    from durable_agents.workflows.approval_policy import limits_problem

    policy = ApprovalPolicy(limits=[ApprovalCondition(field="pin", op="<=", value=9999)])
    problem = limits_problem(policy, {"pin": 123456}, sensitive=["pin"])
    assert problem == "pin must be <= 9999 (is a sensitive value)"
    assert limits_problem(policy, {"pin": 123456}) == "pin must be <= 9999 (is 123456)"
