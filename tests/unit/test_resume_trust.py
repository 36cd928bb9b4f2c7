"""A resumed snapshot on the worker's spec, signed or not (`workflows.resume_trust`,
`workflows.snapshot_signature`), without Temporal."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from durable_agents.workflows import decisions, loop, resume_trust, snapshot
from durable_agents.workflows.agent_spec import AgentSpec, ApprovalPolicy, ToolSpec
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    ToolOutcome,
)
from durable_agents.workflows.snapshot_signature import claim_of, verified_by
from durable_agents.workflows.state import RunOrigin, RunState

from tests.support.approver_keys import MALLORY, OPS

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def spec(*, needs_approval: bool = True) -> AgentSpec:
    tool = ToolSpec(
        name="mail",
        description="",
        parameters={"type": "object"},
        needs_approval=needs_approval,
        approval=ApprovalPolicy(),
    )
    return AgentSpec(name="bot", instructions="", model="m", tools=[tool], max_turns=5)


def decided_snapshot() -> RunState:
    """c1 approved with `always` and run; c2 (same arguments) decided by its rule and
    not run yet; as a resumed snapshot of run `src`."""
    state = loop.new_state(spec(), AgentInput(agent="bot", input="hi"), run_id="src", now=T0)
    propose = lambda call_id: loop.record_model_reply(  # noqa: E731
        state,
        ModelReply(tool_calls=[ModelToolCall(call_id=call_id, tool="mail", arguments="{}")]),
        now=T0,
    )
    propose("c1")
    decisions.apply(
        state, DecideInput(call_id="c1", decision="approve", approver="ann", always=True),
        via="update", now=T0,
    )  # fmt: skip
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="c1", content="ok")], now=T0)
    propose("c2")
    assert decisions.decided(state)["c2"].via == "rule"
    state.origin = RunOrigin(run_id="src", turn=2, mode="resume")
    return state


def test_an_unverified_snapshot_keeps_no_decision_on_open_calls_and_no_rule():
    state = resume_trust.reground(decided_snapshot(), spec(), now=T0)
    assert "c2" not in decisions.decided(state)
    assert state.refused_decisions[-1].call_id == "c2"
    assert state.refused_decisions[-1].via == "snapshot"
    assert state.revoked_rules == ["c1"]
    assert isinstance(loop.next_step(state), loop.AwaitDecisions)


def test_a_verified_snapshot_keeps_its_decisions_and_rules():
    state = resume_trust.reground(decided_snapshot(), spec(), now=T0, verified_by="ops-test")
    assert decisions.decided(state)["c2"].via == "rule"
    assert state.revoked_rules == [] and state.origin.verified_by == "ops-test"
    assert isinstance(loop.next_step(state), loop.RunTools)


def test_the_workers_spec_wins_even_over_a_verified_snapshot():
    state = resume_trust.reground(
        decided_snapshot(), spec(needs_approval=False), now=T0, verified_by="ops-test"
    )
    assert "c2" not in decisions.decided(state)  # nobody asks about it any more
    assert "no longer asks" in (state.refused_decisions[-1].refused_because or "")
    assert isinstance(loop.next_step(state), loop.RunTools)


def test_signed_snapshot_round_trip_and_what_breaks_it():
    text = snapshot.dumps(decided_snapshot(), signer=OPS.sign_snapshot)
    document = json.loads(text)
    assert set(document["integrity"]) == {"algorithm", "digest", "signature"}
    assert snapshot.loads(text) == decided_snapshot()  # the digest still checks out anywhere
    assert verified_by(claim_of(document), [OPS.public()], now=T0) == "ops-test"
    assert verified_by(claim_of(document), [MALLORY.public()], now=T0) is None
    expired = OPS.public().model_copy(update={"not_after": datetime(2025, 1, 1, tzinfo=UTC)})
    assert verified_by(claim_of(document), [expired], now=T0) is None
    document["context"] = {"edited": True}
    assert verified_by(claim_of(document), [OPS.public()], now=T0) is None
    assert claim_of({"integrity": {"algorithm": "sha256", "digest": "0" * 64}}) is None


def test_a_malformed_signature_block_is_refused_and_hmac_and_ed25519_do_not_mix():
    document = json.loads(snapshot.dumps(decided_snapshot(), signer=OPS.sign_snapshot))
    document["integrity"]["signature"] = {"key_id": "k", "sig": "short"}
    with pytest.raises(snapshot.SnapshotError, match=r"integrity\.signature"):
        snapshot.loads(json.dumps(document))
    with pytest.raises(snapshot.SnapshotError, match="not both"):
        snapshot.dumps(decided_snapshot(), key=b"k" * 32, signer=OPS.sign_snapshot)


def test_a_call_id_that_names_two_calls_in_a_snapshot_is_answered_never_decided():
    state = decided_snapshot()
    reply = state.items[-2]
    twin = reply.tool_calls[0].model_copy(update={"arguments": '{"amount": 1000000}'})
    reply.tool_calls.append(twin)
    regrounded = resume_trust.reground(state, spec(), now=T0, verified_by="ops-test")
    assert "c2" not in decisions.decided(regrounded)
    answers = [i for i in regrounded.items if getattr(i, "call_id", None) == "c2"]
    assert [a.type for a in answers] == ["tool_result"]
    assert "names more than one call" in answers[0].content
    assert not isinstance(loop.next_step(regrounded), loop.RunTools)


def test_a_call_left_open_in_an_earlier_turn_cannot_be_decided():
    state = decided_snapshot()
    earlier = state.items[1]
    earlier.tool_calls[0].tool = "gone"  # c1, answered: make an unanswered twin of it
    del state.items[2:4]  # its decision and its result
    with pytest.raises(DecisionRefused, match="names no tool of the agent"):
        decisions.check(state, DecideInput(call_id="c1", decision="approve", approver="a"), now=T0)


def test_a_resumed_reply_runs_at_most_its_share_of_calls_and_no_lone_surrogate():
    state = loop.new_state(spec(), AgentInput(agent="bot", input="hi"), run_id="src", now=T0)
    calls = [ModelToolCall(call_id=f"c{n}", tool="mail", arguments="{}") for n in range(66)]
    calls[0] = ModelToolCall(call_id="c0", tool="mail", arguments='{"to": "\\ud800"}')
    loop.record_model_reply(state, ModelReply(tool_calls=calls), now=T0)
    # a snapshot anyone wrote: the reply without the answers a run would have given it
    state.items = [i for i in state.items if i.type != "tool_result"]
    resumed = loop.resume(state, run_id="r2", workflow_run="w2", now=T0)
    regrounded = resume_trust.reground(resumed, spec(), now=T0)
    answered = {i.call_id: i.content for i in regrounded.items if i.type == "tool_result"}
    assert set(answered) == {"c0", "c64", "c65"}
    assert "lone surrogate" in answered["c0"] and "at most 64 tool calls" in answered["c65"]
    assert len(decisions.pending_approvals(regrounded)) == 63
