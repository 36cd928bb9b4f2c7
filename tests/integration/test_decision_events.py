"""Run events and webhooks of decisions and steering (issues 45 and 48), against the real
dev server, a real worker, the scripted HTTP model and a real webhook receiver that
verifies every delivery: an answer's `approval_decided` carries its `result`; an
interrupted turn is an `interrupted` event on the stream and at the webhook, announced
once, before the calls it withdrew; an agent's own subscription may name it."""

from __future__ import annotations

import dataclasses

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.event_models import RUN_EVENT
from durable_agents.workflows.payloads import AgentInput, AgentResult
from durable_agents.workflows.state import RunStatus
from pydantic import ValidationError

from durable_agents import Agent, AgentClient, WebhookSubscription
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_webhooks import SECRET, endpoint, until
from tests.support import steer_agents
from tests.support.answer_agents import ANSWER_AGENTS
from tests.support.runs import start, wait_for_status
from tests.support.webhook_receiver import WebhookReceiver, in_order

HOLD = Call("hold", {"key": "k1"}, call_id="h1")
EMAIL = Call("send_email", {"to": "ann", "body": "hi"}, call_id="e1")


@pytest.fixture(autouse=True)
def loopback_allowed(monkeypatch):
    monkeypatch.setenv("AGENT_WEBHOOK_ALLOW", "127.0.0.1")


@pytest.fixture
def steering():
    steer_agents.reset()
    yield
    steer_agents.RELEASED.add("*")
    steer_agents.RELEASED.update(steer_agents.STARTED)


def _types(receiver: WebhookReceiver) -> list[str]:
    return [d.event["type"] for d in in_order(receiver.accepted())]


async def test_an_answers_approval_decided_event_carries_its_result(env, model_server):
    asked = Call("ask_refund", {"order_id": "A12"}, call_id="q1")
    model_server.script(Reply(tool_calls=(asked,)), Reply("refunded"))
    answer = {"account": "DE-1", "amount": 12.5, "lines": [{"sku": "s-1", "quantity": 2}]}
    with WebhookReceiver(SECRET) as receiver:
        hooks = {"approvals": endpoint(receiver.url)}
        async with serving(
            env.client, model_server, extra_agents=ANSWER_AGENTS, webhook_endpoints=hooks
        ) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            handle = await worker.client.start_workflow(
                contract.WORKFLOW_TYPE,
                AgentInput(agent="questioner", input="refund A12"),
                id=f"answer-event-{worker.task_queue}",
                task_queue=worker.task_queue,
                result_type=AgentResult,
            )
            await until(lambda: len(receiver.accepted()) >= 1)
            await agents.answer(handle.id, "q1", answer, approver="ann")
            assert (await handle.result()).status is RunStatus.COMPLETED
            await until(lambda: len(receiver.accepted()) >= 3)
            events = [e async for e in agents.events(handle.id, follow=False)]
    [sent] = [d.event for d in receiver.accepted() if d.event["type"] == "approval_decided"]
    [streamed] = [e for e in events if e["type"] == "approval_decided"]
    for decided in (sent, streamed):
        assert (decided["decision"], decided["result"]) == ("answer", answer)
        RUN_EVENT.validate_python(decided)  # the published event model takes it
    assert "result_bytes" not in sent
    assert receiver.unverified == []


async def test_an_interrupted_turn_reaches_the_webhook_before_the_call_it_withdrew(
    env, model_server, steering
):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply("dropped it"))
    with WebhookReceiver(SECRET) as receiver:
        hooks = {"approvals": endpoint(receiver.url)}
        async with serving(
            env.client,
            model_server,
            extra_agents=steer_agents.STEER_AGENTS,
            webhook_endpoints=hooks,
        ) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            handle = await start(worker, "mail ann", agent="steerable", session=True)
            await until(lambda: len(receiver.accepted()) >= 1)
            done = await agents.interrupt(handle.id, by="oncall", reason="not that one")
            assert done.status.status is RunStatus.AWAITING_INPUT
            await until(lambda: len(receiver.accepted()) >= 3)
            events = [e async for e in agents.events(handle.id, follow=False)]
            await agents.end_session(handle.id)
            await until(lambda: "run_finished" in _types(receiver))
    assert _types(receiver) == [
        "approval_requested",
        "interrupted",  # the cause first, then what it withdrew
        "approval_expired",
        "run_finished",
    ]
    sent = next(d.event for d in receiver.accepted() if d.event["type"] == "interrupted")
    assert (sent["via"], sent["by"], sent["reason"]) == ("update", "oncall", "not that one")
    assert [(c["call_id"], c["was"]) for c in sent["calls"]] == [("e1", "awaiting_approval")]
    [streamed] = [e for e in events if e["type"] == "interrupted"]  # announced once
    assert streamed == sent  # the webhook carries the run's own event
    RUN_EVENT.validate_python(sent)
    assert receiver.unverified == []


async def test_an_agent_subscribes_to_interruptions_and_a_made_up_event_is_refused(
    env, model_server, steering
):
    with pytest.raises(ValidationError, match="interrupts"):
        WebhookSubscription(endpoint="ops", events=["interrupts"])
    with pytest.raises(ValidationError):
        WebhookSubscription(endpoint="ops", events=["interrupted", "interrupted; rm -rf /"])
    watched = Agent(
        name="watched",
        instructions="Hold.",
        model="test-model",
        tools=[steer_agents.hold],
        webhooks=[WebhookSubscription(endpoint="ops", events=["interrupted"])],
    )
    model_server.script(Reply(tool_calls=(HOLD,)), Reply("stopped"))
    with WebhookReceiver(SECRET) as receiver:
        only_the_end = dataclasses.replace(
            endpoint(receiver.url, name="ops"), events=("run_finished",)
        )
        hooks = {"ops": only_the_end}
        async with serving(
            env.client, model_server, extra_agents=[watched], webhook_endpoints=hooks
        ) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            handle = await start(worker, "hold it", agent="watched")
            await steer_agents.started("k1")
            await agents.interrupt(handle.id, reason="enough")
            await wait_for_status(handle, RunStatus.INTERRUPTED)
            await until(lambda: _types(receiver) == ["interrupted", "run_finished"])
    [sent, _] = [d.event for d in in_order(receiver.accepted())]
    assert [(c["call_id"], c["was"]) for c in sent["calls"]] == [("h1", "running")]
    assert steer_agents.STOPPED == ["h1"]
