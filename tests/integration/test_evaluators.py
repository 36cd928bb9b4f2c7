"""Auto-decisions within limits (`ApprovalPolicy(evaluator=...,
auto_approve_within=...)`), against the real dev server, a real worker and the scripted
HTTP model: an evaluator approves within its limits, escalates above them, escalates
when it fails or times out, loses to a person who decides first, is never asked where
a signature is required; an agent evaluator is a model call counted in the run's usage.
Nothing sent from outside passes for an evaluator's decision."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import pytest
from durable_agents.activities.evaluate import Verdict
from durable_agents.workflows import contract
from durable_agents.workflows.agent_spec import ModelSettings
from durable_agents.workflows.payloads import AgentInput, AgentResult, DecisionSignal
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunState, RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowQueryFailedError, WorkflowUpdateFailedError

from durable_agents import Agent, ApprovalCondition, ApprovalPolicy, tool
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_activity_gate import (
    cli,
    running_activity,
    standalone,
)
from tests.support.cli_support import bound_to
from tests.support.runs import state_of, wait_for_status

RAN: list[float] = []
ASKED: list[float] = []
RELEASE = asyncio.Event()
WITHIN = [ApprovalCondition(field="amount", op="<=", value=100)]


async def screen(arguments: dict, context) -> Verdict:
    """Approves every refund; amount 7 breaks it, 13 makes it wait for RELEASE (then
    it rejects), 21 makes it hang past its timeout (until RELEASE)."""
    amount = arguments["amount"]
    ASKED.append(amount)
    if amount == 7:
        raise RuntimeError("the ledger is down")
    if amount == 13:
        await RELEASE.wait()
        return Verdict(decision="reject", reason="too late to matter")
    if amount == 21:  # past its 1 s timeout, until the test is over (RELEASE at teardown)
        await asyncio.wait_for(RELEASE.wait(), 60)
    return Verdict(decision="approve", reason=f"a routine refund of {amount}")


def _refund(order: str, amount: float) -> str:
    RAN.append(amount)
    return f"refunded {amount}"


def _policy(**extra) -> ApprovalPolicy:
    return ApprovalPolicy(evaluator=screen, auto_approve_within=WITHIN, **extra)


refund = tool(name="refund", needs_approval=_policy())(_refund)
hasty_refund = tool(name="refund", needs_approval=_policy(evaluator_timeout=timedelta(seconds=1)))(
    _refund
)
signed_refund = tool(name="refund", needs_approval=_policy(require_signature=True))(_refund)
screener = Agent(
    name="refund_screener",
    instructions="You screen refunds for a shop.",
    model="screen-model",
    tools=[],
)
agent_refund = tool(
    name="refund",
    needs_approval=ApprovalPolicy(evaluator=screener, auto_approve_within=WITHIN),
)(_refund)
AGENTS = [
    Agent(name=name, instructions="Refund what is asked.", model="m", tools=[t])
    for name, t in (
        ("screened", refund),
        ("hasty", hasty_refund),
        ("signed", signed_refund),
        ("agent_screened", agent_refund),
    )
]


@pytest.fixture
async def screened(env, model_server):
    RAN.clear()
    ASKED.clear()
    RELEASE.clear()
    async with serving(env.client, model_server, extra_agents=AGENTS) as running:
        try:
            yield running
        finally:  # an evaluator no run waits for any more ends before its worker stops
            RELEASE.set()
    RELEASE.set()


async def _start(worker, agent: str, amount: float):
    """Start `agent` (`amount` is what the test's script has the model ask for)."""
    return await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent=agent, input="refund please"),
        id=f"eval-{uuid.uuid4().hex[:10]}",
        task_queue=worker.task_queue,
        result_type=AgentResult,
    )


def _script(model_server, amount: float, *evaluator_replies: Reply) -> None:
    model_server.script(
        Reply(tool_calls=(Call("refund", {"order": "A1", "amount": amount}, "r1"),)),
        *evaluator_replies,
        Reply(content="done"),
    )


async def _evaluated(handle, timeout: float = 30) -> RunState:
    async with asyncio.timeout(timeout):
        while True:
            try:
                state = await state_of(handle)
            except WorkflowQueryFailedError:  # the run is still starting
                state = None
            if state is not None and state.evaluations:
                return state
            await asyncio.sleep(0.1)


