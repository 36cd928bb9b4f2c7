"""`agentctl cost`: a run's billable actions by kind, counted from its histories, against
the real dev server (the counts a Temporal Cloud bill would show for it)."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.payloads import AgentInput, AgentResult, DecisionSignal
from durable_agents.workflows.state import RunStatus
from temporalio.common import SearchAttributePair, TypedSearchAttributes

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from tests.support.cli_support import bound_to, error_lines
from tests.support.runs import start, wait_for_status


async def test_a_tool_turn_and_an_approval_cost_what_their_history_shows(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)),
        Reply(tool_calls=(Call("send_email", {"to": "ann", "body": "3"}, "e1"),)),
        Reply(content="sent"),
    )
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    await handle.result()
    found = await bound_to(worker)("cost", handle.id, "--json")
    # one start; describe_agent, three model calls, two tools; the approval's signal;
    # upserts: the start, waiting for approval, running again, completed
    assert found.json() == {
        "actions_total": 12,
        "actions_by_kind": {
            "activities": 6,
            "search_attribute_upserts": 4,
            "signals": 1,
            "workflow_started": 1,
        },
        "history_bytes": (
            await handle.describe()
        ).raw_description.workflow_execution_info.history_size_bytes,
        "workflow_runs": 1,
    }
    shown = await bound_to(worker)("cost", handle.id)
    assert shown.stdout.startswith("12 actions in 1 workflow run, ")
    assert "queries, heartbeats and refused updates are billed too" in shown.stdout


async def test_a_run_that_continued_as_new_counts_every_workflow_run(worker, model_server):
    model_server.script(  # concierge continues as new after every 2 model calls
        Reply(tool_calls=(Call("add", {"a": 1, "b": 1}, "a1"),)),
        Reply(tool_calls=(Call("add", {"a": 2, "b": 1}, "a2"),)),
        Reply(content="3"),
    )
    handle = await start(worker, agent="concierge")
    await handle.result()
    found = (await bound_to(worker)("cost", handle.id, "--json")).json()
    assert isinstance(found, dict)
    assert found["workflow_runs"] == 2
    assert found["actions_by_kind"]["workflow_started"] == 2
    first = worker.client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
    sizes = [
        (await h.describe()).raw_description.workflow_execution_info.history_size_bytes
        for h in (first, worker.client.get_workflow_handle(handle.id))
    ]
    assert found["history_bytes"] == sum(sizes)


async def test_the_cost_of_a_run_that_does_not_exist_is_one_error_line(worker):
    missing = await bound_to(worker)("cost", "no-such-run\x1b[2J")
    assert missing.code == 1
    [line] = error_lines(missing.stderr)
    assert "no-such-run" in line and "\x1b" not in line  # escaped, not run by the terminal


def floor_actions(turns: int) -> int:
    """The hand-written loop's actions for N tool turns (bench/handwritten.py, counted the
    same way): its start, N + 1 model calls and N tools."""
    return 1 + (turns + 1) + turns


async def cost_json(worker, run_id: str) -> dict:
    found = (await bound_to(worker)("cost", run_id, "--json")).json()
    assert isinstance(found, dict)
    return found


async def found_by(worker, query: str) -> list[str]:
    """The ids a visibility query finds, once it finds any (visibility follows the
    run's history a moment later); none within 15 s: none."""
    async with asyncio.timeout(15):
        while True:
            found = [e.id async for e in worker.client.list_workflows(query)]
            if found:
                return found
            await asyncio.sleep(0.1)


@pytest.mark.parametrize("turns", [10, 120])
async def test_a_run_our_client_starts_costs_the_floor_plus_two(worker, model_server, turns):
    """Started by `AgentClient` (agentctl and the gateway too), a run's search attributes
    come with its start (free), so N tool turns cost the hand-written loop's actions
    plus `describe_agent` and the one upsert that says it ended, whatever N (120: past
    where the run continued as new before, one action more)."""
    model_server.script(
        *(Reply(tool_calls=(Call("add", {"a": n, "b": 1}, f"a{n}"),)) for n in range(turns)),
        Reply(content="done"),
    )
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    run = await agents.start("marathon", "add up")
    await agents.result(run.id)
    found = await cost_json(worker, run.id)
    assert found["actions_total"] == floor_actions(turns) + 2
    assert found["actions_by_kind"] == {
        "activities": 1 + (turns + 1) + turns,  # describe_agent, the model, the tools
        "search_attribute_upserts": 1,  # completed
        "workflow_started": 1,
    }
    described = await worker.client.get_workflow_handle(run.id).describe()
    shown = described.typed_search_attributes
    assert (shown.get(sa.AGENT_STATUS), shown.get(sa.AGENT_TURN)) == ("completed", turns + 1)


async def test_a_run_that_continues_as_new_carries_its_search_attributes_free(worker, model_server):
    """A continue-as-new gives the next workflow run the current search attributes with
    its start: no upsert of their own; the switch costs the new run's start and the
    `describe_agent` that gives it the worker's execution settings."""
    turns = 3  # concierge continues as new after every 2 model calls (at most 4 of them)
    model_server.script(
        *(Reply(tool_calls=(Call("add", {"a": n, "b": 1}, f"a{n}"),)) for n in range(turns)),
        Reply(content="done"),
    )
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    run = await agents.start("concierge", "add up")
    await agents.result(run.id)
    found = await cost_json(worker, run.id)
    switches = found["workflow_runs"] - 1
    assert switches == 1
    assert found["actions_by_kind"]["search_attribute_upserts"] == 1  # completed, at the end
    # each switch: the next run's start, and its `describe_agent` (the worker's execution
    # settings, never carried in the state: a deploy's new timeouts reach the run then)
    assert found["actions_total"] == floor_actions(turns) + 2 + 2 * switches
    last = (await worker.client.get_workflow_handle(run.id).describe()).typed_search_attributes
    assert (last.get(sa.AGENT_STATUS), last.get(sa.AGENT_TURN)) == ("completed", turns + 1)
    # the second workflow run began with the values the first had at the switch
    latest = worker.client.get_workflow_handle(run.id)
    first_event = (await latest.fetch_history()).events[0]
    given = first_event.workflow_execution_started_event_attributes.search_attributes
    fields = {k: json.loads(v.data) for k, v in given.indexed_fields.items()}
    assert fields == {
        "AgentName": "concierge",
        "AgentStatus": "running",
        "AgentPendingApprovals": 0,
        "AgentTurn": 2,
        "AgentTotalTokens": fields["AgentTotalTokens"],
    }
    assert fields["AgentTotalTokens"] > 0  # the first run's usage, not the start's 0


async def test_a_waiting_run_is_found_by_status_and_pending_approvals_at_once(worker, model_server):
    """The bound does not cost operators their view: a run waiting for approval is found
    by `AgentStatus` and `AgentPendingApprovals` while it waits, and by `completed` after
    (an upsert each time what they search by changes: waiting, running again, ended)."""
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)),
        Reply(tool_calls=(Call("send_email", {"to": "ann", "body": "3"}, "e1"),)),
        Reply(content="sent"),
    )
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    run = await agents.start("assistant", "mail it")
    handle = worker.client.get_workflow_handle(run.id)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    waiting = (
        f"WorkflowId = '{run.id}' AND AgentStatus = 'awaiting_approval' "
        "AND AgentPendingApprovals > 0"
    )
    assert await found_by(worker, waiting) == [run.id]
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    await agents.result(run.id)
    ended = f"WorkflowId = '{run.id}' AND AgentStatus = 'completed' AND AgentPendingApprovals = 0"
    assert await found_by(worker, ended) == [run.id]
    found = await cost_json(worker, run.id)
    # the floor of 2 tool turns, + describe_agent, + the approval's signal, + 3 upserts
    assert found["actions_total"] == floor_actions(2) + 1 + 1 + 3
    assert found["actions_by_kind"]["search_attribute_upserts"] == 3


