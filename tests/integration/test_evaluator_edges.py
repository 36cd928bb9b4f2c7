"""What is left of auto-decisions (issue 45), against the real dev server, a real worker,
the scripted HTTP model, a real webhook receiver and the gateway: a call an evaluator is
still deciding shows so (`get_pending_approvals`' `evaluating`, `agentctl pending`, the
gateway); an evaluator's decision reaches webhooks as `approval_decided` with
`via: "evaluator"` and leaves the inbox; a run due to continue as new while its evaluator
decides puts the switch off until it answers (the call is neither lost nor asked twice)
and takes an interrupt meanwhile at once."""

from __future__ import annotations

import asyncio
import uuid

import httpx2
import pytest
from durable_agents.activities.evaluate import Verdict
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunStatus

from durable_agents import Agent, AgentClient, ApprovalCondition, ApprovalPolicy, tool
from durable_agents.testing import Call, Reply
from tests.conftest import NO_DRAIN, serving
from tests.integration.test_gateway import READER, bearer, callers, gateway
from tests.integration.test_webhooks import SECRET, endpoint, until
from tests.support.cli_support import bound_to
from tests.support.runs import state_of, wait_for_status
from tests.support.webhook_receiver import WebhookReceiver, in_order

GATE = asyncio.Event()
"""Set: the evaluator answers (until then it decides, as a slow evaluator would)."""
ASKED: list[float] = []
WITHIN = [ApprovalCondition(field="amount", op="<=", value=100)]


async def hold_then_approve(arguments: dict, context) -> Verdict:
    """Approves once `GATE` is set."""
    ASKED.append(arguments["amount"])
    await GATE.wait()
    return Verdict(decision="approve", reason="checked the ledger")


def _refund(order: str, amount: float) -> str:
    return f"refunded {amount}"


refund = tool(
    name="refund",
    needs_approval=ApprovalPolicy(evaluator=hold_then_approve, auto_approve_within=WITHIN),
)(_refund)
AGENTS = [
    Agent(name="held", instructions="Refund what is asked.", model="m", tools=[refund]),
    Agent(
        name="held_relay",
        instructions="Refund what is asked.",
        model="m",
        tools=[refund],
        turns_per_workflow_run=1,  # due to continue as new after its first model call
    ),
]
EVALUATOR = f"{__name__}.hold_then_approve"


@pytest.fixture(autouse=True)
def loopback_allowed(monkeypatch):
    monkeypatch.setenv("AGENT_WEBHOOK_ALLOW", "127.0.0.1")


@pytest.fixture
def gate():
    GATE.clear()
    ASKED.clear()
    yield GATE
    GATE.set()  # an evaluator still waiting ends before its worker stops


def _script(model_server, amount: float) -> None:
    model_server.script(
        Reply(tool_calls=(Call("refund", {"order": "A1", "amount": amount}, "r1"),)),
        Reply(content="done"),
    )


async def _start(worker, agent: str):
    return await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent=agent, input="refund please"),
        id=f"evedge-{uuid.uuid4().hex[:10]}",
        task_queue=worker.task_queue,
        result_type=AgentResult,
    )


async def _evaluating(agents: AgentClient, run_id: str):
    """The pending call, once it shows its evaluator at work."""
    async with asyncio.timeout(30):
        while True:
            pending = await agents.pending(run_id)
            if pending and pending[0].evaluating is not None:
                return pending[0]
            await asyncio.sleep(0.05)


