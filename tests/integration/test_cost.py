"""`agentctl cost`: a run's billable actions by kind, counted from its histories, against
the real dev server (the counts a Temporal Cloud bill would show for it)."""

from __future__ import annotations

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.payloads import DecisionSignal
from durable_agents.workflows.state import RunStatus

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


@pytest.mark.parametrize("turns", [2, 10])
async def test_a_run_our_client_starts_costs_the_floor_plus_two(worker, model_server, turns):
    """Started by `AgentClient` (agentctl and the gateway too), a run's search attributes
    come with its start (free), so N tool turns cost the hand-written loop's 1 + 2N + 1
    actions plus `describe_agent` and the one upsert that says it ended, whatever N."""
    model_server.script(
        *(Reply(tool_calls=(Call("add", {"a": n, "b": 1}, f"a{n}"),)) for n in range(turns)),
        Reply(content="done"),
    )
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    run = await agents.start("marathon", "add up")
    await agents.result(run.id)
    found = (await bound_to(worker)("cost", run.id, "--json")).json()
    assert isinstance(found, dict)
    floor = 1 + 2 * turns + 1  # the start, N tools, N + 1 model calls
    assert found["actions_total"] == floor + 2
    assert found["actions_by_kind"]["search_attribute_upserts"] == 1
    described = await worker.client.get_workflow_handle(run.id).describe()
    shown = described.typed_search_attributes
    assert (shown.get(sa.AGENT_STATUS), shown.get(sa.AGENT_TURN)) == ("completed", turns + 1)
