"""AgentClient's operator calls against a real server: list_runs, watch, cancel, setup."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from datetime import timedelta

import pytest
from durable_agents.client.errors import RunFailed
from durable_agents.client.operations import SearchAttributeConflict, create_commands, list_query
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType, IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest

from durable_agents import AgentClient, AgentClientError
from durable_agents.testing import Call, Reply
from tests.integration.test_agent_client import wait_for_status
from tests.support import agents
from tests.support.ops_support import eventually, fresh_namespace

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="e1")


@pytest.fixture
def client(worker) -> AgentClient:
    return AgentClient(worker.client, task_queue=worker.task_queue)


def new_id(prefix: str = "ops") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def test_list_runs_filters_by_status_agent_and_query(client, worker, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    waiting = (await client.start("assistant", "mail a@b.c", run_id=new_id())).id
    await wait_for_status(client, waiting, RunStatus.AWAITING_APPROVAL)
    model_server.script(Reply(content="done", usage=(7, 3)))
    done = (await client.start("assistant", "hi", run_id=new_id())).id
    await client.result(done)
    mine = f'TaskQueue = "{worker.task_queue}"'

    both = await eventually(
        lambda: client.list_runs(query=mine),
        lambda runs: (
            {(r.run_id, r.status) for r in runs}
            == {(waiting, "awaiting_approval"), (done, "completed")}
        ),
    )
    row = next(r for r in both if r.run_id == waiting)
    assert (row.agent, row.turn, row.pending_approvals, row.execution_status) == (
        "assistant",
        1,
        1,
        "RUNNING",
    )
    assert [r.run_id for r in await client.list_runs(status="awaiting_approval", query=mine)] == [
        waiting
    ]
    assert [r.run_id for r in await client.list_runs(status="completed", query=mine)] == [done]
    assert await client.list_runs(agent="concierge", query=mine) == []
    assert len(await client.list_runs(agent="assistant", query=mine, limit=1)) == 1
    await client.cancel(waiting)


async def test_list_query_combines_filters_and_refuses_bad_ones():
    assert list_query() == 'WorkflowType = "AgentWorkflow"'
    assert list_query(status="running", agent="support", query="AgentTurn > 2") == (
        'WorkflowType = "AgentWorkflow" AND AgentStatus = "running" '
        'AND ExecutionStatus = "Running" AND AgentName = "support" AND (AgentTurn > 2)'
    )
    assert list_query(status="completed") == (
        'WorkflowType = "AgentWorkflow" AND AgentStatus = "completed"'
    )
    with pytest.raises(AgentClientError, match="unknown status 'nope'; one of: running, "):
        list_query(status="nope")
    with pytest.raises(AgentClientError, match="invalid agent name"):
        list_query(agent='x" OR 1=1')


async def test_a_terminated_run_leaves_the_list_of_waiting_runs(client, worker, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    rid = (await client.start("assistant", "mail a@b.c", run_id=new_id())).id
    await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)
    this_run = f'WorkflowId = "{rid}"'

    def waiting():
        return client.list_runs(status="awaiting_approval", query=this_run)

    await eventually(waiting, lambda runs: [r.run_id for r in runs] == [rid])
    await worker.client.get_workflow_handle(rid).terminate("operator gave up")

    assert await eventually(waiting, lambda runs: runs == []) == []
    [row] = await client.list_runs(query=this_run)  # still listed, as Temporal ended it
    assert (row.status, row.execution_status) == ("terminated", "TERMINATED")


async def test_a_bad_visibility_query_is_one_clear_error(client):
    with pytest.raises(AgentClientError) as caught:
        await client.list_runs(query="NoSuchAttribute = 1")
    assert caught.value.message.startswith("invalid visibility query 'WorkflowType = ")
    assert "NoSuchAttribute" in caught.value.message


async def test_cancel_while_awaiting_approval_ends_cancelled_without_running_the_tool(
    client, worker, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    rid = (await client.start("assistant", "mail a@b.c", run_id=new_id())).id
    await wait_for_status(client, rid, RunStatus.AWAITING_APPROVAL)

    await client.cancel(rid, reason="changed my mind")

    with pytest.raises(RunFailed, match="was cancelled"):
        await client.result(rid)
    view = await client.status(rid)
    assert (view.status, view.pending_approvals) == (RunStatus.CANCELLED, 0)
    assert agents.CALLS == []
    history = await worker.client.get_workflow_handle(rid).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert "run_tool" not in scheduled
    assert history.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED
    [row] = await eventually(
        lambda: client.list_runs(query=f'WorkflowId = "{rid}"'),
        lambda runs: [r.status for r in runs] == ["cancelled"],
    )
    assert row.execution_status == "CANCELED"


async def test_cancel_of_an_ended_or_unknown_run_is_one_clear_error(client, model_server):
    model_server.script(Reply(content="done"))
    rid = (await client.start("assistant", "hi", run_id=new_id())).id
    await client.result(rid)
    with pytest.raises(AgentClientError, match=f"run '{rid}' has already ended \\(completed\\)"):
        await client.cancel(rid)
    with pytest.raises(AgentClientError, match="no run with id 'nope-"):
        await client.cancel(new_id("nope"))


async def test_watch_reports_changes_then_the_pending_calls(client, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}),)), Reply(tool_calls=(EMAIL,))
    )
    rid = (await client.start("assistant", "add, then mail", run_id=new_id())).id
    events = [e async for e in client.watch(rid)]
    assert [e.done for e in events] == [False] * (len(events) - 1) + [True]
    last = events[-1]
    assert (last.view.status, last.view.turn) == (RunStatus.AWAITING_APPROVAL, 2)
    assert [(p.call_id, p.tool) for p in last.pending] == [("e1", "send_email")]
    assert all(a.view != b.view for a, b in itertools.pairwise(events))
    assert events == sorted(events, key=lambda e: e.elapsed_seconds)
    await client.cancel(rid)


async def test_watch_of_a_finished_run_returns_at_once(client, model_server):
    model_server.script(Reply(content="done"))
    rid = (await client.start("assistant", "hi", run_id=new_id())).id
    await client.result(rid)
    [event] = [e async for e in client.watch(rid)]
    assert (event.done, event.view.status, event.pending) == (True, RunStatus.COMPLETED, [])


async def test_watch_ends_when_the_run_is_terminated_mid_turn(client, worker, model_server):
    model_server.script(Reply(content="too late", delay_seconds=30))
    rid = (await client.start("assistant", "hi", run_id=new_id())).id
    events = []
    async with asyncio.timeout(20):
        async for event in client.watch(rid, interval=timedelta(seconds=0.1)):
            events.append(event)
            if len(events) == 1:
                await worker.client.get_workflow_handle(rid).terminate("stuck")
    assert [e.done for e in events] == [False] * (len(events) - 1) + [True]
    assert events[0].closed is None
    last = events[-1]
    assert (last.closed, last.view.status, last.pending) == ("terminated", RunStatus.RUNNING, [])


async def test_setup_registers_the_search_attributes_once(env):
    client = AgentClient(await fresh_namespace(env))
    first = await client.setup_search_attributes()
    assert first.created == [
        "AgentName",
        "AgentStatus",
        "AgentPendingApprovals",
        "AgentTurn",
        "AgentTotalTokens",
        "AgentTotalCost",
    ]
    assert first.existing == []
    again = await client.setup_search_attributes()
    assert (again.created, again.existing) == ([], first.created)
    assert again.namespace == client.client.namespace


async def test_setup_refuses_an_attribute_of_another_type(env):
    temporal = await fresh_namespace(env)
    await temporal.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=temporal.namespace,
            search_attributes={"AgentTurn": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD},
        )
    )
    with pytest.raises(SearchAttributeConflict) as caught:
        await AgentClient(temporal).setup_search_attributes()
    assert (caught.value.name, caught.value.found, caught.value.wanted) == (
        "AgentTurn",
        "Keyword",
        "Int",
    )
    assert "already has search attribute AgentTurn of type Keyword; the contract needs Int" in (
        caught.value.message
    )


def test_create_commands_match_the_contract():
    assert create_commands() == [
        "temporal operator search-attribute create --name AgentName --type Keyword",
        "temporal operator search-attribute create --name AgentStatus --type Keyword",
        "temporal operator search-attribute create --name AgentPendingApprovals --type Int",
        "temporal operator search-attribute create --name AgentTurn --type Int",
        "temporal operator search-attribute create --name AgentTotalTokens --type Int",
        "temporal operator search-attribute create --name AgentTotalCost --type Double",
    ]