def _decision(state: RunState) -> Decision:
    return next(i for i in state.items if isinstance(i, Decision))


async def _activities(handle) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def test_an_evaluator_approves_a_call_within_its_limits(screened, model_server):
    _script(model_server, 50)
    handle = await _start(screened, "screened", 50)
    assert (await handle.result()).status is RunStatus.COMPLETED
    state = await state_of(handle)
    decision = _decision(state)
    assert (decision.decision, decision.via, decision.reason) == (
        "approve",
        "evaluator",
        "a routine refund of 50",
    )
    assert decision.approver == f"evaluator:{__name__}.screen"
    [evaluation] = state.evaluations
    assert (evaluation.verdict, evaluation.outcome) == ("approve", "decided")
    assert RAN == [50]
    assert await _activities(handle) == [
        contract.ACTIVITY_DESCRIBE_AGENT,
        contract.ACTIVITY_CALL_MODEL,
        contract.ACTIVITY_EVALUATE_CALL,
        contract.ACTIVITY_RUN_TOOL,
        contract.ACTIVITY_CALL_MODEL,
    ]


async def test_agentctl_state_shows_how_the_evaluator_decided(screened, model_server):
    _script(model_server, 50)
    handle = await _start(screened, "screened", 50)
    await handle.result()
    ctl = bound_to(screened)
    shown = await ctl("state", handle.id, "--json")
    assert shown.code == 0, shown.stderr
    data = json.loads(shown.stdout)
    [decision] = [i for i in data["items"] if i["type"] == "decision"]
    assert (decision["via"], decision["reason"]) == ("evaluator", "a routine refund of 50")
    assert data["evaluations"][0]["outcome"] == "decided"
    text = await ctl("state", handle.id)
    assert "(by the policy's evaluator)" in text.stdout
    assert f"evaluator {__name__}.screen on r1: decided (said approve" in text.stdout


async def test_an_approval_above_the_limits_escalates_to_a_person(screened, model_server):
    _script(model_server, 500)
    handle = await _start(screened, "screened", 500)
    state = await _evaluated(handle)
    [evaluation] = state.evaluations
    assert (evaluation.verdict, evaluation.outcome) == ("approve", "escalated")
    assert "outside auto_approve_within: amount must be <= 100 (is 500)" in evaluation.reason
    assert not any(isinstance(i, Decision) for i in state.items) and RAN == []
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="r1", approver="ann"))
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert _decision(await state_of(handle)).via == "signal" and RAN == [500]


@pytest.mark.parametrize(
    ("agent", "amount", "why"),
    [
        ("screened", 7, "the evaluator raised RuntimeError: the ledger is down"),
        ("hasty", 21, "the evaluator did not answer within 0:00:01: a person decides"),
    ],
)
async def test_an_evaluator_that_fails_or_times_out_escalates(
    screened, model_server, agent, amount, why
):
    _script(model_server, amount)
    handle = await _start(screened, agent, amount)
    state = await _evaluated(handle)
    [evaluation] = state.evaluations
    assert (evaluation.verdict, evaluation.outcome, evaluation.reason) == (
        None if agent == "hasty" else "escalate",
        "escalated",
        why,
    )
    assert (await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)).pending_approvals == 1
    assert RAN == []
    await handle.terminate("test over")


async def test_a_person_who_decides_first_wins_over_the_evaluator(screened, model_server):
    _script(model_server, 13)
    handle = await _start(screened, "screened", 13)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="r1", approver="ann"))
    assert (await handle.result()).status is RunStatus.COMPLETED  # without the evaluator
    state = await state_of(handle)
    assert RAN == [13]
    decision = _decision(state)
    assert (decision.decision, decision.via, decision.approver) == ("approve", "signal", "ann")
    [evaluation] = state.evaluations  # it was still thinking: its answer is not waited for
    assert (evaluation.verdict, evaluation.outcome) == (None, "ignored")
    assert evaluation.reason == "its answer was not waited for; ann decided first"
    assert [d.call_id for d in state.items if isinstance(d, Decision)] == ["r1"]