async def test_an_evaluated_call_shows_it_and_its_decision_reaches_webhooks_and_the_inbox(
    env, model_server, gate, tmp_path
):
    _script(model_server, 50)
    with WebhookReceiver(SECRET) as receiver:
        hooks = {"approvals": endpoint(receiver.url)}
        async with (
            serving(env.client, model_server, extra_agents=AGENTS, webhook_endpoints=hooks) as w,
            gateway(w, callers(tmp_path)) as url,
            httpx2.AsyncClient(base_url=url, headers=bearer(READER)) as http,
        ):
            agents = AgentClient(w.client, task_queue=w.task_queue)
            handle = await _start(w, "held")
            asked = await _evaluating(agents, handle.id)
            shown = asked.evaluating
            assert (shown.evaluator, shown.kind) == (EVALUATOR, "function")
            assert shown.since < shown.timeout_at and asked.requested_at <= shown.since
            listed = await bound_to(w)("pending", handle.id)
            assert listed.code == 0, listed.stderr
            assert f"the evaluator {EVALUATOR} (function) decides it since" in listed.stdout
            over_http = (await http.get(f"/runs/{handle.id}/pending")).json()
            assert over_http[0]["evaluating"]["evaluator"] == EVALUATOR

            async def in_inbox() -> list[str]:
                calls = (await http.get("/inbox/calls")).json()["calls"]
                return [c["call_id"] for c in calls if c["run_id"] == handle.id]

            async with asyncio.timeout(30):  # visibility lists the waiting run
                while await in_inbox() != ["r1"]:
                    await asyncio.sleep(0.2)
            await until(lambda: len(receiver.accepted()) >= 1)
            gate.set()
            assert (await handle.result()).status is RunStatus.COMPLETED
            assert await agents.pending(handle.id) == []
            async with asyncio.timeout(30):  # the inbox drops the call
                while await in_inbox() != []:
                    await asyncio.sleep(0.2)
            await until(lambda: len(receiver.accepted()) >= 3)
            kinds = [d.event["type"] for d in in_order(receiver.accepted())]
            assert kinds == ["approval_requested", "approval_decided", "run_finished"]
            decided = in_order(receiver.accepted())[1].event
            assert (decided["call_id"], decided["decision"], decided["via"]) == (
                "r1",
                "approve",
                "evaluator",
            )
            assert decided["approver"] == f"evaluator:{EVALUATOR}"
            assert decided["reason"] == "checked the ledger"
    assert receiver.unverified == []


async def test_a_switch_due_while_the_evaluator_decides_waits_for_it_and_loses_nothing(
    env, model_server, gate
):
    _script(model_server, 50)
    async with serving(env.client, model_server, extra_agents=AGENTS, drain=NO_DRAIN) as worker:
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        handle = await _start(worker, "held_relay")
        await _evaluating(agents, handle.id)
        state = await state_of(handle)
        assert len(state.workflow_runs) == 1  # due to switch, it waits for the evaluator
        assert (await handle.describe()).run_id == handle.result_run_id
        gate.set()
        assert (await handle.result()).status is RunStatus.COMPLETED
        state = await state_of(handle)
        [decision] = [i for i in state.items if isinstance(i, Decision)]
        assert (decision.call_id, decision.via) == ("r1", "evaluator")
        assert ASKED == [50]  # asked once: not again by the next workflow run
        assert [e.outcome for e in state.evaluations] == ["decided"]
        assert len(state.workflow_runs) >= 2  # it did continue as new, after the answer
        events = [e async for e in agents.events(handle.id, follow=False)]
        seq = {e["type"]: e["seq"] for e in events}
        assert seq["approval_decided"] < seq["continued_as_new"] < seq["run_finished"]


async def test_an_interrupt_while_the_evaluator_holds_a_due_switch_is_applied_at_once(
    env, model_server, gate
):
    _script(model_server, 50)
    async with serving(env.client, model_server, extra_agents=AGENTS, drain=NO_DRAIN) as worker:
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        handle = await _start(worker, "held_relay")
        await _evaluating(agents, handle.id)
        done = await agents.interrupt(handle.id, by="oncall", reason="not now")
        assert done.interruption is not None  # applied by this workflow run, not later
        assert [(c.call_id, c.was) for c in done.interruption.calls] == [
            ("r1", "awaiting_approval")
        ]
        await wait_for_status(handle, RunStatus.INTERRUPTED)
        state = await state_of(handle)
        [evaluation] = state.evaluations  # its answer was not waited for
        assert evaluation.outcome == "ignored" and ASKED == [50]
        assert not any(isinstance(i, Decision) for i in state.items)