async def test_forged_search_attributes_at_start_are_corrected_before_anyone_is_misled(
    worker, model_server
):
    """A client that starts a run with the contract's attributes set to lies (another
    agent, ended, approvals waiting, a cost) does not keep the run from upserting: what
    operators search by is put right at the first step, again when it waits, and at
    the end, counters with it."""
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "ann", "body": "hi"}, "e1"),)),
        Reply(content="sent"),
    )
    forged = TypedSearchAttributes(
        [
            SearchAttributePair(sa.AGENT_NAME, "someone-else"),
            SearchAttributePair(sa.AGENT_STATUS, "completed"),
            SearchAttributePair(sa.AGENT_PENDING_APPROVALS, 7),
            SearchAttributePair(sa.AGENT_TURN, 99),
            SearchAttributePair(sa.AGENT_TOTAL_TOKENS, 10**12),
            SearchAttributePair(sa.AGENT_TOTAL_COST, -1e9),  # the server refuses NaN
        ]
    )
    handle = await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="assistant", input="mail ann"),
        id=f"forged-{uuid.uuid4().hex[:8]}",
        task_queue=worker.task_queue,
        search_attributes=forged,
        result_type=AgentResult,
    )
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    waiting = (
        f"WorkflowId = '{handle.id}' AND AgentName = 'assistant' "
        "AND AgentStatus = 'awaiting_approval' AND AgentPendingApprovals = 1 AND AgentTurn = 1"
    )
    assert await found_by(worker, waiting) == [handle.id]
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver="ann"))
    result = await handle.result()
    shown = (await handle.describe()).typed_search_attributes
    assert (shown.get(sa.AGENT_NAME), shown.get(sa.AGENT_STATUS)) == ("assistant", "completed")
    assert (shown.get(sa.AGENT_PENDING_APPROVALS), shown.get(sa.AGENT_TURN)) == (0, 2)
    assert shown.get(sa.AGENT_TOTAL_TOKENS) == result.usage.total_tokens < 10**12
    assert shown.get(sa.AGENT_TOTAL_COST) == 0.0  # no price: nothing spent, not -1e9


async def test_forged_counters_at_start_are_put_right_at_the_first_step(worker, model_server):
    """Only the counters lie (the status, agent and approvals are a fresh run's): the
    run upserts once at its first step anyway, not only when it ends."""
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)), Reply(content="3")
    )
    lying = sa.at_start("assistant").updated(
        SearchAttributePair(sa.AGENT_TURN, 99), SearchAttributePair(sa.AGENT_TOTAL_TOKENS, 5)
    )
    handle = await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="assistant", input="add"),
        id=f"forged-{uuid.uuid4().hex[:8]}",
        task_queue=worker.task_queue,
        search_attributes=lying,
        result_type=AgentResult,
    )
    await handle.result()
    upserts = [
        {k: json.loads(v.data) for k, v in fields.indexed_fields.items()}
        for e in (await handle.fetch_history()).events
        if e.HasField("upsert_workflow_search_attributes_event_attributes")
        for fields in [e.upsert_workflow_search_attributes_event_attributes.search_attributes]
    ]
    assert [(u["AgentStatus"], u["AgentTurn"]) for u in upserts] == [
        ("running", 0),  # the first step: the start's counters were not the run's
        ("completed", 2),
    ]
    assert upserts[0]["AgentTotalTokens"] == 0