async def test_a_policy_that_requires_a_signature_is_never_given_to_the_evaluator(
    screened, model_server
):
    _script(model_server, 5)
    handle = await _start(screened, "signed", 5)
    state = await _evaluated(handle)
    [evaluation] = state.evaluations
    assert evaluation.outcome == "escalated" and evaluation.verdict is None
    assert "requires a signed decision" in evaluation.reason
    assert contract.ACTIVITY_EVALUATE_CALL not in await _activities(handle)
    await handle.terminate("test over")


async def test_an_agent_evaluator_is_a_model_call_counted_in_the_run(screened, model_server):
    _script(model_server, 40, Reply(content='{"decision": "approve", "reason": "small"}'))
    handle = await _start(screened, "agent_screened", 40)
    assert (await handle.result()).status is RunStatus.COMPLETED
    state = await state_of(handle)
    [evaluation] = state.evaluations
    assert (evaluation.kind, evaluation.outcome, evaluation.reason) == ("agent", "decided", "small")
    assert evaluation.usage is not None and evaluation.usage.total_tokens == 15
    assert state.usage.model_calls == 3 and state.usage.total_tokens == 45
    history = await handle.fetch_history()
    mine = _evaluator_events(history)
    size = sum(e.ByteSize() for e in history.events if e.event_id in mine)
    assert len(mine) == 3  # one activity: scheduled (with the model request), started, done
    print(f"agent evaluate_call: {size} of {sum(e.ByteSize() for e in history.events)} bytes")
    asked = model_server.requests[1]
    assert asked["model"] == "screen-model"
    assert asked["messages"][0]["content"] == "You screen refunds for a shop."
    assert '"amount": 40' in asked["messages"][1]["content"]
    assert RAN == [40]


async def test_an_agent_evaluator_that_writes_no_verdict_escalates(screened, model_server):
    _script(model_server, 40, Reply(content="Sure, looks fine to me!"))
    handle = await _start(screened, "agent_screened", 40)
    state = await _evaluated(handle)
    [evaluation] = state.evaluations
    assert evaluation.outcome == "escalated"
    assert evaluation.reason.startswith("the evaluator's reply is not a verdict")
    await handle.terminate("test over")


async def test_a_signal_or_update_cannot_pass_for_the_evaluator(screened, model_server):
    """Hostile: an approver who names themselves the evaluator is recorded as who they
    are (`via: signal`), and an update that says `via: evaluator` is refused."""
    _script(model_server, 13)
    handle = await _start(screened, "screened", 13)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(
            contract.UPDATE_DECIDE,
            {"call_id": "r1", "decision": "approve", "approver": "x", "via": "evaluator"},
            result_type=Decision,
        )
    forged = {"call_id": "r1", "approver": f"evaluator:{__name__}.screen", "reason": "ok"}
    await handle.signal(contract.SIGNAL_APPROVE, forged)
    assert (await handle.result()).status is RunStatus.COMPLETED
    decision = _decision(await state_of(handle))
    assert decision.via == "signal"  # how it came, whatever name it gives
    RELEASE.set()


async def test_the_evaluator_adds_one_activity_per_call(screened, model_server):
    """The figure in the docs: a call an evaluator approves costs one `evaluate_call`
    activity more than one a person approves (measured from the two histories)."""
    _script(model_server, 50)
    by_evaluator = await _start(screened, "screened", 50)
    await by_evaluator.result()
    _script(model_server, 500)
    by_person = await _start(screened, "screened", 500)
    await _evaluated(by_person)
    await by_person.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="r1", approver="a"))
    await by_person.result()
    one, other = await _activities(by_evaluator), await _activities(by_person)
    assert one == other  # the person's run asked the evaluator too (it escalated)
    assert one.count(contract.ACTIVITY_EVALUATE_CALL) == 1
    for handle in (by_evaluator, by_person):
        history = await handle.fetch_history()
        mine = _evaluator_events(history)
        size = sum(e.ByteSize() for e in history.events if e.event_id in mine)
        total = sum(e.ByteSize() for e in history.events)
        assert len(mine) == 3 and 0 < size < total  # scheduled, started, completed
        print(f"evaluate_call: {len(mine)} events, {size} of {total} history bytes")


