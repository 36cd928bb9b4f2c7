"""Resuming a snapshot with the pure loop: origin, continue-as-new, idempotency keys, rules."""

from __future__ import annotations

from durable_agents.workflows import decisions, loop
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    ToolOutcome,
)
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.snapshot import dumps, fork, loads
from durable_agents.workflows.state import ErrorInfo, RunOrigin, RunState, RunStatus

from tests.support.snapshot_golden import T0, at
from tests.unit.test_snapshot_fork import SPEC, USAGE


def _reply(*calls: tuple[str, str]) -> ModelReply:
    proposed = [ModelToolCall(call_id=c, tool=t, arguments="{}") for c, t in calls]
    return ModelReply(tool_calls=proposed, usage=USAGE)


def _waiting(run_id: str = "A") -> RunState:
    """Turn 1 proposed refund c1, which waits for a decision."""
    state = loop.new_state(SPEC, AgentInput(agent="bot", input="refund"), run_id=run_id, now=T0)
    loop.record_model_reply(state, _reply(("c1", "refund")), now=at(1))
    return state


def _moved(state: RunState, run_id: str, seconds: float) -> RunState:
    """Export `state`, then resume the file as run `run_id`."""
    return loop.resume(
        loads(dumps(state)), run_id=run_id, workflow_run=f"wr-{run_id}", now=at(seconds)
    )


def _key(state: RunState, call_id: str) -> str:
    step = loop.next_step(state)
    assert isinstance(step, loop.RunTools), step
    [call] = [c for c in step.calls if c.call_id == call_id]
    return loop.tool_request(state, call).idempotency_key


# --- own id, continue-as-new --------------------------------------------------------------


def test_a_failed_snapshot_resumed_under_its_own_id_runs_again_and_records_its_origin():
    source = _waiting()
    loop.fail(source, ErrorInfo(type="X", message="boom"), now=at(2))
    source.workflow_runs = ["wr-1"]

    resumed = loop.resume(loads(dumps(source)), run_id="A", workflow_run="wr-2", now=at(3))

    assert resumed.status == RunStatus.RUNNING and resumed.error is None
    assert resumed.origin == RunOrigin(run_id="A", turn=1, mode="resume")
    assert resumed.workflow_runs == ["wr-2"]
    assert loop.next_step(resumed) == loop.AwaitDecisions(("c1",))


def test_continue_as_new_carries_the_state_unchanged():
    state = _waiting()
    state.workflow_runs = ["wr-1"]
    carried = loop.resume(state, run_id="A", workflow_run="wr-2", now=at(2), continue_as_new=True)
    assert carried.origin is None and carried.workflow_runs == ["wr-1", "wr-2"]
    assert carried.items == state.items  # no key recorded: the run id did not change


def test_continue_as_new_is_told_apart_from_a_resume_under_the_same_id():
    state = _waiting()
    state.workflow_runs = ["wr-1"]
    continues = loop.is_continue_as_new
    assert continues(state, run_id="A", continued_run_id="wr-1")
    assert not continues(state, run_id="A", continued_run_id=None)  # started by a client
    assert not continues(state, run_id="A", continued_run_id="wr-0")  # a retry, another run's
    assert not continues(state, run_id="B", continued_run_id="wr-1")


# --- idempotency keys ----------------------------------------------------------------------


def test_a_call_keeps_its_first_runs_key_through_a_chain_of_resumes():
    b = _moved(_waiting("A"), "B", 10)
    c = _moved(b, "C", 20)
    d = _moved(c, "D", 30)
    for state in (b, c, d):
        decisions.apply(
            state,
            DecideInput(call_id="c1", decision="approve", approver="ann"),
            via="update",
            now=at(40),
        )
        assert _key(state, "c1") == "A:c1"
    carried = loop.resume(d, run_id="D", workflow_run="wr-D2", now=at(50), continue_as_new=True)
    assert _key(carried, "c1") == "A:c1"


def test_a_call_proposed_after_a_resume_keeps_that_runs_key():
    b = _moved(_waiting("A"), "B", 10)
    approval = DecideInput(call_id="c1", decision="reject", approver="ann")
    decisions.apply(b, approval, via="update", now=at(11))
    loop.record_model_reply(b, _reply(("c2", "lookup")), now=at(12))
    assert _key(b, "c2") == "B:c2"
    c = _moved(b, "C", 20)
    assert _key(c, "c2") == "B:c2"
    assert _key(_moved(c, "D", 30), "c2") == "B:c2"


def test_a_forked_call_keeps_its_source_runs_key():
    source = _waiting("A")
    forked = loop.resume(
        loads(dumps(fork(source, at_turn=1))), run_id="F", workflow_run="wr", now=at(5)
    )
    decisions.apply(
        forked,
        DecideInput(call_id="c1", decision="approve", approver="ann"),
        via="update",
        now=at(6),
    )
    assert _key(forked, "c1") == "A:c1"
    assert _key(_moved(forked, "G", 7), "c1") == "A:c1"


# --- rules ------------------------------------------------------------------------------------


def test_an_always_rule_decides_the_tools_new_calls_after_a_resume():
    source = _waiting("A")
    always = DecideInput(call_id="c1", decision="approve", approver="ann", always=True)
    decisions.apply(source, always, via="update", now=at(2))
    loop.record_tool_outcomes(source, [ToolOutcome(call_id="c1", content="done")], now=at(3))

    resumed = _moved(source, "B", 10)
    loop.record_model_reply(resumed, _reply(("c2", "refund")), now=at(11))

    decision = decisions.decided(resumed)["c2"]
    assert (decision.via, decision.decision, decision.approver) == ("rule", "approve", "ann")
    assert decisions.pending_calls(resumed) == []
    assert _key(resumed, "c2") == "B:c2"
    assert isinstance(loads(dumps(resumed)).items[-1], Decision)
