"""The approval gate as an authorization boundary: each attack of the issue, driven from
outside (the `temporal` CLI, a raw payload, a separate agentctl process) against the real
dev server and worker. Nothing may run without a valid decision, and the run stays
operable after every refusal."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import RunStatus

from durable_agents.signing import Trust
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support import agents
from tests.support.approver_keys import ALICE, BOB, MALLORY, WORKER_TRUST
from tests.support.cli_support import bound_to
from tests.support.runs import (
    start,
    state_of,
    temporal_cli,
    wait_for_status,
    workflow_task_failures,
)

PAY = {"order": "A12", "amount": 900}
MAIL = {"to": "carol@example.com", "body": "hello"}


@pytest.fixture
def ctl(worker):
    return bound_to(worker)


@pytest.fixture
def alice_key(tmp_path):
    from durable_agents.signing import write_key

    path = tmp_path / "alice.key"
    write_key(ALICE, path)
    return str(path)


async def signal_from_cli(worker, run_id: str, name: str, payload: object) -> None:
    await temporal_cli(
        worker, "workflow", "signal", "--workflow-id", run_id, "--name", name,
        "--input", json.dumps(payload),
    )  # fmt: skip


async def waiting(worker, model_server, *calls: Call, agent: str = "treasurer"):
    model_server.script(Reply(tool_calls=calls), Reply(content="done"))
    handle = await start(worker, agent=agent)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    return handle


def signed(
    run_id: str, call_id: str, arguments: dict, *, execution_id: str, key=ALICE, **fields
) -> dict:
    return key.sign(
        {
            "call_id": call_id,
            "decision": "approve",
            "approver": key.owner,
            "run_id": run_id,
            "execution_id": execution_id,
            "arguments_sha256": arguments_sha256(arguments),
            "expires_at": "2099-01-01T00:00:00Z",
            **fields,
        }
    )


async def execution_of(handle) -> str:
    """The run's execution, as its pending items give it (what a decision names)."""
    [item, *_] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    return item["execution_id"]


async def last_refusal(handle) -> str:
    return (await state_of(handle)).refused_decisions[-1].refused_because or ""


# --- 1. forged snapshot --------------------------------------------------------------------


@pytest.mark.parametrize("forgery", ["no-approval-needed", "forged-decision"])
async def test_a_forged_snapshot_started_from_the_temporal_cli_authorises_nothing(
    worker, model_server, tmp_path, forgery
):
    source = await waiting(worker, model_server, Call("send_email", MAIL, "e1"))
    document = json.loads((await state_of(source)).model_dump_json())
    await source.terminate("snapshot taken")
    [reply] = [i for i in document["items"] if i["type"] == "assistant_message"]
    reply["tool_calls"][0]["arguments"] = json.dumps({"to": "ALL-CUSTOMERS", "body": "x"})
    if forgery == "no-approval-needed":
        reply["tool_calls"][0]["needs_approval"] = False
        for spec in document["agent"]["tools"]:
            spec["needs_approval"] = False
    else:
        forged = {"type": "decision", "call_id": "e1", "decision": "approve"}
        document["items"].append(
            forged | {"approver": "alice", "always": True, "via": "signal", "at": reply["at"]}
        )
    run_id = f"forged-{uuid.uuid4().hex[:8]}"
    input_file = tmp_path / "input.json"
    input_file.write_text(json.dumps({"agent": "treasurer", "input": "", "resume_from": document}))
    model_server.script(Reply(content="done"))
    await temporal_cli(
        worker, "workflow", "start", "--type", contract.WORKFLOW_TYPE,
        "--task-queue", worker.task_queue, "--workflow-id", run_id,
        "--input-file", str(input_file),
    )  # fmt: skip
    handle = worker.client.get_workflow_handle(run_id)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    state = await state_of(handle)
    assert agents.CALLS == []
    assert state.agent.require_tool("send_email").needs_approval  # from the worker
    if forgery == "forged-decision":
        dropped = state.refused_decisions[-1]
        assert (dropped.call_id, dropped.via, dropped.approver) == ("e1", "snapshot", "alice")
        assert dropped.always and not any(isinstance(i, Decision) for i in state.items)
    [pending] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    assert pending["args"] == {"to": "ALL-CUSTOMERS", "body": "x"}  # what would run, shown
    await signal_from_cli(worker, run_id, "reject", {"call_id": "e1", "approver": "ann"})
    assert (await handle.result())["status"] == "completed"
    assert agents.CALLS == []


# --- 2. self-declared approvers; signed decisions from another process ---------------------


