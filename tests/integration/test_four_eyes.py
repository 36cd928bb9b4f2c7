"""The approval gate's last holes, attacked from outside against the real dev server and
worker: a decision replayed into a new run that reuses the workflow id, a starter who
approves their own call (separation of duties needs a signed start), a forged start
signature, and sensitive arguments shown where people look."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType

from durable_agents.signing import write_key
from durable_agents.testing import Call, Reply
from tests.integration.test_approval_gate import signed
from tests.support import agents
from tests.support.approver_keys import ALICE, BOB, MALLORY
from tests.support.cli_support import bound_to
from tests.support.runs import refused_start, state_of, temporal_cli, wait_for_status

IBAN = {"iban": "DE89370400440532013000", "amount": 250}
PAY = {"order": "A12", "amount": 900}
LATER = "2099-01-01T00:00:00Z"


@pytest.fixture
def ctl(worker):
    return bound_to(worker)


@pytest.fixture
def keys(tmp_path):
    paths = {}
    for key in (ALICE, BOB):
        paths[key.owner] = str(tmp_path / f"{key.owner}.key")
        write_key(key, tmp_path / f"{key.owner}.key")
    return paths


async def signal(worker, run_id: str, payload: dict, name: str = "approve") -> None:
    await temporal_cli(
        worker, "workflow", "signal", "--workflow-id", run_id, "--name", name,
        "--input", json.dumps(payload),
    )  # fmt: skip


async def last_refusal(handle) -> str:
    return (await state_of(handle)).refused_decisions[-1].refused_because or ""


async def result(handle) -> AgentResult:
    async with asyncio.timeout(30):
        return await handle.result()


# --- a decision replayed into a new run under the same workflow id --------------------------


async def test_a_decision_replayed_into_a_later_run_under_the_same_id_is_refused(
    worker, model_server
):
    asks = Reply(tool_calls=(Call("pay", PAY, "p1"),))
    model_server.script(asks, Reply(content="paid"), asks)
    run_id = "treasury-reused-id"

    async def begin():
        handle = await worker.client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="treasurer", input="pay A12"),
            id=run_id,
            task_queue=worker.task_queue,
            result_type=AgentResult,
        )
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        return handle

    first = await begin()
    [item] = await first.query(contract.QUERY_GET_PENDING_APPROVALS)
    assert item["execution_id"] == first.first_execution_run_id
    captured = signed(run_id, "p1", PAY, execution_id=item["execution_id"])
    await signal(worker, run_id, captured)
    assert (await result(first)).status is RunStatus.COMPLETED
    assert [c[0] for c in agents.CALLS] == ["pay"]

    # The run has closed; Temporal lets a new run take its id. Same call id, same
    # arguments, same signature, well within its expiry: still not this run's decision.
    second = await begin()
    await signal(worker, run_id, captured)
    assert "is for execution" in await last_refusal(second)
    assert "an earlier run under the same workflow id" in await last_refusal(second)
    stripped = {k: v for k, v in captured.items() if k not in ("execution_id", "signature")}
    await signal(worker, run_id, ALICE.sign(stripped))
    assert await last_refusal(second) == "a signed decision must carry execution_id"
    assert [c[0] for c in agents.CALLS] == ["pay"]
    assert (await state_of(second)).status is RunStatus.AWAITING_APPROVAL
    await second.terminate("test over")


# --- separation of duties ---------------------------------------------------------------------


@pytest.mark.history("signed_start")
async def test_whoever_signed_the_start_may_not_approve_the_call(
    worker, model_server, ctl, keys, scenario
):
    model_server.script(Reply(tool_calls=(Call("transfer", IBAN, "t1"),)), Reply(content="sent"))
    started = await ctl("start", "custodian", "wire 250", "--key", keys["alice"])
    assert started.code == 0, started.stderr
    run_id = started.stdout.strip()
    handle = worker.client.get_workflow_handle(run_id, result_type=AgentResult)
    scenario.run(handle)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    state = await state_of(handle)
    assert (state.started_by.owner, state.started_by.key_id) == ("alice", "alice-test")

    own = await ctl("approve", run_id, "t1", "--key", keys["alice"])
    assert "separates duties: alice started this run (key 'alice-test')" in own.stdout + own.stderr
    assert agents.CALLS == []
    waited = await ctl("approve", run_id, "t1", "--key", keys["alice"], "--wait")
    assert waited.code != 0 and "may not approve its calls" in waited.stderr

    other = await ctl("approve", run_id, "t1", "--key", keys["bob"])
    assert other.code == 0, other.stderr
    assert (await result(handle)).status is RunStatus.COMPLETED
    assert [c[:2] for c in agents.CALLS] == [("transfer", IBAN)]


async def test_an_unsigned_start_leaves_a_call_that_separates_duties_unapprovable(
    worker, model_server, ctl, keys
):
    model_server.script(Reply(tool_calls=(Call("transfer", IBAN, "t1"),)), Reply(content="no"))
    started = await ctl("start", "custodian", "wire 250")
    run_id = started.stdout.strip()
    handle = worker.client.get_workflow_handle(run_id, result_type=AgentResult)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert (await state_of(handle)).started_by is None
    await ctl("approve", run_id, "t1", "--key", keys["bob"])
    assert "the run's start must be signed (start_signature)" in await last_refusal(handle)
    rejected = await ctl("reject", run_id, "t1", "--key", keys["bob"], "--reason", "unsigned")
    assert rejected.code == 0, rejected.stderr
    assert (await result(handle)).status is RunStatus.COMPLETED
    assert agents.CALLS == []


def _start_input(run_id: str, *, key=ALICE, text: str = "wire 250", **claim) -> dict:
    plain = AgentInput(agent="custodian", input="wire 250").model_dump(mode="json")
    signed = key.sign_start(
        plain,
        workflow_id=claim.get("workflow_id", run_id),
        expires_at=claim.get("expires_at", LATER),
    )
    signed["input"] = text  # as sent; differs from what was signed if `text` is changed
    return signed


@pytest.mark.parametrize(
    ("forgery", "why"),
    [
        ({"key": MALLORY}, "signed with key 'mallory-test', which this worker lacks"),
        ({"text": "wire 250000"}, "the start signature with key 'alice-test' does not verify"),
        ({"workflow_id": "elsewhere"}, "the signed start is for workflow 'elsewhere'"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "the signed start expired at 2020-01-01"),
    ],
    ids=["unknown-key", "tampered-input", "other-workflow", "expired"],
)
async def test_a_start_whose_signature_does_not_verify_fails_as_invalid_input(
    worker, model_server, tmp_path, forgery, why
):
    run_id = f"forged-start-{len(why)}"
    refused = await refused_start(worker, tmp_path, _start_input(run_id, **forgery), run_id=run_id)
    assert why in refused
    assert agents.CALLS == []


# --- sensitive arguments ------------------------------------------------------------------------


async def test_sensitive_arguments_are_masked_wherever_people_look(worker, model_server, ctl, keys):
    model_server.script(Reply(tool_calls=(Call("transfer", IBAN, "t1"),)), Reply(content="sent"))
    started = await ctl("start", "custodian", "wire 250", "--key", keys["alice"])
    run_id = started.stdout.strip()
    handle = worker.client.get_workflow_handle(run_id, result_type=AgentResult)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    secret = IBAN["iban"]

    pending = await ctl("pending", run_id)
    assert "iban = <sensitive, 22 chars>" in pending.stdout and secret not in pending.stdout
    assert "amount = 250" in pending.stdout
    as_json = json.loads((await ctl("pending", run_id, "--json")).stdout)
    assert secret not in json.dumps(as_json) and as_json[0]["sensitive"] == ["iban"]
    assert as_json[0]["arguments_sha256"] == arguments_sha256(IBAN)  # still what runs
    revealed = await ctl("pending", run_id, "--show-sensitive")
    assert f"iban = {secret}" in revealed.stdout
    state = await ctl("state", run_id)
    assert secret not in state.stdout and "<sensitive, 22 chars>" in state.stdout
    assert secret in (await ctl("state", run_id, "--show-sensitive")).stdout

    metadata = await handle.query("__temporal_workflow_metadata")
    details = metadata.current_details
    assert "<sensitive, 22 chars>" in details and secret not in details

    watched = await ctl("watch", run_id, "--json")
    assert (
        watched.code == 0
        and secret not in watched.stdout
        and "<sensitive, 22 chars>" in (watched.stdout)
    )
    edited = json.dumps({"iban": "DE00999999999999999999", "amount": 250})
    approved = await ctl("approve", run_id, "t1", "--key", keys["bob"], "--args", edited, "--json")
    assert approved.code == 0, approved.stderr
    assert secret not in approved.stdout and "DE00999999999999999999" not in approved.stdout
    assert (await result(handle)).status is RunStatus.COMPLETED
    # the tool got the approver's edit, in full
    assert [c[1] for c in agents.CALLS] == [{"iban": "DE00999999999999999999", "amount": 250}]
    summaries = [
        event.user_metadata.summary
        async for event in handle.fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    shown = [json.loads(summary.data) for summary in summaries]
    assert 'tool transfer(iban="<sensitive, 22 chars>", amount=250)' in shown
    assert not any(secret in text for text in shown)


def test_a_tool_cannot_mark_a_parameter_it_does_not_have_sensitive():
    from durable_agents import tool

    with pytest.raises(TypeError, match="sensitive names no parameter: pin"):

        @tool(sensitive=["pin"])
        def unlock(code: str) -> str:
            return code

    with pytest.raises(TypeError, match="collection of parameter names"):
        tool(sensitive="code")


async def test_the_execution_survives_continue_as_new(worker, model_server):
    # concierge continues as new every 2 model calls: the call waits in a later
    # workflow run of the same run, whose decisions still name the first execution.
    mail = {"to": "bob", "body": "x"}
    model_server.script(
        Reply(content="a"), Reply(tool_calls=(Call("send_email", mail, "c1"),)), Reply("sent")
    )
    handle = await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="concierge", input="hi", session=True),
        id="concierge-execution",
        task_queue=worker.task_queue,
        result_type=AgentResult,
    )
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "email bob"})
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    state = await state_of(handle)
    assert len(state.workflow_runs) == 2 and state.execution_id == handle.first_execution_run_id
    [item] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    assert item["execution_id"] == state.workflow_runs[0]
    bound = {"call_id": "c1", "approver": "ann", "arguments_sha256": arguments_sha256(mail)}
    await signal(worker, handle.id, {**bound, "execution_id": item["execution_id"]})
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    assert [c[:2] for c in agents.CALLS] == [("send_email", mail)]
    await handle.signal(contract.SIGNAL_END_SESSION, {})
    assert (await result(handle)).status is RunStatus.COMPLETED
