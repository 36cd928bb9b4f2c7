"""Webhooks (durable_agents.webhooks, workflows.run_events, workflows.webhook_delivery)
against a real local receiver that verifies every delivery with the
`standardwebhooks` library: the approval request's answer, sent back unchanged with
the `temporal` CLI, decides the call; retries on 500 and 429 (Retry-After), none on
404; a receiver down, then up; a rotated secret; the secret never in history."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shlex
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.agent_spec import EVENT_TYPES
from durable_agents.workflows.state import RunStatus

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from durable_agents.webhooks import Endpoint
from tests.conftest import serving
from tests.support.cli_support import bound_to, error_lines
from tests.support.histories import payloads_of
from tests.support.runs import (
    free_port,
    start,
    state_of,
    temporal_cli,
    wait_for_status,
    workflow_task_failures,
)
from tests.support.webhook_receiver import Answer, WebhookReceiver, events_of, in_order

SECRET = "whsec_" + "c2VjcmV0LWtleS1mb3ItdGVzdHMtMDEyMzQ1Njc4OQ=="
NEW_SECRET = "whsec_" + "bmV3LXNlY3JldC1rZXktZm9yLXRlc3RzLTAxMjM0NQ=="
EVERYTHING = EVENT_TYPES
EMAIL = (
    Reply(tool_calls=(Call("send_email", {"to": "ann@example.com", "body": "hi"}, "c1"),)),
    Reply(content="sent"),
)


@pytest.fixture(autouse=True)
def loopback_allowed(monkeypatch):
    monkeypatch.setenv("AGENT_WEBHOOK_ALLOW", "127.0.0.1")


def endpoint(url: str, *secrets: str, name: str = "approvals", **options) -> Endpoint:
    return Endpoint(
        name=name,
        url=url,
        events=EVERYTHING,
        secrets=secrets or (SECRET,),
        first_retry=timedelta(seconds=0.2),
        **options,
    )


async def until(condition, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def seqs_of(worker, run_id: str) -> dict[str, int]:
    """The `seq` of each type of event of the run's event stream (the last of a type).
    If reading them fails, the run's history is kept under $TMPDIR/failed-histories
    for diagnosis (a replay of it shows why, e.g. a nondeterminism)."""
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    try:
        return {e["type"]: e["seq"] async for e in agents.events(run_id, follow=False)}
    except Exception:
        kept = Path(tempfile.gettempdir()) / "failed-histories"
        kept.mkdir(exist_ok=True)
        history = await worker.client.get_workflow_handle(run_id).fetch_history()
        (kept / f"{run_id}.json").write_text(history.to_json())
        raise


@pytest.mark.history("webhooks")
async def test_an_approval_request_reaches_the_receiver_and_its_answer_decides_the_call(
    env, model_server, scenario
):
    model_server.script(*EMAIL)
    with WebhookReceiver(SECRET) as receiver:
        hooks = {"approvals": endpoint(receiver.url)}
        async with serving(env.client, model_server, webhook_endpoints=hooks) as worker:
            handle = await start(worker, "mail ann")
            scenario.run(handle)
            await until(lambda: len(receiver.accepted()) >= 1)
            [asked] = receiver.accepted()
            event = asked.event
            seq = await seqs_of(worker, handle.id)  # a webhook carries the run's own events
            assert (event["seq"], event["type"], event["run_id"]) == (
                seq["approval_requested"],
                "approval_requested",
                handle.id,
            )
            assert (event["call_id"], event["tool"]) == ("c1", "send_email")
            assert event["args"] == {"to": "ann@example.com", "body": "hi"}
            execution = (await state_of(handle)).execution_id
            assert asked.headers["webhook-id"] == f"evt_{execution}_{event['seq']}"
            pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
            assert event["arguments_sha256"] == pending[0]["arguments_sha256"]
            command = event["answer"]["temporal_cli"]["approve"]
            await temporal_cli(worker, *shlex.split(command)[1:])  # sent back unchanged
            result = await asyncio.wait_for(handle.result(), 30)
            assert result.status is RunStatus.COMPLETED
            await until(lambda: len(receiver.accepted()) == 3)
            seq = await seqs_of(worker, handle.id)
            kinds = ("approval_requested", "approval_decided", "run_finished")
            assert events_of(receiver.accepted()) == [
                (f"evt_{execution}_{seq[kind]}", kind) for kind in kinds
            ]
            _, decided, finished = (d.event for d in in_order(receiver.accepted()))
            assert (decided["decision"], decided["approver"]) == ("approve", "approvals")
            assert (finished["status"], finished["final_output"]) == ("completed", "sent")
            history = json.loads((await handle.fetch_history()).to_json())
            [asked_entry] = [
                d
                for d in (await state_of(handle)).webhook_deliveries
                if d.event == "approval_requested"
            ]  # its delivery workflow, by the id the run recorded (nobody computes it)
            child = asked_entry.workflow_id or ""
            assert child.startswith(f"evt_{execution}_{seq['approval_requested']}_approvals~")
            history_of_child = json.loads(
                (await worker.client.get_workflow_handle(child).fetch_history()).to_json()
            )
            scenario.run(worker.client.get_workflow_handle(child), child="delivery")
    for written in (history, history_of_child):  # the payloads themselves, decoded
        payloads = b" ".join(p["data"] for p in payloads_of(written))
        assert SECRET.removeprefix("whsec_").encode() not in payloads
        assert receiver.url.encode() not in payloads and b"127.0.0.1" not in payloads
    assert receiver.unverified == []


async def test_a_delivery_is_retried_on_500_and_429_and_not_on_404_and_each_goes_in_the_state(
    env, model_server
):
    model_server.script(Reply(content="hello"))
    with WebhookReceiver(SECRET) as flaky, WebhookReceiver(SECRET) as gone:
        flaky.answer(Answer(500, body=b"down"), Answer(429, {"Retry-After": "1"}))
        gone.answer(Answer(404, body=b"no such hook"))
        hooks = {
            "approvals": endpoint(flaky.url),
            "old-hook": endpoint(gone.url, name="old-hook"),
        }
        async with serving(env.client, model_server, webhook_endpoints=hooks) as worker:
            handle = await start(worker, "hi")
            assert (await asyncio.wait_for(handle.result(), 30)).status is RunStatus.COMPLETED
            await until(lambda: len(flaky.accepted()) == 1)
            assert [d.status for d in flaky.deliveries] == [500, 429, 200]
            assert len({d.headers["webhook-id"] for d in flaky.deliveries}) == 1  # one id
            assert flaky.deliveries[2].at - flaky.deliveries[1].at >= 1.0  # Retry-After: 1
            await until(lambda: len(gone.deliveries) >= 1)  # its first try has come
            await asyncio.sleep(1.0)  # time for a retry, were there one
            assert [d.status for d in gone.deliveries] == [404]  # not tried again
            deliveries = {d.endpoint: d for d in (await state_of(handle)).webhook_deliveries}
    # the run ended before its deliveries: it was not told, and lost none
    assert flaky.accepted()[0].event["type"] == "run_finished"
    assert set(deliveries) == {"approvals", "old-hook"}


async def test_the_run_records_how_its_deliveries_go(env, model_server):
    """While the run waits for approval, its deliveries report to it: failing with the
    code and next try, delivered; a 404 refused."""
    model_server.script(*EMAIL)
    with WebhookReceiver(SECRET) as flaky, WebhookReceiver(SECRET) as gone:
        flaky.answer(Answer(503, body=b"maintenance"))
        gone.answer(Answer(404))
        hooks = {"approvals": endpoint(flaky.url), "old-hook": endpoint(gone.url, name="old-hook")}
        async with serving(env.client, model_server, webhook_endpoints=hooks) as worker:
            handle = await start(worker, "mail ann")
            await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
            await until(lambda: len(flaky.accepted()) == 1 and len(gone.deliveries) == 1)
            async with asyncio.timeout(30):  # the deliveries' reports reach the run
                while True:
                    state = await state_of(handle)
                    by = {d.endpoint: d for d in state.webhook_deliveries}
                    if {d.status for d in by.values()} >= {"delivered", "refused"}:
                        break
                    await asyncio.sleep(0.05)
            assert (by["approvals"].status, by["approvals"].attempts) == ("delivered", 2)
            assert (by["old-hook"].status, by["old-hook"].code) == ("refused", 404)
            status = await handle.query(contract.QUERY_GET_STATUS)
            assert [w["endpoint"] for w in status["webhooks"]] == ["old-hook"]
            await handle.terminate("done")


@pytest.mark.parametrize("down", [2.0, pytest.param(30.0, marks=pytest.mark.soak)])
async def test_a_receiver_that_is_down_gets_the_event_once_it_is_up(env, model_server, down):
    model_server.script(Reply(content="hello"))
    port = free_port()
    url = f"http://127.0.0.1:{port}/hooks"
    async with serving(
        env.client, model_server, webhook_endpoints={"approvals": endpoint(url)}
    ) as worker:
        handle = await start(worker, "hi")
        await asyncio.wait_for(handle.result(), 30)
        await asyncio.sleep(down)  # attempts fail: connection refused
        with WebhookReceiver(SECRET, port=port) as receiver:
            await until(lambda: len(receiver.accepted()) == 1, timeout=down + 30)
            execution = (await state_of(handle)).execution_id
            finished = (await seqs_of(worker, handle.id))["run_finished"]
            assert receiver.accepted()[0].headers["webhook-id"] == f"evt_{execution}_{finished}"
            await asyncio.sleep(1.0)
            assert len(receiver.deliveries) == 1  # delivered once


async def test_during_a_secret_rotation_both_secrets_verify(env, model_server):
    model_server.script(Reply(content="hello"))
    with WebhookReceiver(SECRET) as old, WebhookReceiver(NEW_SECRET) as new:
        hooks = {
            "a": endpoint(old.url, SECRET, NEW_SECRET, name="a"),
            "b": endpoint(new.url, SECRET, NEW_SECRET, name="b"),
        }
        async with serving(env.client, model_server, webhook_endpoints=hooks) as worker:
            handle = await start(worker, "hi")
            await asyncio.wait_for(handle.result(), 30)
            await until(lambda: len(old.accepted()) == 1 and len(new.accepted()) == 1)
    assert len(old.accepted()[0].headers["webhook-signature"].split(" ")) == 2
    assert old.unverified == [] and new.unverified == []


async def test_agentctl_webhooks_test_sends_a_signed_sample_and_says_what_came_back(
    env, model_server
):
    with WebhookReceiver(SECRET) as receiver:
        receiver.answer(Answer(200), Answer(302, {"Location": "http://example.com/"}))
        hooks = {"approvals": endpoint(receiver.url)}
        async with serving(env.client, model_server, webhook_endpoints=hooks) as worker:
            ctl = bound_to(worker)
            sent = await ctl("webhooks", "test", "approvals")
            assert sent.stdout.strip() == "webhook approvals: delivered, HTTP 200", sent.stderr
            moved = await ctl("webhooks", "test", "approvals")
            assert moved.code == 1 and error_lines(moved.stderr) == [
                "agentctl: error: webhook approvals: refused (not retried), HTTP 302: HTTP "
                "302: redirects are not followed (to http://example.com/)"
            ]
            unknown = await ctl("webhooks", "test", "nope")
            assert unknown.code == 1
            assert "this worker has no webhook endpoint 'nope' (approvals)" in unknown.stderr
    assert [d.event["type"] for d in receiver.deliveries] == ["test", "test"]


async def test_forged_delivery_reports_are_refused_and_recorded(env, model_server):
    """`webhook_delivery` is informational, and anyone who may signal can send one: one
    naming no delivery of the run, or malformed, is refused (recorded), and changes
    nothing."""
    model_server.script(*EMAIL)
    with WebhookReceiver(SECRET) as receiver:
        hooks = {"approvals": endpoint(receiver.url)}
        async with serving(env.client, model_server, webhook_endpoints=hooks) as worker:
            handle = await start(worker, "mail ann")
            await until(lambda: len(receiver.accepted()) == 1)
            await asyncio.sleep(0.3)
            webhook_id = receiver.accepted()[0].headers["webhook-id"]
            report = {
                "endpoint": "approvals",
                "webhook_id": webhook_id,
                "event": "approval_requested",
                "status": "gave_up",
                "attempts": 1,
            }
            for payload in (
                {**report, "webhook_id": "evt_someone-else_1"},
                {**report, "status": "hacked"},
                {**report, "attempts": "1"},
                {**report, "extra": 1},
                "delivered",
                report,  # attempt 1 reported already
                {**report, "attempts": 1_000_000},  # would freeze the record
                {**report, "webhook_id": "evt_x_\u00b2"},  # a digit `int` refuses
            ):
                await handle.signal(contract.SIGNAL_WEBHOOK_DELIVERY, payload)
            state = await state_of(handle)
            refused = [r for r in state.refused_signals if r.signal == "webhook_delivery"]
            assert len(refused) == 8
            assert "no delivery evt_someone-else_1 of this run" in refused[0].refused_because
            assert "attempt 1000000 reported after attempt 1" in refused[6].refused_because
            assert "no delivery evt_x_\u00b2 of this run" in refused[7].refused_because
            assert await workflow_task_failures(handle) == 0
            [delivery] = state.webhook_deliveries
            assert (delivery.status, delivery.attempts) == ("delivered", 1)  # unchanged
            await handle.terminate("done")


async def test_a_worker_is_refused_a_webhook_url_it_may_not_post_to(
    env, model_server, tmp_path, monkeypatch
):
    from durable_agents.plugin import AgentsPluginError

    listed = tmp_path / "webhooks.json"
    listed.write_text(
        '[{"name": "internal", "url": "http://10.1.2.3/hook", "events": ["run_finished"],'
        ' "secret_env": "HOOK_SECRET"}]'
    )
    monkeypatch.setenv("AGENT_WEBHOOKS", str(listed))
    monkeypatch.setenv("HOOK_SECRET", SECRET)
    monkeypatch.delenv("AGENT_WEBHOOK_ALLOW")
    with pytest.raises(AgentsPluginError, match=r"10\.1\.2\.3 is a loopback, private or reserved"):
        async with serving(env.client, model_server, webhook_endpoints=None):
            pass
    monkeypatch.setenv("AGENT_WEBHOOK_ALLOW", "hooks.example.com")
    with pytest.raises(AgentsPluginError, match=r"\(10\.1\.2\.3\) is not in AGENT_WEBHOOK_ALLOW"):
        async with serving(env.client, model_server, webhook_endpoints=None):
            pass


async def test_events_survive_continue_as_new_and_a_cancelled_run_closes_its_approvals(
    env, model_server
):
    """`switcher` continues as new after every model call: the approval requested
    before the switch is decided after it, the webhook ids one series; a run cancelled
    while a call waits tells the approval's endpoint it can no longer be decided."""
    from tests.support.agents import assistant

    switcher = dataclasses.replace(assistant, name="switcher", turns_per_workflow_run=1)
    model_server.script(*EMAIL, *EMAIL)
    with WebhookReceiver(SECRET) as receiver:
        hooks = {"approvals": endpoint(receiver.url)}
        async with serving(
            env.client, model_server, webhook_endpoints=hooks, extra_agents=[switcher]
        ) as worker:
            handle = await start(worker, "mail ann", agent="switcher")
            await until(lambda: len(receiver.accepted()) == 1)
            await handle.signal(contract.SIGNAL_APPROVE, {"call_id": "c1", "approver": "ann"})
            await asyncio.wait_for(handle.result(), 30)
            await until(lambda: len(receiver.accepted()) == 3)
            state = await state_of(handle)
            assert len(state.workflow_runs) > 1  # it did continue as new
            ids = [webhook_id for webhook_id, _ in events_of(receiver.accepted())]
            seq = await seqs_of(worker, handle.id)
            kinds = ("approval_requested", "approval_decided", "run_finished")
            assert ids == [f"evt_{state.execution_id}_{seq[kind]}" for kind in kinds]
            cancelled = await start(worker, "mail ann")
            await until(lambda: len(receiver.accepted()) == 4)
            await cancelled.cancel()
            await until(lambda: len(receiver.accepted()) == 6)
            # two deliveries, each its own workflow: they arrive in either order
            closing = [d.event for d in in_order(receiver.accepted()[4:])]
            assert [e["type"] for e in closing] == ["approval_expired", "run_finished"]
            assert closing[0]["via"] == "run_ended" and closing[1]["status"] == "cancelled"
