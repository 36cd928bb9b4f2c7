"""Answers and short ids through every client: agentctl (pending, answer), the HTTP
gateway's answer route, a webhook's approval request answered by its receiver, and a
sub-agent's question answered through its caller (real server, worker and model)."""

from __future__ import annotations

import asyncio
import json
import shlex

import httpx2
import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunStatus

from durable_agents import Agent, AgentClient
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_gateway import gateway
from tests.integration.test_webhooks import SECRET, endpoint, until
from tests.support.answer_agents import ANSWER_AGENTS, questioner
from tests.support.cli_support import bound_to, error_lines
from tests.support.runs import start, state_of, temporal_cli, wait_for_status
from tests.support.webhook_receiver import WebhookReceiver

GOOD = {"account": "ACC-1", "amount": 12.5, "lines": [{"sku": "A", "quantity": 2}]}
ASK = Call("ask_refund", {"order_id": "o-1"}, "call_9f8e7d6c5b4a39281706f5e4")
EMAIL = Call("send_email", {"to": "a", "body": "b"}, "e1")


@pytest.fixture
async def asking(env, model_server):
    async with serving(env.client, model_server, extra_agents=ANSWER_AGENTS) as running:
        yield running


async def waiting(worker, model_server, *calls: Call):
    model_server.script(Reply(tool_calls=calls or (ASK,)), Reply(content="done"))
    handle = await start(worker, agent="questioner")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    return handle


def tool_content(model_server, call_id: str) -> str:
    messages = model_server.requests[-1]["messages"]
    return next(m["content"] for m in messages if m.get("tool_call_id") == call_id)


async def test_agentctl_pending_shows_the_question_and_answer_takes_its_short_id(
    asking, model_server
):
    handle = await waiting(asking, model_server, ASK, EMAIL)
    ctl = bound_to(asking)
    shown = await ctl("pending", handle.id)
    assert shown.code == 0, shown.stderr
    assert "SHORT ID" in shown.stdout and "waits for an answer" in shown.stdout
    assert '"required":["account","amount"]' in shown.stdout  # the schema, in full
    items = {p["call_id"]: p for p in (await ctl("pending", handle.id, "--json")).json()}
    short = items[ASK.call_id]["short_id"]
    assert items[ASK.call_id]["kind"] == "answer" and items["e1"]["kind"] == "approval"
    bad_json = await ctl("answer", handle.id, short, "--result", "{account: 1}", "--as", "ann")
    assert bad_json.code == 1
    assert "--result is not valid JSON" in error_lines(bad_json.stderr)[0]
    nested = {**GOOD, "lines": [{"sku": "A", "quantity": "two"}]}
    off = await ctl("answer", handle.id, short, "--result", json.dumps(nested), "--as", "ann")
    assert off.code == 1
    assert "lines[0].quantity: 'two' is not of type 'integer'" in off.stderr
    approving = await ctl("approve", handle.id, short, "--as", "ann")
    assert approving.code == 1 and "waits for an answer, not an approval" in approving.stderr
    to_approval = await ctl("answer", handle.id, "e1", "--result", "1", "--as", "ann")
    assert to_approval.code == 1 and "takes no answer" in to_approval.stderr
    state = await state_of(handle)
    assert state.refused_decisions == [] and not [
        i for i in state.items if isinstance(i, Decision)
    ]  # nothing was sent
    made = await ctl("answer", handle.id, short, "--result", json.dumps(GOOD), "--as", "ann")
    assert made.code == 0, made.stderr
    assert f"answered {ASK.call_id} by ann" in made.stdout and '"account": "ACC-1"' in made.stdout
    rejected = await ctl("reject", handle.id, items["e1"]["short_id"], "--as", "ann")
    assert rejected.code == 0, rejected.stderr  # the signal, its outcome read by short id
    assert "rejected e1 by ann" in rejected.stdout
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert json.loads(tool_content(model_server, ASK.call_id)) == GOOD