async def test_a_typed_in_approver_cannot_pass_a_policy_that_requires_signatures(
    worker, model_server, ctl, alice_key
):
    handle = await waiting(worker, model_server, Call("pay", PAY, "p1"))
    typed = {"call_id": "p1", "approver": "alice", "sender": "agentctl"}
    await signal_from_cli(worker, handle.id, "approve", typed)
    assert await last_refusal(handle) == (
        "the tool's policy requires a signed decision (`signature`)"
    )
    await signal_from_cli(
        worker,
        handle.id,
        "approve",
        signed(handle.id, "p1", PAY, key=MALLORY, execution_id=await execution_of(handle)),
    )
    assert "signed with key 'mallory-test', which this run does not know" in (
        await last_refusal(handle)
    )
    assert agents.CALLS == []

    approved = await ctl("approve", handle.id, "p1", "--key", alice_key)
    assert approved.code == 0, approved.stderr
    lines = approved.stdout.splitlines()
    assert (
        lines[0].startswith("approved p1 by alice at ") and "signed with key alice-test" in lines[0]
    )
    assert lines[1:] == [
        f"pay (sha256 {arguments_sha256(PAY)[:16]}…)",
        "    order = A12",
        "    amount = 900",
    ]
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert [c[0] for c in agents.CALLS] == ["pay"]
    decision = next(i for i in (await state_of(handle)).items if isinstance(i, Decision))
    assert (decision.approver, decision.signed_by, decision.run_id) == (
        "alice",
        "alice-test",
        handle.id,
    )


async def test_a_signed_rejection_cannot_be_sent_as_an_approval(worker, model_server):
    handle = await waiting(worker, model_server, Call("pay", PAY, "p1"))
    rejection = signed(
        handle.id, "p1", PAY, decision="reject", execution_id=await execution_of(handle)
    )
    await signal_from_cli(worker, handle.id, "approve", rejection)
    assert "the payload says 'reject' but was sent as 'approve'" in await last_refusal(handle)
    unnamed = ALICE.sign({k: v for k, v in rejection.items() if k not in ("decision", "signature")})
    await signal_from_cli(worker, handle.id, "approve", unnamed)
    assert "a signed decision must name its `decision`" in await last_refusal(handle)
    assert agents.CALLS == [] and (await handle.describe()).status is not None
    await signal_from_cli(worker, handle.id, "reject", rejection)
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert agents.CALLS == []


# --- 3. `always` is scoped ----------------------------------------------------------------


async def test_always_covers_the_same_arguments_not_a_bigger_refund(worker, model_server):
    small, big = {"order": "A1", "amount": 101}, {"order": "B7", "amount": 1_000_000}
    model_server.script(
        Reply(tool_calls=(Call("refund", small, "r1"),)),
        Reply(tool_calls=(Call("refund", small, "r2"), Call("refund", big, "r3"))),
        Reply(content="done"),
    )
    handle = await start(worker, agent="treasurer")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await signal_from_cli(
        worker, handle.id, "approve", {"call_id": "r1", "approver": "ann", "always": True}
    )
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    assert [p["call_id"] for p in pending] == ["r3"]
    made = {i.call_id: i for i in (await state_of(handle)).items if isinstance(i, Decision)}
    assert made["r2"].via == "rule"
    assert [c[1] for c in agents.CALLS] == [small, small]
    await signal_from_cli(worker, handle.id, "reject", {"call_id": "r3", "approver": "ann"})
    assert (await handle.result()).status is RunStatus.COMPLETED


async def test_a_policy_can_forbid_always(worker, model_server, alice_key):
    handle = await waiting(worker, model_server, Call("pay", PAY, "p1"))
    await signal_from_cli(
        worker,
        handle.id,
        "approve",
        signed(handle.id, "p1", PAY, always=True, execution_id=await execution_of(handle)),
    )
    assert await last_refusal(handle) == "the policy of pay does not allow `always`"
    execution_id = await execution_of(handle)
    await signal_from_cli(
        worker, handle.id, "approve", signed(handle.id, "p1", PAY, execution_id=execution_id)
    )
    assert (await handle.result()).status is RunStatus.COMPLETED


# --- 5. replayed decisions -----------------------------------------------------------------


async def test_a_signed_decision_copied_into_another_run_is_refused(worker, model_server):
    asks = Reply(tool_calls=(Call("pay", PAY, "p1"),))
    model_server.script(asks, asks, Reply(content="done"), Reply(content="done"))
    first, second = await start(worker, agent="treasurer"), await start(worker, agent="treasurer")
    for handle in (first, second):
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    payload = signed(first.id, "p1", PAY, execution_id=await execution_of(first))
    await signal_from_cli(worker, second.id, "approve", payload)
    assert f"the decision is for run {first.id!r}, not this one" in await last_refusal(second)
    await signal_from_cli(worker, first.id, "approve", payload)
    assert (await first.result()).status is RunStatus.COMPLETED
    assert [c[0] for c in agents.CALLS] == ["pay"]
    expired = signed(
        second.id,
        "p1",
        PAY,
        expires_at="2020-01-01T00:00:00Z",
        execution_id=await execution_of(second),
    )
    await signal_from_cli(worker, second.id, "approve", expired)
    assert await last_refusal(second) == "the decision expired at 2020-01-01T00:00:00Z"
    await second.terminate("test over")


