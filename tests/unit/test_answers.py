"""Answers to external tools' calls, and short ids, without Temporal."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import decisions, limits, loop, short_ids, tree_approvals
from durable_agents.workflows.agent_spec import AgentSpec, ApprovalPolicy, ToolSpec
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelToolCall,
    PendingApproval,
)
from durable_agents.workflows.run_items import Decision, ToolResult
from durable_agents.workflows.state import RunState
from durable_agents.workflows.tree_payloads import SubRunReport

from durable_agents import tool
from tests.support.answer_agents import ask_refund

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@tool(external=True, needs_approval=ApprovalPolicy(timeout=timedelta(minutes=5)))
def ask_name(question: str) -> str:
    """Ask a person a question."""
    raise AssertionError("never runs")


def spec() -> AgentSpec:
    return AgentSpec(
        name="bot",
        instructions="",
        model="m",
        tools=[
            ask_refund.spec(),
            ask_name.spec(),
            ToolSpec(
                name="refund",
                description="",
                parameters={"type": "object"},
                needs_approval=True,
            ),
        ],
    )


def run_with(*calls: tuple[str, str, str], run_id: str = "r") -> RunState:
    state = loop.new_state(spec(), AgentInput(agent="bot", input="hi"), run_id=run_id, now=T0)
    reply = ModelReply(
        tool_calls=[ModelToolCall(call_id=c, tool=t, arguments=a) for c, t, a in calls]
    )
    loop.record_model_reply(state, reply, now=T0)
    return state


def answer(call_id: str, result: object, **kw: object) -> DecideInput:
    return DecideInput(call_id=call_id, decision="answer", approver="ann", result=result, **kw)


GOOD = {"account": "ACC-1", "amount": 12.5, "lines": [{"sku": "A", "quantity": 2}]}


def test_external_tool_spec_carries_its_answer_schema_and_always_waits() -> None:
    refund = ask_refund.spec()
    assert refund.external and refund.needs_approval and not refund.approval.allow_always
    assert refund.answer_schema is not None
    assert refund.answer_schema["required"] == ["account", "amount"]
    assert ask_name.spec().answer_schema == {"type": "string"}
    assert ask_name.spec().approval.timeout == timedelta(minutes=5)


def test_external_tool_without_return_annotation_is_refused_at_definition() -> None:
    with pytest.raises(TypeError, match="return annotation is the answer's type"):

        @tool(external=True)
        def no_type(q: str):  # type: ignore[no-untyped-def]
            """?"""


def test_external_tool_takes_no_conditions_nor_local() -> None:
    from durable_agents.workflows.agent_spec import ApprovalCondition

    when = ApprovalPolicy(when=[ApprovalCondition(field="q", op="==", value="x")])
    with pytest.raises(ValueError, match="takes no conditions"):
        tool(external=True, needs_approval=when)(_typed)
    with pytest.raises(ValueError, match="takes no local"):
        tool(external=True, local=True)(_typed)
    with pytest.raises(ValueError, match="takes no at_most_once"):  # it never runs at all
        tool(external=True, at_most_once=True)(_typed)
    with pytest.raises(ValueError, match="takes no code rule"):  # every call waits
        tool(external=True, needs_approval=lambda arguments, context: False)(_typed)


def _typed(q: str) -> str:
    """?"""
    return q


def test_pending_answer_call_shows_kind_schema_and_short_id() -> None:
    state = run_with(("c1", "ask_refund", '{"order_id": "o-1"}'), ("c2", "refund", "{}"))
    first, second = decisions.pending_approvals(state)
    assert (first.kind, second.kind) == ("answer", "approval")
    assert first.answer_schema == ask_refund.spec().answer_schema
    assert second.answer_schema is None
    assert first.short_id and second.short_id and first.short_id != second.short_id
    assert all(len(p.short_id or "") <= 8 for p in (first, second))


def test_answer_becomes_the_calls_result_as_json() -> None:
    state = run_with(("c1", "ask_refund", '{"order_id": "o-1"}'))
    recorded = decisions.apply(state, answer("c1", GOOD), via="update", now=T0)
    assert recorded.decision == "answer" and recorded.result == GOOD
    result = [i for i in state.items if isinstance(i, ToolResult)][-1]
    assert json.loads(result.content) == GOOD and not result.is_error
    assert decisions.pending_calls(state) == []
    assert isinstance(loop.next_step(state), loop.CallModel)


def test_string_answer_reaches_the_model_as_it_is() -> None:
    state = run_with(("c1", "ask_name", '{"question": "who?"}'))
    decisions.apply(state, answer("c1", "Ada"), via="signal", now=T0)
    assert [i for i in state.items if isinstance(i, ToolResult)][-1].content == "Ada"


@pytest.mark.parametrize(
    ("result", "why"),
    [
        ({"account": "A"}, "amount"),
        ({"account": "A", "amount": "12"}, "amount: '12' is not of type 'number'"),
        ({**GOOD, "lines": [{"sku": "A", "quantity": "two"}]}, "lines[0].quantity"),
        ([1, 2], "(root)"),
        (None, "(root)"),
    ],
)
def test_answer_not_matching_the_schema_is_refused_with_the_field(result: object, why: str) -> None:
    state = run_with(("c1", "ask_refund", '{"order_id": "o-1"}'))
    with pytest.raises(DecisionRefused, match="does not match the answer schema") as err:
        decisions.check(state, answer("c1", result), now=T0)
    assert why in str(err.value)


def test_answer_to_an_approval_call_and_approval_of_an_answer_call_are_refused() -> None:
    state = run_with(("c1", "ask_refund", '{"order_id": "o-1"}'), ("c2", "refund", "{}"))
    with pytest.raises(DecisionRefused, match="waits for approve or reject, not an answer"):
        decisions.check(state, answer("c2", GOOD), now=T0)
    approve = DecideInput(call_id="c1", decision="approve", approver="ann")
    with pytest.raises(DecisionRefused, match="waits for an answer, not an approval"):
        decisions.check(state, approve, now=T0)
    with pytest.raises(DecisionRefused, match="only an answer carries a `result`"):
        decisions.check(
            state, approve.model_copy(update={"decision": "reject", "result": 1}), now=T0
        )
    missing = DecideInput(call_id="c1", decision="answer", approver="ann")
    with pytest.raises(DecisionRefused, match="must carry its `result`"):
        decisions.check(state, missing, now=T0)


def test_rejecting_an_answer_call_tells_the_model() -> None:
    state = run_with(("c1", "ask_refund", '{"order_id": "o-1"}'))
    reject = DecideInput(call_id="c1", decision="reject", approver="ann", reason="not mine")
    decisions.apply(state, reject, via="signal", now=T0)
    result = [i for i in state.items if isinstance(i, ToolResult)][-1]
    assert result.is_error and "rejected by ann: not mine" in result.content


def test_answer_deadline_rejects_as_for_approvals() -> None:
    state = run_with(("c1", "ask_name", '{"question": "who?"}'))
    assert decisions.expire(state, now=T0 + timedelta(minutes=6)) is None
    last = [i for i in state.items if isinstance(i, Decision)][-1]
    assert (last.decision, last.via) == ("reject", "timeout")


def test_answer_signal_held_never_refused_as_repeat_with_other_result() -> None:
    state = run_with(("c1", "ask_name", '{"question": "who?"}'))
    first = decisions.receive_signal(state, answer("c1", "Ada"), model_call_pending=False, now=T0)
    assert first is not None
    again = decisions.receive_signal(state, answer("c1", "Ada"), model_call_pending=False, now=T0)
    other = decisions.receive_signal(state, answer("c1", "Bob"), model_call_pending=False, now=T0)
    assert again is None and other is None
    assert [r.refused_because for r in state.refused_decisions] == [
        "tool call c1 is already decided (answer by ann)"
    ]


def test_answer_for_a_call_not_yet_proposed_is_refused_not_held() -> None:
    state = run_with()
    decisions.receive_signal(state, answer("later", "x"), model_call_pending=True, now=T0)
    assert state.held_decisions == []
    assert "only a plain rejection is held" in (state.refused_decisions[0].refused_because or "")


def test_huge_and_deep_results_are_refused_by_the_limits() -> None:
    huge = answer("c1", "x" * (limits.MAX_ANSWER_BYTES + 1))
    assert "result:" in (limits.decision_problem(huge) or "")
    deep: object = "x"
    for _ in range(limits.MAX_ANSWER_DEPTH + 1):
        deep = [deep]
    assert "nested" in (limits.decision_problem(answer("c1", deep)) or "")


def test_short_id_decides_the_call_and_is_recorded_under_the_call_id() -> None:
    state = run_with(("call_9f8e7d6c5b4a39281706f5e4", "ask_name", '{"question": "?"}'))
    short = decisions.pending_approvals(state)[0].short_id
    assert short is not None and len(short) == short_ids.LENGTH
    recorded = decisions.apply(state, answer(short, "Ada"), via="signal", now=T0)
    assert recorded.call_id == "call_9f8e7d6c5b4a39281706f5e4"


def test_short_ids_are_stable_across_a_state_round_trip() -> None:
    state = run_with(("c1", "ask_name", '{"question": "?"}'))
    before = decisions.pending_approvals(state)[0].short_id
    again = RunState.model_validate_json(state.model_dump_json())
    assert decisions.pending_approvals(again)[0].short_id == before


def test_short_ids_are_unique_in_a_run_of_many_calls_and_never_a_call_id() -> None:
    state = loop.new_state(spec(), AgentInput(agent="bot", input="hi"), run_id="r", now=T0)
    # 20 replies of 50 calls: 1,000 calls in one run. Ids are unique by construction (a
    # collision derives the next candidate: the test below forces one), so 1,000 show
    # what 10,000 did (12 s: each reply rescans the run) in under 0.1 s.
    for turn in range(20):
        calls = [
            ModelToolCall(call_id=f"c{turn}_{n}", tool="refund", arguments="{}") for n in range(50)
        ]
        loop.record_model_reply(state, ModelReply(tool_calls=calls), now=T0)
        state.items.append(ToolResult(call_id="x", content=""))  # keep going
    every = [c for c in decisions.all_calls(state)]
    shorts = [c.short_id for c in every]
    assert len(set(shorts)) == len(every) == 1_000
    assert not set(shorts) & {c.call_id for c in every}


def test_a_model_call_id_equal_to_an_earlier_short_id_is_renamed() -> None:
    state = run_with(("c1", "ask_name", '{"question": "?"}'))
    short = decisions.pending_approvals(state)[0].short_id
    decisions.apply(state, answer("c1", "Ada"), via="signal", now=T0)
    reply = ModelReply(
        tool_calls=[ModelToolCall(call_id=short or "", tool="refund", arguments="{}")]
    )
    loop.record_model_reply(state, reply, now=T0)
    assert decisions.pending_calls(state)[0].call_id != short


def test_a_collision_in_the_run_derives_the_next_candidate() -> None:
    state = run_with()
    clash = short_ids.derive("r", "b")
    reply = ModelReply(
        tool_calls=[
            ModelToolCall(call_id=clash, tool="refund", arguments="{}"),  # b's first pick
            ModelToolCall(call_id="b", tool="refund", arguments="{}"),
        ]
    )
    loop.record_model_reply(state, reply, now=T0)
    b = next(c for c in decisions.pending_calls(state) if c.call_id == "b")
    assert b.short_id == short_ids.derive("r", "b", 1)


def _tree(children: int, calls_each: int) -> RunState:
    root = run_with(("own", "refund", "{}"), run_id="root")
    for n in range(children):
        child = run_with(
            *[(f"call_{k}", "refund", "{}") for k in range(calls_each)], run_id=f"root/child-{n}"
        )
        report = tree_approvals.report(child, [])
        assert tree_approvals.take_report(root, report, {child.run_id}) is None
    return root


def test_short_ids_are_unique_across_a_tree_of_runs() -> None:
    # 100 calls shown by the root (its own and 99 of 33 children, each with the same
    # call ids: call_0, call_1, call_2): every short id names one call
    root = _tree(33, 3)
    shown = tree_approvals.pending(root)
    assert len(shown) == 100
    assert len({p.short_id for p in shown}) == 100
    assert len({p.call_id for p in shown}) < 100  # call ids repeat across runs
    for p in shown:
        routed = tree_approvals.route(root, p.short_id or "", None)
        assert routed == (None if p.run_id == "root" else p.run_id)


def test_many_trees_never_give_two_calls_one_short_id() -> None:
    seen = 0
    for tree in range(300):  # 300 trees of 101 calls: every short id unique in its tree
        ids = {short_ids.derive(f"t{tree}", "own")}
        for child in range(25):
            for call in range(4):
                ids.add(short_ids.derive(f"t{tree}/child-{child}", f"call_{call}"))
        assert len(ids) == 101
        seen += len(ids)
    assert seen == 30_300


def test_a_short_id_that_names_calls_in_two_runs_is_refused_saying_why() -> None:
    root = _tree(2, 1)
    first, second = (s for s in root.sub_approvals)
    second.short_id = first.short_id  # forced: two runs gave one short id
    with pytest.raises(DecisionRefused, match="names calls in 2 runs") as err:
        tree_approvals.route(root, first.short_id or "", None)
    assert "use the full call id, or name the run" in str(err.value)
    assert tree_approvals.route(root, first.short_id or "", first.run_id) == first.via


def test_report_carries_kind_schema_and_short_id_up() -> None:
    child = run_with(("c1", "ask_refund", '{"order_id": "o"}'), run_id="root/kid")
    root = run_with(run_id="root")
    root.items = root.items[:-1]
    report = tree_approvals.report(child, [])
    assert tree_approvals.take_report(root, report, {"root/kid"}) is None
    shown = tree_approvals.pending(root)[-1]
    assert (shown.kind, shown.short_id) == ("answer", report.pending[0].short_id)
    assert shown.answer_schema == ask_refund.spec().answer_schema


def test_report_with_a_malformed_short_id_is_refused() -> None:
    child = run_with(("c1", "refund", "{}"), run_id="root/kid")
    report = tree_approvals.report(child, [])
    bad = report.pending[0].model_copy(update={"short_id": "NOT-SHORT-ID"})
    hostile = SubRunReport(run_id="root/kid", pending=[PendingApproval(**bad.model_dump())])
    root = run_with(run_id="root")
    assert "short_id" in (tree_approvals.take_report(root, hostile, {"root/kid"}) or "")


def test_a_short_id_stays_through_continue_as_new_and_a_chain_of_resumes() -> None:
    from durable_agents.workflows.snapshot import dumps, loads

    state = run_with(("c1", "ask_name", '{"question": "?"}'), run_id="A")
    first = decisions.pending_approvals(state)[0].short_id
    carried = loop.resume(state, run_id="A", workflow_run="wr-2", now=T0, continue_as_new=True)
    resumed = loop.resume(loads(dumps(carried)), run_id="B", workflow_run="wr-B", now=T0)
    again = loop.resume(loads(dumps(resumed)), run_id="C", workflow_run="wr-C", now=T0)
    for later in (carried, resumed, again):
        [item] = decisions.pending_approvals(later)
        assert (item.call_id, item.short_id, item.kind) == ("c1", first, "answer")
    recorded = decisions.apply(again, answer(first or "", "Ada"), via="update", now=T0)
    assert recorded.call_id == "c1"  # the id people were shown in run A decides it in C


def test_an_old_call_without_a_stored_short_id_gets_the_derived_one() -> None:
    state = run_with(("c1", "refund", "{}"))
    call = decisions.pending_calls(state)[0]
    call.short_id = None  # as a state written before short ids
    assert decisions.pending_approvals(state)[0].short_id == short_ids.derive("r", "c1")
    approve = DecideInput(call_id=short_ids.derive("r", "c1"), decision="approve", approver="a")
    assert decisions.apply(state, approve, via="signal", now=T0).call_id == "c1"


def test_a_short_id_naming_two_calls_of_one_run_is_refused() -> None:
    state = run_with(("c1", "refund", "{}"), ("c2", "refund", "{}"))
    c1, c2 = decisions.pending_calls(state)
    c2.short_id = None
    c1.short_id = short_ids.derive("r", "c2")  # forged: c1's short id is c2's derived one
    approve = DecideInput(call_id=c1.short_id, decision="approve", approver="a")
    with pytest.raises(DecisionRefused, match="names 2 calls of run r"):
        decisions.check(state, approve, now=T0)