async def test_the_gateway_answers_by_short_id_and_refuses_hostile_bodies(asking, model_server):
    handle = await waiting(asking, model_server)
    async with gateway(asking, None) as url, httpx2.AsyncClient(base_url=url, timeout=30) as http:
        [asked] = (await http.get(f"/runs/{handle.id}/pending")).json()
        route = f"/runs/{handle.id}/answers"
        base = {
            "call_id": asked["short_id"],
            "result": GOOD,
            "arguments_sha256": asked["arguments_sha256"],
        }
        hostile = [
            ({k: v for k, v in base.items() if k != "result"}, 400, "result: Field required"),
            ({**base, "decision": "approve"}, 400, "decision: Input should be 'answer'"),
            ({**base, "call_id": ["x"]}, 400, "call_id: Input should be a valid string"),
            ({**base, "result": {"account": 1, "amount": 2}}, 409, "account: 1 is not of type"),
            ({**base, "result": "x" * 40_000}, 409, "result: 40,002 bytes of JSON"),
            ({**base, "call_id": "zzzzzz"}, 409, "no tool call zzzzzz"),
        ]
        for body, code, why in hostile:
            answer = await http.post(route, json=body)
            assert (answer.status_code, why in answer.text) == (code, True), answer.text
        made = await http.post(route, json=base)
        assert made.status_code == 200, made.text
        recorded = made.json()
        assert (recorded["decision"], recorded["call_id"]) == ("answer", ASK.call_id)
        assert recorded["short_id"] == asked["short_id"] and recorded["result"] == GOOD
        assert recorded["sender"] == "gateway:anonymous" or recorded["sender"].startswith(
            "gateway:"
        )
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert json.loads(tool_content(model_server, ASK.call_id)) == GOOD


async def test_a_webhook_question_carries_its_schema_and_is_answered_by_short_id(
    env, model_server, monkeypatch
):
    monkeypatch.setenv("AGENT_WEBHOOK_ALLOW", "127.0.0.1")
    model_server.script(Reply(tool_calls=(ASK,)), Reply(content="done"))
    with WebhookReceiver(SECRET) as receiver:
        hooks = {"approvals": endpoint(receiver.url)}
        async with serving(
            env.client, model_server, extra_agents=ANSWER_AGENTS, webhook_endpoints=hooks
        ) as worker:
            handle = await start(worker, agent="questioner")
            await until(lambda: any(
                d.event["type"] == "approval_requested" for d in receiver.accepted()
            ))  # fmt: skip
            event = next(
                d.event for d in receiver.accepted() if d.event["type"] == "approval_requested"
            )
            assert event["kind"] == "answer" and len(event["short_id"]) <= 8
            assert event["answer_schema"]["required"] == ["account", "amount"]
            how = event["answer"]
            assert "approve" not in how and how["answer"]["signal"] == "answer"
            assert how["update"]["input"]["decision"] == "answer"
            sent = {**how["answer"]["input"], "call_id": event["short_id"], "result": GOOD}
            command = shlex.split(how["temporal_cli"]["answer"])[1:]
            command[command.index("--input") + 1] = json.dumps(sent)  # the receiver's answer
            await temporal_cli(worker, *command)
            assert (await asyncio.wait_for(handle.result(), 30)).status is RunStatus.COMPLETED
            await until(lambda: any(
                d.event["type"] == "approval_decided" for d in receiver.accepted()
            ))  # fmt: skip
            decided = next(
                d.event for d in receiver.accepted() if d.event["type"] == "approval_decided"
            )
            assert (decided["decision"], decided["approver"]) == ("answer", "approvals")
    assert json.loads(tool_content(model_server, ASK.call_id)) == GOOD


lead = Agent(
    name="lead-asker",
    instructions="Delegate refunds.",
    model="test-model",
    tools=[questioner.as_tool(name="ask_questioner", description="Ask the questioner.")],
)


async def test_a_sub_agents_question_is_answered_through_its_caller_by_short_id(env, model_server):
    model_server.script(
        Reply(tool_calls=(Call("ask_questioner", {"input": "refund o-1"}, "q1"),)),
        Reply(tool_calls=(ASK,)),  # the child's first reply: a question
        Reply(content="child done"),
        Reply(content="lead done"),
    )
    async with serving(env.client, model_server, extra_agents=[lead, *ANSWER_AGENTS]) as worker:
        handle = await start(worker, agent="lead-asker")
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        async with asyncio.timeout(30):
            while not (shown := await agents.pending(handle.id)):
                await asyncio.sleep(0.1)
        [item] = shown
        assert item.kind == "answer" and item.run_id != handle.id and item.short_id
        assert item.path == ["lead-asker", "questioner"]
        with pytest.raises(DecisionRefused, match="account: 1 is not of type 'string'"):
            await agents.answer(handle.id, item.short_id, {"account": 1, "amount": 2}, approver="a")
        signal = {"call_id": item.short_id, "approver": "ann", "result": GOOD}
        await handle.signal(contract.SIGNAL_ANSWER, signal)  # to the root, by short id
        assert (await asyncio.wait_for(handle.result(), 30)).status is RunStatus.COMPLETED
    child_request = next(
        r for r in model_server.requests if any(
            m.get("tool_call_id") == ASK.call_id for m in r["messages"]
        )
    )  # fmt: skip
    sent = next(m for m in child_request["messages"] if m.get("tool_call_id") == ASK.call_id)
    assert json.loads(sent["content"]) == GOOD
