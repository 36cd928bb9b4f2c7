"""workflows/tree_approvals.py: what a caller keeps of its children's pending calls, and
where a decision for one goes. Pure, no Temporal; the protocol end to end is in
tests/integration/test_tree_approvals.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from durable_agents.workflows import loop, tree_approvals
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import AgentInput, ModelReply, ModelToolCall, PendingApproval
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import SUB_APPROVALS_KEPT, RunState, RunStatus
from durable_agents.workflows.tree_payloads import ForwardedDecision, SubRunReport

from tests.support.multi_agents import lead, mailer

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def lead_state() -> RunState:
    return loop.new_state(lead.spec(), AgentInput(agent="lead", input="go"), run_id="L", now=NOW)


def item(call_id: str, run_id: str, path: list[str] | None = None) -> PendingApproval:
    return PendingApproval(
        call_id=call_id,
        tool="notify",
        arguments='{"to": "ann", "text": "5"}',
        requested_at=NOW,
        run_id=run_id,
        path=path or ["mailer"],
    )


def reported(state: RunState, child: str, *items: PendingApproval) -> None:
    report = SubRunReport(run_id=child, pending=list(items))
    assert tree_approvals.take_report(state, report, {child}) is None


def test_a_childs_report_replaces_what_it_reported_before_and_is_forgotten_when_it_ends():
    state = lead_state()
    reported(state, "L/c1", item("n1", "L/c1"), item("n2", "L/c1"))
    reported(state, "L/c2", item("n1", "L/c2/m1", ["lead", "mailer"]))
    reported(state, "L/c1", item("n2", "L/c1"))
    shown = tree_approvals.pending(state)
    assert [(p.call_id, p.run_id, p.path) for p in shown] == [
        ("n1", "L/c2/m1", ["lead", "lead", "mailer"]),
        ("n2", "L/c1", ["lead", "mailer"]),
    ]
    assert shown[1].args == {"to": "ann", "text": "5"}
    assert tree_approvals.pending_count(state) == 2
    assert tree_approvals.shown_status(state) is RunStatus.AWAITING_APPROVAL
    tree_approvals.forget(state, "L/c2")
    tree_approvals.forget(state, "L/c1")
    assert tree_approvals.pending(state) == [] and state.sub_approvals == []
    assert tree_approvals.shown_status(state) is RunStatus.RUNNING


def test_what_a_run_keeps_of_reports_is_bounded():
    state = lead_state()
    many = [item(f"n{i}", f"L/c{i}") for i in range(50)]
    for child in range(5):
        reported(state, f"L/c{child}", *many)
    assert len(state.sub_approvals) == SUB_APPROVALS_KEPT
    with pytest.raises(ValueError, match="at most 50 items"):
        SubRunReport(run_id="L/c1", pending=[*many, item("x", "L/c1")])


def test_a_report_from_a_run_it_does_not_wait_on_or_with_odd_entries_changes_nothing():
    state = lead_state()
    reported(state, "L/c1", item("n1", "L/c1"))
    before = state.model_copy(deep=True)

    def refusal(child: str, entry: PendingApproval) -> str:
        why = tree_approvals.take_report(
            state, SubRunReport(run_id=child, pending=[item("ok", child), entry]), {"L/c1"}
        )
        assert state == before
        return why or ""

    assert "not a run this run waits on" in refusal("victim", item("n1", "victim"))
    assert "path" in refusal("L/c1", item("n1", "L/c1").model_copy(update={"path": []}))
    assert "at most 200" in refusal(
        "L/c1", item("n1", "L/c1").model_copy(update={"tool": "t" * 201})
    )
    naive = item("n1", "L/c1").model_copy(update={"requested_at": datetime(2026, 1, 1)})
    assert "requested_at" in refusal("L/c1", naive)
    forged = item("n1", "L/c1").model_copy(update={"arguments_sha256": "ab" * 32})
    assert "its arguments_sha256 is not its arguments'" in refusal("L/c1", forged)
    assert "call_id" in refusal("L/c1", item("", "L/c1"))


@pytest.mark.parametrize(
    "arguments",
    ["not json", "[1, 2]", '{"a": NaN}', "[" * 50_000 + "]" * 50_000],
    ids=["text", "array", "nan", "nested-past-the-stack"],
)
def test_a_reported_call_whose_arguments_are_no_json_object_is_refused(arguments):
    # Anyone may signal a report in a child's name: a run reports only calls that can
    # wait for a decision, and those have a JSON object for arguments.
    state = lead_state()
    reported(state, "L/c1", item("n1", "L/c1"))
    before = state.model_copy(deep=True)
    odd = item("x1", "L/c1").model_copy(update={"arguments": arguments})
    report = SubRunReport(run_id="L/c1", pending=[odd])
    why = tree_approvals.take_report(state, report, {"L/c1"})
    assert why == "call 'x1': its arguments are not a JSON object" and state == before


def test_a_report_over_the_bounds_a_run_reports_within_is_refused():
    state = lead_state()
    big = item("b1", "L/c1").model_copy(update={"arguments": json.dumps({"to": "x" * 200_000})})
    over = SubRunReport(run_id="L/c1", pending=[big, big.model_copy(update={"call_id": "b2"})])
    why = tree_approvals.take_report(state, over, {"L/c1"})
    assert why == "its calls carry 400020 characters of arguments, over 256000"
    assert state.sub_approvals == []
    within = SubRunReport(run_id="L/c1", pending=[big])
    assert (
        tree_approvals.take_report(
            state,
            within,
            {"L/c1"},
        )
        is None
    )


def test_what_a_caller_shows_of_a_call_below_is_digested_from_its_arguments():
    state = lead_state()
    reported(state, "L/c1", item("n1", "L/c1"))  # reported without a digest
    [shown] = tree_approvals.pending(state)
    assert shown.arguments_sha256 == arguments_sha256({"to": "ann", "text": "5"})


def test_a_report_is_bounded_in_calls_argument_characters_and_answers():
    spec = mailer.spec()
    state = loop.new_state(spec, AgentInput(agent="mailer", input="go"), run_id="L/c1", now=NOW)
    big = item("b1", "L/c1/x").model_copy(update={"arguments": json.dumps({"to": "x" * 200_000})})
    reported(state, "L/c1/x", big, item("s", "L/c1/x"))
    reported(state, "L/c1/y", big.model_copy(update={"call_id": "b2", "run_id": "L/c1/y"}))
    answers = [tree_approvals.refused(f"r{n}", "no") for n in range(60)]
    sent = tree_approvals.report(state, answers)
    assert [p.call_id for p in sent.pending] == ["b1", "s"]  # b2 shows on the run itself
    assert len(sent.answers) == tree_approvals.ANSWERS_PER_REPORT
    cut = tree_approvals.refused("r", "why " * 2_000).refused or ""
    assert len(cut) == tree_approvals.MAX_ANSWER_CHARS and cut.endswith("…")


def test_a_decision_goes_to_the_child_that_reported_its_call_and_an_ambiguous_one_nowhere():
    state = lead_state()
    assert tree_approvals.route(state, "n1", None) is None  # nothing below: its own checks
    reported(state, "L/c1", item("n1", "L/c1"), item("g1", "L/c1/x", ["mailer", "mailer"]))
    reported(state, "L/c2", item("n1", "L/c2"))
    assert tree_approvals.route(state, "g1", None) == "L/c1"
    assert tree_approvals.route(state, "g1", "L/c1/x") == "L/c1"  # a grandchild: via c1
    assert tree_approvals.route(state, "n1", "L/c2") == "L/c2"
    assert tree_approvals.route(state, "zz", None) is None  # unknown: its own checks refuse
    assert tree_approvals.route(state, "n1", "L") is None  # names this run
    with pytest.raises(DecisionRefused, match="waits in 2 runs below run L"):
        tree_approvals.route(state, "n1", None)
    with pytest.raises(DecisionRefused, match="no call n1 waits in run L/c9"):
        tree_approvals.route(state, "n1", "L/c9")


def test_a_runs_own_pending_call_comes_before_a_childs_with_the_same_id():
    state = lead_state()
    reply = ModelReply(
        tool_calls=[ModelToolCall(call_id="n1", tool="researcher", arguments='{"input": "x"}')]
    )
    loop.record_model_reply(state, reply, now=NOW)
    reported(state, "L/c1", item("n1", "L/c1"))
    assert tree_approvals.route(state, "n1", None) == "L/c1"  # its own n1 waits for nothing
    state.items[-1].tool_calls[0].needs_approval = True  # now it waits
    assert tree_approvals.route(state, "n1", None) is None
    assert tree_approvals.route(state, "n1", "L/c1") == "L/c1"


def test_what_a_child_reports_is_its_own_calls_then_those_below_it_and_nothing_once_ended():
    spec = mailer.spec()
    state = loop.new_state(spec, AgentInput(agent="mailer", input="go"), run_id="L/c1", now=NOW)
    reply = ModelReply(
        tool_calls=[
            ModelToolCall(call_id="n1", tool="notify", arguments='{"to": "a", "text": "b"}')
        ]
    )
    loop.record_model_reply(state, reply, now=NOW)
    reported(state, "L/c1/x", item("g1", "L/c1/x"))
    assert tree_approvals.key(state) == (("L/c1", "n1"), ("L/c1/x", "g1"))
    sent = tree_approvals.report(state, [])
    assert [(p.call_id, p.path) for p in sent.pending] == [
        ("n1", ["mailer"]),
        ("g1", ["mailer", "mailer"]),
    ]
    state.status = RunStatus.CANCELLED
    assert tree_approvals.key(state) == ()


def test_a_decision_passed_down_reads_as_the_update_reads_it_or_says_why_not():
    sent = {"call_id": "n1", "decision": "approve", "approver": "ann", "reason": "ok"}
    request = tree_approvals.decision_of(ForwardedDecision(ref="r", decision=sent))
    assert not isinstance(request, str)
    assert request.model_fields_set == set(sent)  # a signature covers exactly these
    bad = tree_approvals.decision_of(
        ForwardedDecision(ref="r", decision={"call_id": "n1", "decision": "maybe"})
    )
    assert isinstance(bad, str) and "decision" in bad and "approver" in bad