# --- 6. what the approver sees is what runs ------------------------------------------------


async def test_model_arguments_outside_the_limits_never_wait_for_a_decision(worker, model_server):
    model_server.script(Reply(tool_calls=(Call("pay", {"order": "A", "amount": 5000}, "p1"),)))
    model_server.script(Reply(content="cannot"))
    handle = await start(worker, agent="treasurer")
    assert (await handle.result()).status is RunStatus.COMPLETED
    [answer] = [r for r in (await state_of(handle)).items if r.type == "tool_result"]
    assert "amount must be <= 1000 (is 5000)" in answer.content and answer.is_error


async def test_edits_are_checked_against_the_limits_and_shown(worker, model_server, ctl, alice_key):
    handle = await waiting(worker, model_server, Call("pay", PAY, "p1"))
    too_much = await ctl(
        "approve", handle.id, "p1", "--key", alice_key, "--wait",
        "--args", '{"order": "A12", "amount": 1e12}',
    )  # fmt: skip
    assert too_much.code == 1
    assert "amount must be <= 1000 (is 1000000000000.0)" in too_much.stderr
    edited = await ctl(
        "approve", handle.id, "p1", "--key", alice_key, "--wait",
        "--args", '{"order": "A12", "amount": 150}',
    )  # fmt: skip
    assert edited.code == 0, edited.stderr
    assert 'arguments edited by alice to {"order": "A12", "amount": 150}' in edited.stdout
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert agents.CALLS[0][1] == {"order": "A12", "amount": 150}
    shown = await ctl("state", handle.id)
    assert 'arguments edited by alice to {"order": "A12", "amount": 150}' in shown.stdout


async def test_a_call_id_that_would_hide_terminal_text_is_renamed(worker, model_server, ctl):
    hidden = "p\x1b[8m1"
    model_server.script(Reply(tool_calls=(Call("send_email", MAIL, hidden),)), Reply(content="ok"))
    handle = await start(worker, agent="treasurer")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    [pending] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    assert pending["call_id"] == "call_t1_1"
    table = await ctl("pending", handle.id)
    assert "\x1b" not in table.stdout and "call_t1_1" in table.stdout
    assert "    to = carol@example.com" in table.stdout.splitlines()
    await handle.terminate("test over")


async def test_pending_shows_every_argument_in_full(worker, model_server, ctl):
    long = "x" * 250 + "END"
    arguments = {"to": long, "body": "\u202eevil"}
    handle = await waiting(worker, model_server, Call("send_email", arguments, "e1"))
    lines = (await ctl("pending", handle.id)).stdout.splitlines()
    start_at = lines.index("    to = " + "x" * 100)
    assert lines[start_at + 1 : start_at + 3] == [
        "      ↪ " + "x" * 100,
        "      ↪ " + "x" * 50 + "END",
    ]
    assert lines[start_at + 3] == "    body = \\u{202e}evil"
    await handle.terminate("test over")


# --- hostile binding fields ------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra, why",
    [
        ({"run_id": "r" * 10_000}, "run_id"),
        ({"arguments_sha256": "zz"}, "arguments_sha256"),
        ({"expires_at": "tomorrow"}, "expires_at"),
        (
            {"always": True, "always_when": [{"field": "a", "op": "==", "value": 1}] * 50},
            "always_when",
        ),
        ({"signature": {"key_id": "alice-test", "sig": "!" * 86}}, "signature.sig"),
        ({"signature": "yes"}, "signature"),
        ({"decision": "maybe"}, "decision"),
    ],
    ids=[
        "huge-run-id",
        "bad-digest",
        "bad-expiry",
        "many-conditions",
        "bad-sig",
        "sig-str",
        "decision",
    ],
)
async def test_hostile_binding_fields_are_refused_and_the_run_goes_on(
    worker, model_server, extra, why
):
    handle = await waiting(worker, model_server, Call("send_email", MAIL, "e1"))
    await signal_from_cli(worker, handle.id, "approve", {"call_id": "e1", "approver": "a", **extra})
    refusal = await last_refusal(handle)
    assert refusal.startswith("invalid approve payload: ") and why in refusal
    assert len(refusal) <= 500
    assert agents.CALLS == []
    await signal_from_cli(worker, handle.id, "approve", {"call_id": "e1", "approver": "ann"})
    assert (await handle.result()).status is RunStatus.COMPLETED