def _evaluator_events(history) -> set[int]:
    scheduled = {
        e.event_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name
        == contract.ACTIVITY_EVALUATE_CALL
    }
    ids = set(scheduled)
    for e in history.events:
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            if e.activity_task_started_event_attributes.scheduled_event_id in scheduled:
                ids.add(e.event_id)
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            if e.activity_task_completed_event_attributes.scheduled_event_id in scheduled:
                ids.add(e.event_id)
    return ids


@pytest.mark.history("approval_rules")
async def test_a_code_rule_and_an_evaluator_together(env, model_server, scenario):
    """The recorded history's scenario: the rule asks for Oakland, not Paris; the
    evaluator approves the Oakland call within its limits; nobody else is asked."""
    from tests.support.rule_agents import ruled

    model_server.script(
        Reply(
            tool_calls=(
                Call("get_weather", {"city": "Oakland, USA"}, "w1"),
                Call("get_weather", {"city": "Paris"}, "w2"),
            )
        ),
        Reply(content="done"),
    )
    async with serving(env.client, model_server, extra_agents=[ruled]) as worker:
        handle = await _start(worker, "ruled", 0)
        scenario.run(handle)
        async with asyncio.timeout(60):
            assert (await handle.result()).status is RunStatus.COMPLETED
        state = await state_of(handle)
    assert [(d.call_id, d.via) for d in state.items if isinstance(d, Decision)] == [
        ("w1", "evaluator")
    ]


async def test_a_standalone_evaluate_call_is_refused_and_the_evaluator_never_runs(screened):
    """Hostile: anyone who may start work in the namespace runs `evaluate_call` directly
    (the `temporal` CLI): the gate refuses it, the evaluator is never asked."""
    request = {
        "run_id": "run-x",
        "agent": "screened",
        "tool": "refund",
        "call_id": "r1",
        "arguments": json.dumps({"order": "A1", "amount": 13}),
        "evaluator": {"kind": "function", "name": f"{__name__}.screen"},
    }
    out = await standalone(screened, contract.ACTIVITY_EVALUATE_CALL, request)
    assert "evaluate_call refused" in out and "a standalone activity" in out
    assert not ASKED


async def test_a_verdict_completed_from_outside_is_not_taken(screened, model_server):
    """Hostile: the evaluator is thinking; an attacker completes its activity by id with
    an approval: the run does not take it, and the call stays undecided."""
    _script(model_server, 13)
    handle = await _start(screened, "screened", 13)
    activity_id = await running_activity(handle, contract.ACTIVITY_EVALUATE_CALL)
    forged = {"verdict": "approve", "reason": "FORGED"}
    code, out = await cli(
        screened, "activity", "complete", "--workflow-id", handle.id,
        "--activity-id", activity_id, "--result", json.dumps(forged),
    )  # fmt: skip
    assert code == 0, out  # the server takes the completion...
    state = await _evaluated(handle)  # ...the run does not: it is audited, a person decides
    [evaluation] = state.evaluations
    assert (evaluation.verdict, evaluation.outcome) == (None, "escalated")
    assert "not taken" in evaluation.reason and "FORGED" not in evaluation.reason
    assert not any(isinstance(i, Decision) for i in state.items) and RAN == []
    assert (await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)).pending_approvals == 1
    await handle.terminate("test over")


async def test_an_agent_evaluator_that_could_pass_the_runs_budget_is_not_asked(
    screened, model_server
):
    """The evaluator's model call is held to the run's token budget as the run's own:
    one that could pass it is not made, and a person decides."""
    _script(model_server, 40)
    handle = await screened.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(
            agent="agent_screened",
            input="refund please",
            token_budget=500,
            model_settings=ModelSettings(max_output_tokens=50),
        ),
        id=f"eval-{uuid.uuid4().hex[:10]}",
        task_queue=screened.task_queue,
        result_type=AgentResult,
    )
    state = await _evaluated(handle)
    [evaluation] = state.evaluations
    assert (evaluation.verdict, evaluation.outcome) == (None, "escalated")
    assert "the evaluator's model call could use up to" in evaluation.reason
    assert "of its budget of 500" in evaluation.reason
    assert len(model_server.requests) == 1  # the run's own call only
    assert contract.ACTIVITY_EVALUATE_CALL not in await _activities(handle)
    await handle.terminate("test over")
