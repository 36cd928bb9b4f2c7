"""Guardrails against the real dev server, worker and scripted model: an input tripwire
stops the run before the model is asked, an output tripwire withholds the output, a
guardrail that fails counts as tripped, and a session checks each new message."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult
from durable_agents.workflows.run_items import GuardrailCheck
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType

from durable_agents import AgentClient, RunFailed
from durable_agents.testing import Reply
from tests.support import agents
from tests.support.agents import RefundDecision
from tests.support.runs import start, state_of, wait_for_status

FINE = json.dumps({"approve": True, "amount": 40, "reason": "ok"})
HUGE = json.dumps({"approve": True, "amount": 5000, "reason": "vip"})


async def finished(handle) -> AgentResult:
    async with asyncio.timeout(30):
        return await handle.result()


async def activities(handle) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


def checks(state) -> list[tuple[str, str, bool]]:
    return [(i.kind, i.name, i.tripped) for i in state.items if isinstance(i, GuardrailCheck)]


async def test_an_input_tripwire_stops_the_run_before_the_model_is_asked(worker, model_server):
    handle = await start(worker, "my password is hunter2, refund me", agent="guarded")
    outcome = await finished(handle)
    assert (outcome.status, outcome.final_output) == (RunStatus.GUARDRAIL_TRIPPED, None)
    assert model_server.requests == []
    state = await state_of(handle)
    assert state.error.type == contract.ERROR_GUARDRAIL_TRIPPED
    assert state.error.message == "input guardrail no_passwords tripped: a password was shared"
    assert checks(state) == [("input", "no_passwords", True)]
    assert [c[0] for c in agents.CALLS] == ["no_passwords"]
    described = (await handle.describe()).raw_description.workflow_execution_info
    status = described.search_attributes.indexed_fields["AgentStatus"].data
    assert json.loads(status) == "guardrail_tripped"
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert "**guardrail_tripped**" in details and "no_passwords tripped" in details


@pytest.mark.history("guardrail_tripped")
async def test_an_output_tripwire_withholds_the_output(worker, model_server, scenario):
    model_server.script(Reply(content=HUGE))
    handle = await start(worker, "refund order 7", agent="guarded")
    scenario.run(handle)
    outcome = await finished(handle)
    assert (outcome.status, outcome.final_output) == (RunStatus.GUARDRAIL_TRIPPED, None)
    assert agents.CALLS[-1][:2] == (
        "refund_cap",
        {"approve": True, "amount": 5000.0, "reason": "vip"},
    )
    state = await state_of(handle)
    assert state.error.message == "output guardrail refund_cap tripped: 5000.0 is over 1000"
    assert checks(state) == [("input", "no_passwords", False), ("output", "refund_cap", True)]
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    with pytest.raises(RunFailed, match="ended guardrail_tripped: output guardrail refund_cap"):
        await client.result(handle.id, output_type=RefundDecision)


async def test_passing_guardrails_cost_one_activity_each(worker, model_server):
    model_server.script(Reply(content=FINE))
    handle = await start(worker, "refund order 7", agent="guarded")
    assert (await finished(handle)).status is RunStatus.COMPLETED
    assert await activities(handle) == [
        contract.ACTIVITY_DESCRIBE_AGENT,
        contract.ACTIVITY_RUN_GUARDRAIL,
        contract.ACTIVITY_CALL_MODEL,
        contract.ACTIVITY_RUN_GUARDRAIL,
    ]
    state = await state_of(handle)
    assert checks(state) == [("input", "no_passwords", False), ("output", "refund_cap", False)]
    assert json.loads(state.final_output)["amount"] == 40


async def test_a_guardrail_that_fails_counts_as_tripped(worker, model_server):
    handle = await start(worker, "boom", agent="guarded")
    assert (await finished(handle)).status is RunStatus.GUARDRAIL_TRIPPED
    state = await state_of(handle)
    assert "input guardrail no_passwords tripped: the guardrail failed:" in state.error.message
    assert "the checker is down" in state.error.message
    assert [c[0] for c in agents.CALLS] == ["no_passwords"] * 3  # its retry policy, then no
    assert model_server.requests == []


async def test_a_session_checks_each_new_message(worker, model_server):
    model_server.script(Reply(content=FINE))
    handle = await start(worker, "refund order 7", agent="guarded", session=True)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "my PASSWORD is x"})
    assert (await finished(handle)).status is RunStatus.GUARDRAIL_TRIPPED
    assert len(model_server.requests) == 1
    assert [c for c in checks(await state_of(handle)) if c[0] == "input"] == [
        ("input", "no_passwords", False),
        ("input", "no_passwords", True),
    ]


async def test_a_message_sent_with_the_start_does_not_hide_the_start_input(worker, model_server):
    # Signal-with-start delivers the input and the message together: each is checked.
    handle = await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="guarded", input="my password is hunter2", session=True),
        id=f"guarded-{uuid.uuid4().hex[:8]}",
        task_queue=worker.task_queue,
        result_type=AgentResult,
        start_signal=contract.SIGNAL_SEND_MESSAGE,
        start_signal_args=[{"content": "hello"}],
    )
    assert (await finished(handle)).status is RunStatus.GUARDRAIL_TRIPPED
    assert model_server.requests == []
    assert checks(await state_of(handle)) == [("input", "no_passwords", True)]