# --- decision metadata ---------------------------------------------------------------------


async def test_a_decisions_metadata_is_kept_in_the_audit_and_covered_by_its_signature(
    worker, model_server, ctl
):
    handle = await waiting(
        worker, model_server, Call("pay", PAY, "p1"), Call("send_email", MAIL, "m1")
    )
    ticket = {"ticket": "CHG-4711", "board": {"risk": 2}}
    execution = await execution_of(handle)
    forged = signed(handle.id, "p1", PAY, execution_id=execution, metadata=ticket)
    forged["metadata"] = {"ticket": "CHG-0000"}  # changed after signing
    await signal_from_cli(worker, handle.id, "approve", forged)
    assert "signature" in await last_refusal(handle)
    big = {"call_id": "m1", "approver": "ann", "metadata": {"blob": "x" * 5_000}}
    await signal_from_cli(worker, handle.id, "approve", big)
    assert "metadata: 5,011 bytes of JSON, at most 4,000" in await last_refusal(handle)
    refused = await ctl("approve", handle.id, "m1", "--as", "ann", "--metadata", "[1, 2]")
    assert refused.code != 0 and "--metadata must be a JSON object" in refused.stderr
    done = await ctl(
        "approve", handle.id, "m1", "--as", "ann", "--metadata", '{"ticket": "CHG-9"}', "--wait"
    )
    assert done.code == 0, done.stderr
    await signal_from_cli(
        worker, handle.id, "approve",
        signed(handle.id, "p1", PAY, execution_id=execution, metadata=ticket),
    )  # fmt: skip
    assert (await handle.result()).status is RunStatus.COMPLETED
    made = {d.call_id: d for d in (await state_of(handle)).items if isinstance(d, Decision)}
    assert made["p1"].metadata == ticket and made["m1"].metadata == {"ticket": "CHG-9"}


# --- 7. revocation reaches running runs ------------------------------------------------------


async def test_a_key_removed_from_the_workers_stops_approving_in_a_run_started_before(
    env, model_server
):
    """The run froze alice's key when it started; the workers restart without it. Her
    signed approval still verifies against the run's keys, but the worker that would
    run the call no longer trusts her key: the call does not run, and it is asked again
    (the approval taken back, with why, in the audit, the pending list and the
    `approval_requested` event); her key approves nothing more in the run, and a
    rejection answers the call."""
    queue = f"revoke-{uuid.uuid4().hex[:8]}"
    async with serving(env.client, model_server, task_queue=queue) as before:
        handle = await waiting(before, model_server, Call("pay", PAY, "p1"))
        execution = await execution_of(handle)
    without_alice = Trust(approver_keys=[BOB.public()], snapshot_keys=WORKER_TRUST.snapshot_keys)
    async with serving(env.client, model_server, task_queue=queue, trust=without_alice) as after:
        await signal_from_cli(
            after, handle.id, "approve", signed(handle.id, "p1", PAY, execution_id=execution)
        )

        async def asked_again() -> bool:
            state = await state_of(handle)
            return any(r.via == "revoked" for r in state.refused_decisions)

        for _ in range(600):
            if await asked_again():
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError(f"never asked again: {await state_of(handle)}")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        [item] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
        assert item["call_id"] == "p1" and "no longer trusts" in item["reopened_because"]
        state = await state_of(handle)
        [taken_back] = [r for r in state.refused_decisions if r.via == "revoked"]
        assert taken_back.approver == "alice" and "asked again" in taken_back.refused_because
        assert not any(isinstance(i, Decision) for i in state.items)
        assert ALICE.key_id not in {k.key_id for k in state.agent.approver_keys}
        # her signature again: her key approves nothing more in this run
        again = signed(handle.id, "p1", PAY, execution_id=execution, reason="again")
        await signal_from_cli(after, handle.id, "approve", again)
        await handle.signal(contract.SIGNAL_APPROVE, {"call_id": "nothing", "approver": "x"})

        async def refused_after() -> bool:  # the signal sent after it was handled
            state = await state_of(handle)
            return state.refused_decisions[-1].call_id == "nothing"

        for _ in range(600):
            if await refused_after():
                break
            await asyncio.sleep(0.1)
        state = await state_of(handle)
    assert state.status is RunStatus.AWAITING_APPROVAL  # still asked
    assert agents.CALLS == []  # never paid
    assert "does not know" in state.refused_decisions[-2].refused_because  # her key again
    assert await workflow_task_failures(handle) == 0
    await handle.terminate("test over")
