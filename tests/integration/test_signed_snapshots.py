"""Snapshots signed with a snapshot key the worker holds keep the decisions they carry;
any other snapshot authorises nothing, and a worker can refuse unsigned ones."""

from __future__ import annotations

import asyncio
import hashlib
import json
from datetime import UTC, datetime

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import RunFailed
from durable_agents.workflows import decisions, snapshot
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.payloads import DecideInput
from durable_agents.workflows.state import RunStatus

from durable_agents.signing import Trust, write_key
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support import agents
from tests.support.approver_keys import MALLORY, OPS, WORKER_TRUST
from tests.support.cli_support import bound_to
from tests.support.runs import wait_for_status

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, "call_email")


async def approved_not_run(worker, model_server) -> snapshot.RunState:
    """The state of a run whose call is approved but has not run (as if the worker died
    between the two), taken from a real run."""
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    source = await client.start("assistant", "mail")
    await wait_for_status(worker.client.get_workflow_handle(source.id), RunStatus.AWAITING_APPROVAL)
    state = await source.state()
    await worker.client.get_workflow_handle(source.id).terminate("moved")
    approval = DecideInput(call_id="call_email", decision="approve", approver="ann")
    decisions.apply(state, approval, via="update", now=datetime.now(UTC))
    return state


async def test_a_signed_snapshot_keeps_its_decision_and_the_call_runs_once(worker, model_server):
    state = await approved_not_run(worker, model_server)
    text = snapshot.dumps(state, signer=OPS.sign_snapshot)
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    resumed = await client.resume(text)
    async with asyncio.timeout(30):
        assert (await resumed.result()).final_output == "sent"
    assert [c[0] for c in agents.CALLS] == ["send_email"]
    after = await resumed.state()
    assert after.origin is not None and after.origin.verified_by == "ops-test"
    assert after.refused_decisions == []


def _tampered(text: str) -> str:
    """The signed file with the call's arguments changed and the SHA-256 digest
    recomputed (anyone can), so only the signature can tell."""
    document = json.loads(text)
    [reply] = [i for i in document["items"] if i["type"] == "assistant_message"]
    reply["tool_calls"][0]["arguments"] = json.dumps({"to": "everyone@b.c", "body": "hi"})
    content = {k: v for k, v in document.items() if k != "integrity"}
    document["integrity"]["digest"] = hashlib.sha256(canonical_json(content)).hexdigest()
    return json.dumps(document)


@pytest.mark.parametrize("how", ["tampered", "unknown-key"])
async def test_a_snapshot_that_does_not_verify_keeps_no_decision(worker, model_server, how):
    state = await approved_not_run(worker, model_server)
    if how == "tampered":
        text = _tampered(snapshot.dumps(state, signer=OPS.sign_snapshot))
    else:
        text = snapshot.dumps(state, signer=MALLORY.sign_snapshot)
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    resumed = await client.resume(text)
    await wait_for_status(
        worker.client.get_workflow_handle(resumed.id), RunStatus.AWAITING_APPROVAL
    )
    after = await resumed.state()
    assert after.origin is not None and after.origin.verified_by is None
    assert after.refused_decisions[-1].via == "snapshot"
    assert agents.CALLS == []
    await resumed.cancel()


async def test_a_worker_can_refuse_snapshots_that_do_not_verify(env, worker, model_server):
    state = await approved_not_run(worker, model_server)
    strict = Trust(
        approver_keys=WORKER_TRUST.approver_keys,
        snapshot_keys=WORKER_TRUST.snapshot_keys,
        refuse_unverified_snapshots=True,
    )
    async with serving(env.client, model_server, trust=strict) as running:
        client = AgentClient(running.client, task_queue=running.task_queue)
        unsigned = await client.resume(snapshot.dumps(state))
        with pytest.raises(RunFailed, match="resumes only snapshots signed with one of its"):
            async with asyncio.timeout(30):
                await unsigned.result()
        signed = await client.resume(snapshot.dumps(state, signer=OPS.sign_snapshot))
        async with asyncio.timeout(30):
            assert (await signed.result()).final_output == "sent"


