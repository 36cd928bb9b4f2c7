"""AgentClient against a real worker: start, watch, decide, result, export, errors."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import cast

import pytest
from durable_agents.client.errors import DecisionRefused, RunFailed, RunNotFound
from durable_agents.workflows import contract, snapshot
from durable_agents.workflows.payloads import StatusView
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunState, RunStatus
from temporalio.client import Client

from durable_agents import AgentClient, AgentClientError
from durable_agents.testing import Call, Reply
from tests.support import agents

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="call_email")
WAIT_SECONDS = 30.0  # bounds a failing test only: a loaded machine takes seconds


async def wait_for_status(
    agents_client: AgentClient, run_id: str, status: RunStatus, *, timeout: float = WAIT_SECONDS
) -> StatusView:
    """Poll `get_status` until the run reaches `status` (bounded; fails with the last view)."""
    deadline = asyncio.get_running_loop().time() + timeout
    last: StatusView | AgentClientError | None = None
    while asyncio.get_running_loop().time() < deadline:
        try:
            last = await agents_client.status(run_id)
        except AgentClientError as err:  # the first workflow task may not have run yet
            last = err
        if isinstance(last, StatusView) and last.status == status:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not reach {status.value} in {timeout}s: {last!r}")


@pytest.fixture
def client(worker) -> AgentClient:
    return AgentClient(worker.client, task_queue=worker.task_queue)


def run_id() -> str:
    return f"test-run-{uuid.uuid4().hex[:8]}"


async def test_approved_call_runs_and_the_run_completes(client, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    rid = (
        await client.start("assistant", "mail a@b.c", context={"user": "u1"}, run_id=run_id())
    ).id

    view = await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)
    assert (view.agent, view.turn, view.pending_approvals) == ("assistant", 1, 1)
    [pending] = await client.pending(rid)
    assert (pending.call_id, pending.tool) == ("call_email", "send_email")
    assert json.loads(pending.arguments) == {"to": "a@b.c", "body": "hi"}

    await client.approve(rid, "call_email", approver="alice", reason="fine")
    result = await client.result(rid)

    assert (result.status, result.final_output, result.turn) == (RunStatus.COMPLETED, "done", 2)
    assert [c[0] for c in agents.CALLS] == ["send_email"]
    decisions = [i for i in (await client.state(rid)).items if isinstance(i, Decision)]
    assert [(d.decision, d.approver, d.reason) for d in decisions] == [("approve", "alice", "fine")]


async def test_rejected_call_is_not_run(client, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="ok, not sent"))
    rid = (await client.start("assistant", "mail a@b.c")).id
    await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)

    await client.reject(rid, "call_email", approver="bob", reason="no")

    assert (await client.result(rid)).final_output == "ok, not sent"
    assert agents.CALLS == []


async def test_start_uses_agent_prefixed_id_and_summary(client, worker, model_server) -> None:
    model_server.script(Reply(content="hello"))
    text = "x" * 100
    rid = (await client.start("assistant", text)).id

    assert rid.startswith("assistant-") and len(rid) == len("assistant-") + 12
    description = await worker.client.get_workflow_handle(rid).describe()
    assert await description.static_summary() == f"assistant: {'x' * 59}…"
    assert description.workflow_type == contract.WORKFLOW_TYPE
    assert (await client.result(rid)).final_output == "hello"


async def test_decide_returns_decision_and_refuses_a_second_one(client, model_server) -> None:
    second = Call("send_email", {"to": "x@y.z", "body": "yo"}, call_id="call_second")
    model_server.script(Reply(tool_calls=(EMAIL, second)), Reply(content="done"))
    rid = (await client.start("assistant", "two mails")).id
    await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)

    decision = await client.decide(rid, "call_email", "approve", approver="carol", always=False)
    assert (decision.call_id, decision.decision, decision.approver) == (
        "call_email",
        "approve",
        "carol",
    )
    with pytest.raises(DecisionRefused, match="already decided") as refused:
        await client.decide(rid, "call_email", "reject", approver="carol")
    assert refused.value.call_id == "call_email"
    with pytest.raises(DecisionRefused, match="call_unknown"):
        await client.decide(rid, "call_unknown", "approve", approver="carol")

    await client.decide(rid, "call_second", "reject", approver="carol", reason="no")
    assert (await client.result(rid)).status == RunStatus.COMPLETED


async def test_export_is_the_get_state_snapshot_with_its_digest(
    client, worker, model_server
) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    rid = (await client.start("assistant", "mail", context={"k": [1, 2]})).id
    await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)

    exported = await client.export(rid)
    queried = await worker.client.get_workflow_handle(rid).query(
        contract.QUERY_GET_STATE, result_type=RunState
    )

    assert exported == snapshot.dumps(queried)
    assert snapshot.loads(exported) == queried
    assert json.loads(exported)["integrity"]["algorithm"] == "sha256"
    assert queried.context == {"k": [1, 2]}
    await client.reject(rid, "call_email", approver="dave")
    await client.result(rid)


async def test_approve_with_edited_arguments_runs_the_tool_with_them(client, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    rid = (await client.start("assistant", "mail")).id
    await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)
    edit = {"to": "a@b.c", "body": "shorter"}

    with pytest.raises(DecisionRefused, match="edited arguments are not valid for send_email"):
        await client.decide(rid, "call_email", "approve", approver="ann", arguments={"to": 1})
    decision = await client.decide(rid, "call_email", "approve", approver="ann", arguments=edit)

    assert decision.arguments == edit
    await client.result(rid)
    assert [c[:2] for c in agents.CALLS] == [("send_email", edit)]


async def test_a_retried_decide_with_the_same_request_id_gets_the_first_answer(
    client, model_server
) -> None:
    other = Call("send_email", {"to": "x@y.z", "body": "yo"}, call_id="call_other")
    model_server.script(Reply(tool_calls=(EMAIL, other)), Reply(content="done"))
    rid = (await client.start("assistant", "mail")).id  # call_other keeps the run open meanwhile
    await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)

    first = await client.decide(rid, "call_email", "approve", approver="ann", request_id="req-1")
    again = await client.decide(rid, "call_email", "approve", approver="ann", request_id="req-1")

    assert again == first
    with pytest.raises(DecisionRefused, match="already decided"):
        await client.decide(rid, "call_email", "approve", approver="ann", request_id="req-2")
    await client.reject(rid, "call_other", approver="ann")
    await client.result(rid)
    assert [c[1]["to"] for c in agents.CALLS] == ["a@b.c"]


async def test_unknown_run_id_is_a_clear_error(client) -> None:
    missing = f"no-such-run-{uuid.uuid4().hex[:8]}"
    calls = (
        lambda: client.status(missing),
        lambda: client.pending(missing),
        lambda: client.result(missing),
        lambda: client.approve(missing, "c1", approver="eve"),
        lambda: client.decide(missing, "c1", "approve", approver="eve"),
    )
    for call in calls:
        with pytest.raises(RunNotFound, match=f"no run with id '{missing}'"):
            await call()


async def test_failed_run_raises_run_failed_with_the_workflow_message(client) -> None:
    # Started past AgentClient's check of the served agents (which refuses "nobody" once
    # it sees the worker's list): the run itself fails on the unknown agent.
    rid = run_id()
    await client.client.start_workflow(
        contract.WORKFLOW_TYPE,
        {"agent": "nobody", "input": "hi"},
        id=rid,
        task_queue=client.task_queue,
    )

    with pytest.raises(RunFailed, match="nobody") as failed:
        await client.result(rid)

    assert failed.value.run_id == rid
    assert "\n" not in failed.value.message


async def test_duplicate_run_id_is_refused(client, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    rid = (await client.start("assistant", "mail")).id

    with pytest.raises(AgentClientError, match="already exists"):
        await client.start("assistant", "again", run_id=rid)
    await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)
    await client.reject(rid, "call_email", approver="frank")


# --- no server needed ---------------------------------------------------------------


def offline_client() -> AgentClient:
    """An AgentClient whose Temporal client must never be touched."""
    return AgentClient(cast(Client, object()))


@pytest.mark.parametrize(
    ("context", "where"),
    [
        ({"when": object()}, "context.when is of type object"),
        ({1: "x"}, "key 1"),
        ([1, float("nan")], "context[1] is nan"),
        ((1, 2), "context is of type tuple"),
    ],
)
async def test_context_that_is_not_json_is_refused_before_starting(context, where) -> None:
    with pytest.raises(AgentClientError, match="context must be JSON data") as refused:
        await offline_client().start("assistant", "hi", context=context)
    assert where in refused.value.message


async def test_invalid_start_options_are_refused_before_starting() -> None:
    with pytest.raises(AgentClientError, match="max_turns"):
        await offline_client().start("assistant", "hi", max_turns=0)


async def test_empty_approver_is_refused_before_sending() -> None:
    with pytest.raises(AgentClientError, match="approver"):
        await offline_client().approve("r", "c", approver="")


async def test_a_run_handle_reads_decides_and_waits(client, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    run = await client.start("assistant", "mail a@b.c")
    assert str(run) == run.id and client.run(run.id) == run
    await wait_for_status(client, run.id, RunStatus.AWAITING_APPROVAL)
    [call] = await run.pending()
    decision = await run.decide(call.call_id, "approve", approver="ann", reason="fine")
    assert (decision.call_id, decision.approver, decision.via) == (call.call_id, "ann", "update")
    result = await run.result()
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "sent")
    assert (await run.state()).final_output == "sent"
    assert (await run.status()).status is RunStatus.COMPLETED


def test_every_error_of_the_library_has_one_root() -> None:
    from durable_agents import AgentClientError, AgentError, DecisionRefused
    from durable_agents.dataplane.errors import DataPlaneError

    assert all(issubclass(e, AgentError) for e in (AgentClientError, DataPlaneError))
    refused = DecisionRefused("already decided", run_id="r1", call_id="c1")
    assert refused.message == "decision on call 'c1' of run 'r1' refused: already decided"
    assert str(DecisionRefused("no tool call c9")) == "no tool call c9"  # the workflow's form
