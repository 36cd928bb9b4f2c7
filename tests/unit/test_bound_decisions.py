"""Decisions bound to what they decide (the approval gate), without Temporal: run and
argument binding, expiry, scoped `always`, policy limits, no blind approvals, and
Ed25519-signed decisions."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import decisions, loop, signed_decisions
from durable_agents.workflows.agent_spec import (
    AgentSpec,
    ApprovalCondition,
    ApprovalPolicy,
    ApproverKey,
    ToolSpec,
)
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    ToolOutcome,
)
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunState

from durable_agents import signing

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCHEMA = {
    "type": "object",
    "required": ["order", "amount"],
    "properties": {"order": {"type": "string"}, "amount": {"type": "number"}},
}
SMALL = '{"order": "A1", "amount": 1}'
HUGE = '{"order": "B7", "amount": 1000000}'
ALICE = signing.generate("alice-1", "alice")
MALLORY = signing.generate("mallory-1", "mallory")


def state_with(
    *calls: tuple[str, str], policy: ApprovalPolicy | None = None, keys=(ALICE,)
) -> RunState:
    spec = AgentSpec(
        name="bot",
        instructions="",
        model="m",
        tools=[
            ToolSpec(
                name="refund",
                description="",
                parameters=SCHEMA,
                needs_approval=True,
                approval=policy or ApprovalPolicy(),
            )
        ],
        approver_keys=[k.public() for k in keys],
    )
    state = loop.new_state(spec, AgentInput(agent="bot", input="hi"), run_id="run-1", now=T0)
    if calls:
        propose(state, *calls)
    return state


def propose(state: RunState, *calls: tuple[str, str], now: datetime = T0) -> None:
    reply = ModelReply(
        tool_calls=[ModelToolCall(call_id=c, tool="refund", arguments=a) for c, a in calls]
    )
    loop.record_model_reply(state, reply, now=now)


def finish_tools(state: RunState) -> None:
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools)
    outcomes = [ToolOutcome(call_id=c.call_id, content="done") for c in step.calls]
    loop.record_tool_outcomes(state, outcomes, now=T0)


def digest(arguments: str) -> str:
    return signed_decisions.arguments_sha256(json.loads(arguments))


def ask(call_id: str, decision: str = "approve", approver: str = "ann", **kw) -> DecideInput:
    return DecideInput(call_id=call_id, decision=decision, approver=approver, **kw)


def signed(key: signing.SigningKey, call_id: str, arguments: str, **fields) -> DecideInput:
    payload = {
        "call_id": call_id,
        "decision": "approve",
        "approver": key.owner,
        "run_id": "run-1",
        "arguments_sha256": digest(arguments),
        "expires_at": "2026-01-01T01:00:00Z",
        **fields,
    }
    return DecideInput.model_validate(key.sign(payload))


def refusal(state: RunState, request: DecideInput, *, now: datetime = T0) -> str:
    with pytest.raises(DecisionRefused) as err:
        decisions.apply(state, request, via="update", now=now)
    return err.value.reason


# --- binding ------------------------------------------------------------------------


def test_pending_view_gives_args_and_the_digest_a_decision_binds_to():
    state = state_with(("c1", '{"amount": 1.0, "order": "A1"}'))
    [item] = decisions.pending_approvals(state)
    assert item.args == {"amount": 1.0, "order": "A1"}
    assert item.run_id == "run-1"
    assert item.arguments_sha256 == hashlib.sha256(b'{"amount":1,"order":"A1"}').hexdigest()


def test_decision_for_another_run_is_refused():
    state = state_with(("c1", SMALL))
    assert "is for run 'run-2', not this one" in refusal(state, ask("c1", run_id="run-2"))


def test_decision_made_on_other_arguments_is_refused():
    state = state_with(("c1", HUGE))
    why = refusal(state, ask("c1", arguments_sha256=digest(SMALL)))
    assert "arguments_sha256 does not match" in why
    recorded = decisions.apply(
        state, ask("c1", arguments_sha256=digest(HUGE)), via="update", now=T0
    )
    assert recorded.arguments_sha256 == digest(HUGE)


def test_expired_decision_is_refused():
    state = state_with(("c1", SMALL))
    late = T0 + timedelta(hours=2)
    why = refusal(state, ask("c1", expires_at="2026-01-01T01:00:00Z"), now=late)
    assert why == "the decision expired at 2026-01-01T01:00:00Z"


# --- no blind approvals ---------------------------------------------------------------


@pytest.mark.parametrize(
    "request_",
    [ask("c1"), ask("c1", "reject", always=True)],
    ids=["approval", "always-rejection"],
)
def test_nothing_but_a_plain_rejection_is_held_for_a_call_not_proposed_yet(request_):
    state = state_with()
    decisions.receive_signal(state, request_, model_call_pending=True, now=T0)
    assert state.held_decisions == []
    assert "only a plain rejection is held" in (state.refused_decisions[0].refused_because or "")
    propose(state, ("c1", HUGE))
    assert [c.call_id for c in decisions.pending_calls(state)] == ["c1"]


# --- always with a scope ----------------------------------------------------------------


def test_always_covers_the_same_arguments_only():
    state = state_with(("c1", SMALL))
    decisions.apply(state, ask("c1", always=True), via="update", now=T0)
    finish_tools(state)
    propose(state, ("c2", SMALL), ("c3", HUGE))
    assert decisions.decided(state)["c2"].via == "rule"
    assert [c.call_id for c in decisions.pending_calls(state)] == ["c3"]


def test_always_when_covers_the_arguments_the_approver_stated():
    state = state_with(("c1", SMALL))
    upto_10 = [ApprovalCondition(field="amount", op="<=", value=10)]
    decisions.apply(state, ask("c1", always=True, always_when=upto_10), via="update", now=T0)
    finish_tools(state)
    propose(state, ("c2", '{"order": "C3", "amount": 9}'), ("c3", HUGE), ("c4", '{"order": "x"}'))
    assert decisions.decided(state)["c2"].via == "rule"
    assert [c.call_id for c in decisions.pending_calls(state)] == ["c3", "c4"]


def test_always_lapses_when_its_decision_expires():
    state = state_with(("c1", SMALL))
    decisions.apply(
        state, ask("c1", always=True, expires_at="2026-01-01T00:10:00Z"), via="update", now=T0
    )
    finish_tools(state)
    propose(state, ("c2", SMALL), now=T0 + timedelta(minutes=11))
    assert [c.call_id for c in decisions.pending_calls(state)] == ["c2"]


def test_policy_can_forbid_always():
    state = state_with(("c1", SMALL), policy=ApprovalPolicy(allow_always=False))
    assert refusal(state, ask("c1", always=True)) == "the policy of refund does not allow `always`"


def test_a_rule_without_a_digest_covers_nothing_new():
    state = state_with(("c1", SMALL))
    recorded = decisions.apply(state, ask("c1", always=True), via="update", now=T0)
    recorded.arguments_sha256 = None  # as a snapshot might carry it
    finish_tools(state)
    propose(state, ("c2", SMALL))
    assert [c.call_id for c in decisions.pending_calls(state)] == ["c2"]


# --- limits -----------------------------------------------------------------------------

AT_MOST_100 = ApprovalPolicy(limits=[ApprovalCondition(field="amount", op="<=", value=100)])


def test_model_arguments_outside_the_limits_are_answered_never_pending():
    state = state_with(("c1", HUGE), ("c2", SMALL), policy=AT_MOST_100)
    assert [c.call_id for c in decisions.pending_calls(state)] == ["c2"]
    answer = next(i for i in state.items if isinstance(i, ToolResult))
    assert answer.call_id == "c1" and answer.is_error
    assert "amount must be <= 100 (is 1000000)" in answer.content


def test_edited_arguments_outside_the_limits_are_refused():
    state = state_with(("c1", SMALL), policy=AT_MOST_100)
    why = refusal(state, ask("c1", arguments={"order": "A1", "amount": 1e12}))
    assert (
        why
        == "edited arguments are not valid for refund: amount must be <= 100 (is 1000000000000.0)"
    )


@pytest.mark.parametrize("value", [True, "50", None])
def test_a_limit_that_cannot_be_evaluated_does_not_hold(value):
    state = state_with(policy=AT_MOST_100)
    propose(state, ("c1", json.dumps({"order": "A1", "amount": value})))
    assert decisions.pending_calls(state) == []


# --- signed decisions -------------------------------------------------------------------

SIGNED_ONLY = ApprovalPolicy(require_signature=True, approvers=["alice"])


def test_signed_decision_is_recorded_with_its_key():
    state = state_with(("c1", HUGE), policy=SIGNED_ONLY)
    recorded = decisions.apply(state, signed(ALICE, "c1", HUGE), via="update", now=T0)
    assert (recorded.approver, recorded.signed_by) == ("alice", "alice-1")


def test_policy_requiring_a_signature_refuses_a_typed_in_approver():
    state = state_with(("c1", HUGE), policy=SIGNED_ONLY)
    why = refusal(state, ask("c1", approver="alice"))
    assert why == "the tool's policy requires a signed decision (`signature`)"


@pytest.mark.parametrize(
    "make, expected",
    [
        (
            lambda: signed(MALLORY, "c1", HUGE),
            "signed with key 'mallory-1', which this run does not know",
        ),
        (
            lambda: DecideInput.model_validate(
                {**signed(ALICE, "c1", HUGE).model_dump(mode="json"), "reason": "changed"}
            ),
            "the signature with key 'alice-1' does not verify",
        ),
        (
            lambda: signed(ALICE, "c1", HUGE, approver="bob"),
            "signed with alice's key 'alice-1', but names 'bob'",
        ),
        (
            lambda: DecideInput.model_validate(
                ALICE.sign({"call_id": "c1", "decision": "approve", "approver": "alice"})
            ),
            "a signed decision must carry run_id, arguments_sha256, expires_at",
        ),
        (lambda: signed(ALICE, "c1", SMALL), "arguments_sha256 does not match"),
        (lambda: signed(ALICE, "c1", HUGE, run_id="run-9"), "is for run 'run-9'"),
    ],
    ids=["unknown-key", "tampered", "other-approver", "unbound", "other-arguments", "other-run"],
)
def test_bad_signed_decisions_are_refused(make, expected):
    state = state_with(("c1", HUGE), policy=SIGNED_ONLY)
    assert expected in refusal(state, make())
    assert decisions.pending_calls(state)[0].call_id == "c1"


def test_a_signature_made_with_an_expired_key_is_refused():
    key = ALICE.public().model_copy(update={"not_after": T0 - timedelta(seconds=1)})
    state = state_with(("c1", HUGE), policy=SIGNED_ONLY)
    state.agent.approver_keys = [key]
    assert "expired" in refusal(state, signed(ALICE, "c1", HUGE))


def test_an_unsigned_rule_does_not_decide_where_signatures_are_required():
    state = state_with(("c1", SMALL))
    decisions.apply(state, ask("c1", always=True), via="update", now=T0)
    finish_tools(state)
    state.agent.tools[0].approval.require_signature = True
    propose(state, ("c2", SMALL))
    assert [c.call_id for c in decisions.pending_calls(state)] == ["c2"]


def test_signed_message_is_the_canonical_payload_without_its_signature():
    request = signed(ALICE, "c1", HUGE, reason="ok", always=False)
    body = request.model_dump(mode="json", exclude={"signature"}, exclude_unset=True)
    assert signed_decisions.signed_message(request) == canonical_json(body)
    assert "signature" not in body and body["decision"] == "approve"


def test_key_files_round_trip_and_refuse_to_overwrite(tmp_path):
    path = tmp_path / "alice.key"
    signing.write_key(ALICE, path)
    assert path.stat().st_mode & 0o777 == 0o600
    assert signing.read_key(path).public() == ALICE.public()
    with pytest.raises(signing.SigningError, match="exists"):
        signing.write_key(ALICE, path)
    keys = tmp_path / "keys.json"
    keys.write_text(f"[{ALICE.public().model_dump_json()}, {ALICE.public().model_dump_json()}]")
    with pytest.raises(signing.SigningError, match="more than once: alice-1"):
        signing.read_public_keys(keys)


def test_decisions_are_strict_about_bound_fields():
    with pytest.raises(ValueError):
        DecideInput(call_id="c", decision="approve", approver="a", arguments_sha256="ABC")
    with pytest.raises(ValueError):
        DecideInput(call_id="c", decision="approve", approver="a", expires_at="tomorrow")
    with pytest.raises(ValueError):
        ApproverKey(key_id="k", owner="o", public_key="not base64url!")


# --- review findings -----------------------------------------------------------------------

WHEN_BIG = ApprovalPolicy(when=[ApprovalCondition(field="amount", op=">", value=1000)])


@pytest.mark.parametrize(
    "arguments", ['{"order": "A", "amount": NaN}', '{"order": "A", "amount": -Infinity}',
                  '{"order": "A", "amount": 1e999}'],
    ids=["nan", "-inf", "overflow"],
)  # fmt: skip
def test_non_finite_numbers_cannot_skip_a_when_condition(arguments):
    state = state_with(("c1", arguments), policy=WHEN_BIG)
    assert decisions.pending_calls(state) == []
    [answer] = [i for i in state.items if isinstance(i, ToolResult)]
    assert answer.is_error and "not valid JSON" in answer.content
    assert isinstance(loop.next_step(state), loop.CallModel)  # nothing runs


def test_arguments_nested_too_deeply_are_malformed_not_an_exception():
    state = state_with(("c1", "[" * 5000 + "]" * 5000))
    [answer] = [i for i in state.items if isinstance(i, ToolResult)]
    assert "nested too deeply" in answer.content


def test_always_with_edited_arguments_is_refused():
    state = state_with(("c1", HUGE))
    why = refusal(state, ask("c1", always=True, arguments={"order": "B7", "amount": 1}))
    assert why.startswith("`always` with edited arguments is refused")


def test_refusals_keep_no_bulk_and_a_held_rejection_carries_none():
    state = state_with(("c1", SMALL))
    bulky = {"order": "A1", "amount": 2, "note": "x" * 10_000}
    decisions.receive_signal(
        state, ask("c1", "reject", arguments=bulky), model_call_pending=False, now=T0
    )
    assert state.refused_decisions[-1].arguments is None
    decisions.receive_signal(
        state, ask("c9", "reject", arguments=bulky), model_call_pending=True, now=T0
    )
    assert state.held_decisions == [] and state.refused_decisions[-1].arguments is None


def test_a_decision_bound_to_one_call_does_not_run_another_with_its_id():
    state = state_with(("c1", SMALL))
    decisions.apply(state, ask("c1", arguments_sha256=digest(SMALL)), via="update", now=T0)
    reply = next(i for i in state.items if isinstance(i, loop.AssistantMessage))
    twin = reply.tool_calls[0].model_copy(update={"arguments": HUGE})
    assert not decisions.approves(decisions.decided(state)["c1"], twin)
    assert decisions.approves(decisions.decided(state)["c1"], reply.tool_calls[0])