async def test_agentctl_exports_signed_and_resumes_verified(worker, model_server, tmp_path):
    ctl = bound_to(worker)
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    source = await client.start("assistant", "mail")
    await wait_for_status(worker.client.get_workflow_handle(source.id), RunStatus.AWAITING_APPROVAL)
    key, exported = tmp_path / "ops.key", tmp_path / "run.json"
    write_key(OPS, key)
    out = await ctl("export", source.id, "--sign-key", str(key), "-o", str(exported))
    assert out.code == 0, out.stderr
    verdict = await ctl("validate", str(exported))
    assert "(signed with Ed25519 key 'ops-test': verified by the worker that resumes it)" in (
        verdict.stdout
    )
    await worker.client.get_workflow_handle(source.id).terminate("moved")
    started = await ctl("resume", str(exported), "--json")
    resumed = client.run(started.json()["run_id"])
    await wait_for_status(
        worker.client.get_workflow_handle(resumed.id), RunStatus.AWAITING_APPROVAL
    )
    assert (await resumed.state()).origin.verified_by == "ops-test"
    await resumed.decide("call_email", "approve", approver="ann")
    async with asyncio.timeout(30):
        assert (await resumed.result()).final_output == "sent"


async def test_a_worker_built_with_strict_sandbox_settings_refuses_bad_signatures_and_lives(
    env, model_server
):
    """A worker whose sandbox re-imports `cryptography` (its own sandbox settings, or
    the Replayer's): a tampered snapshot and a tampered signed decision are refused;
    the worker process lives on (it used to abort on the first failed verification).
    AgentWorkflow now runs outside the sandbox whatever the settings; this keeps the
    worker built with a strict one working as before."""
    from durable_agents.activities.registry import AgentRegistry
    from openai import AsyncOpenAI

    from durable_agents.worker import build_worker
    from tests.support.approver_keys import ALICE

    model = AsyncOpenAI(base_url=model_server.base_url, api_key="test", max_retries=0)
    strict = build_worker(
        env.client,
        registry=AgentRegistry.from_modules(["tests.support.agents"]),
        model_client=model,
        task_queue="strict-sandbox",
        sandbox_passthrough=("durable_agents",),
        trust=WORKER_TRUST,
    )
    async with strict:
        running = type("W", (), {"client": env.client, "task_queue": "strict-sandbox"})
        state = await approved_not_run(running, model_server)
        client = AgentClient(env.client, task_queue="strict-sandbox")
        resumed = await client.resume(_tampered(snapshot.dumps(state, signer=OPS.sign_snapshot)))
        handle = env.client.get_workflow_handle(resumed.id)
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        [pending] = await resumed.pending()
        forged = ALICE.sign(
            {
                "call_id": pending.call_id,
                "decision": "approve",
                "approver": "alice",
                "run_id": resumed.id,
                "execution_id": pending.execution_id,
                "arguments_sha256": pending.arguments_sha256,
                "expires_at": "2099-01-01T00:00:00Z",
            }
        )
        forged["reason"] = "added after signing"
        await handle.signal("approve", forged)
        refusal = (await resumed.state()).refused_decisions[-1].refused_because
        assert "does not verify" in refusal
        await resumed.reject(pending.call_id, approver="ann")
        async with asyncio.timeout(30):
            assert (await resumed.result()).status is RunStatus.COMPLETED
    await model.close()


async def test_a_context_overlay_merges_and_asks_the_snapshots_decisions_again(
    worker, model_server
):
    state = await approved_not_run(worker, model_server)
    state.context = {"tenant": "acme", "limits": {"max": 5, "currency": "EUR"}}
    text = snapshot.dumps(state, signer=OPS.sign_snapshot)  # verifies: its decision counts
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    overlay = {"limits": {"max": 10}, "user": "u2"}
    resumed = await client.resume(text, context=overlay)
    await wait_for_status(
        worker.client.get_workflow_handle(resumed.id), RunStatus.AWAITING_APPROVAL
    )
    after = await resumed.state()
    assert after.context == {
        "tenant": "acme",
        "limits": {"max": 10, "currency": "EUR"},
        "user": "u2",
    }
    # The approval was given under the old context: it is asked again, not run.
    assert after.origin is not None and after.origin.verified_by is None
    assert after.refused_decisions[-1].via == "snapshot" and agents.CALLS == []
    await client.approve(resumed.id, "call_email", approver="ann")
    async with asyncio.timeout(30):
        assert (await resumed.result()).final_output == "sent"


async def test_a_snapshot_of_a_completed_run_resumes_to_its_result_running_nothing(
    worker, model_server
):
    model_server.script(Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)), Reply("3"))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    source = await client.start("assistant", "add")
    async with asyncio.timeout(30):
        await source.result()
    calls, requests = list(agents.CALLS), len(model_server.requests)
    resumed = await client.resume(await client.export(source.id))
    async with asyncio.timeout(30):
        result = await resumed.result()
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "3")
    assert agents.CALLS == calls and len(model_server.requests) == requests  # nothing ran
    events = await worker.client.get_workflow_handle(resumed.id).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled == ["describe_agent"]  # the worker's agent, and nothing else
