"""Agents called as tools (`Agent.as_tool`, workflows/agent_calls.py): each call runs
the agent as a child AgentWorkflow of its own, against a real dev server, worker and
model server (which answers each agent by its model name: the runs go at once)."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import RunFailed
from durable_agents.workflows import agent_calls
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowExecutionStatus

from durable_agents.testing import Call, Fault, Reply
from tests.integration.test_gateway import gateway
from tests.support.cli_support import bound_to
from tests.support.multi_agents import NOTICES, by_model
from tests.support.runs import child_run, temporal_cli, tool_results, wait_for_status


async def test_two_agents_called_in_parallel_one_approved_on_its_own_run(team, model_server):
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(
                    tool_calls=(
                        Call("researcher", {"input": "add 2 and 3"}, "c1"),
                        Call("ask_mailer", {"input": "tell ann it is 5"}, "c2"),
                    )
                ),
                Reply(content="Done: 5, and ann knows."),
            ],
            "research-model": [
                Reply(tool_calls=(Call("add", {"a": 2, "b": 3}, "a1"),)),
                Reply(content="2 + 3 = 5"),
            ],
            "mail-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "5"}, "n1"),)),
                Reply(content="ann was notified"),
            ],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "work it out and tell ann")).id
    mailer_run = await child_run(team.client, run_id, "c2")
    await wait_for_status(team.client.get_workflow_handle(mailer_run), RunStatus.AWAITING_APPROVAL)
    researcher_run = await child_run(team.client, run_id, "c1")
    assert (await client.result(researcher_run)).final_output == "2 + 3 = 5"
    # its child waits for a decision: so does it (tests/integration/test_tree_approvals.py)
    await wait_for_status(team.client.get_workflow_handle(run_id), RunStatus.AWAITING_APPROVAL)
    shown = await bound_to(team)("tree", run_id)
    assert shown.code == 0, shown.stderr
    assert shown.stdout.splitlines() == [
        f"{run_id} · lead · awaiting_approval · turn 1",
        f"  └ [c1] {researcher_run} · researcher · completed · turn 2",
        f"  └ [c2] {mailer_run} · mailer · awaiting_approval · turn 1 · 1 pending: n1 notify",
    ]
    as_json = (await bound_to(team)("tree", run_id, "--json")).json()
    assert [(c["call_id"], c["run_id"]) for c in as_json["children"]] == [
        ("c1", researcher_run),
        ("c2", mailer_run),
    ]
    assert as_json["children"][1]["pending_approvals"][0]["call_id"] == "n1"

    async with gateway(team, None) as url, httpx2.AsyncClient() as http:  # a sub-run's id has a /
        answer = await http.get(f"{url}/runs/{mailer_run}/pending")
        assert answer.status_code == 200 and answer.json()[0]["call_id"] == "n1"
    payload = json.dumps({"call_id": "n1", "approver": "ops"})
    await temporal_cli(
        team, "workflow", "signal", "--workflow-id", mailer_run, "--name", "approve",
        "--input", payload,
    )  # fmt: skip
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED and result.final_output == "Done: 5, and ann knows."
    assert NOTICES == [{"to": "ann", "text": "5"}]  # once

    state = await client.state(run_id)
    results = tool_results(state)
    assert (results["c1"].content, results["c2"].content) == ("2 + 3 = 5", "ann was notified")
    child = await team.client.get_workflow_handle(mailer_run).describe()
    assert child.status is WorkflowExecutionStatus.COMPLETED
    assert child.parent_id == run_id
    events = [e async for e in client.events(run_id, follow=False)]
    started = {e["call_id"]: e for e in events if e["type"] == "child_started"}
    assert {c: (e["child_agent"], e["child_run_id"]) for c, e in started.items()} == {
        "c1": ("researcher", researcher_run),
        "c2": ("mailer", mailer_run),
    }
    [child_request] = [r for r in model_server.requests if r["model"] == "mail-model"][:1]
    assert child_request["messages"][1] == {"role": "user", "content": "tell ann it is 5"}


async def test_a_typed_child_answers_json_and_a_failed_one_is_a_tool_error(team, model_server):
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(
                    tool_calls=(
                        Call("analyst", {"input": "judge it"}, "c1"),
                        Call("researcher", {"input": "look it up"}, "c2"),
                        Call("researcher", {"query": "wrong shape"}, "c3"),
                    )
                ),
                Reply(content="ok"),
            ],
            "judge-model": [Reply(content='{"approve": true, "why": "fine"}')],
            "research-model": [Fault(400, "bad request for research")],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "go")).id
    assert (await client.result(run_id)).status is RunStatus.COMPLETED
    results = tool_results(await client.state(run_id))
    assert json.loads(results["c1"].content) == {"approve": True, "why": "fine"}
    assert results["c2"].is_error
    assert results["c2"].content.startswith("The researcher agent's run ")
    assert results["c3"].is_error and '{"input": "<the task, in full>"}' in results["c3"].content
    assert agent_calls.child_of(await client.state(run_id), "c3") is None  # no child for it


async def test_cancelling_the_caller_cancels_its_child(team, model_server):
    model_server.responder = by_model(
        {
            "lead-model": [Reply(tool_calls=(Call("ask_mailer", {"input": "notify"}, "c1"),))],
            "mail-model": [Reply(tool_calls=(Call("notify", {"to": "x", "text": "y"}, "n1"),))],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "go")).id
    child = team.client.get_workflow_handle(await child_run(team.client, run_id, "c1"))
    await wait_for_status(child, RunStatus.AWAITING_APPROVAL)
    await client.cancel(run_id)
    for _ in range(100):
        if (await child.describe()).status is WorkflowExecutionStatus.CANCELED:
            break
        await asyncio.sleep(0.1)
    assert (await child.describe()).status is WorkflowExecutionStatus.CANCELED
    assert NOTICES == []


async def test_tree_of_a_run_that_is_not_there_says_so(team):
    shown = await bound_to(team)("tree", "no-such-run\x1b[2J")
    assert shown.code == 1 and shown.stdout == ""
    assert "no-such-run" in shown.stderr and "\x1b" not in shown.stderr


async def test_one_reply_runs_at_most_eight_children(team, model_server):
    calls = tuple(Call("researcher", {"input": f"task {n}"}, f"c{n}") for n in range(9))
    model_server.responder = by_model(
        {
            "lead-model": [Reply(tool_calls=calls), Reply(content="ok")],
            "research-model": [Reply(content="done") for _ in range(8)],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "go")).id
    assert (await client.result(run_id)).status is RunStatus.COMPLETED
    results = tool_results(await client.state(run_id))
    assert [results[f"c{n}"].content for n in range(8)] == ["done"] * 8
    assert results["c8"].is_error and "at most 8 times" in results["c8"].content


async def test_a_budgeted_caller_shares_its_token_budget_and_counts_what_children_used(
    team, model_server
):
    """The caller (2,000 tokens) calls two agents at once: each child gets half of what is
    left; the one whose agent cannot keep a budget (no max_output_tokens) fails to start,
    counted as nothing; what the other used counts against the caller's budget, whose
    next model call it then cannot afford."""
    model_server.responder = by_model(
        {
            "budgeted-model": [
                Reply(
                    tool_calls=(
                        Call("counter", {"input": "add 1 and 2"}, "c1"),
                        Call("researcher", {"input": "look it up"}, "c2"),
                    )
                ),
                Reply(content="never asked"),
            ],
            "count-model": [Reply(content="3", usage=(1_800, 10))],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("budgeted", "count")).id
    result = await client.result(run_id)
    assert result.status is RunStatus.BUDGET_EXCEEDED
    state = await client.state(run_id)
    results = tool_results(state)
    assert results["c1"].content == "3"
    assert results["c2"].is_error and "max_output_tokens" in results["c2"].content
    child = await client.state(await child_run(team.client, run_id, "c1"))
    assert child.token_budget == (2_000 - 15) // 2
    assert state.sub_run_usage is not None and state.sub_run_usage.total_tokens == 1_810
    assert state.usage.total_tokens == 15  # its own, as before
    assert "1,825 of its budget of 2,000" in (state.error.message if state.error else "")
    assert [r["model"] for r in model_server.requests].count("budgeted-model") == 1


async def test_a_child_that_fails_fails_its_caller_when_the_tool_says_so(team, model_server):
    model_server.responder = by_model(
        {
            "strict-model": [Reply(tool_calls=(Call("analyst", {"input": "judge it"}, "c1"),))],
            "judge-model": [Fault(400, "bad request for the judge")],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("strict", "judge")).id
    with pytest.raises(RunFailed, match="SubRunFailed") as failed:
        await client.result(run_id)
    assert "call c1: The analyst agent's run failed" in str(failed.value)
    state = await client.state(run_id)
    assert state.status is RunStatus.FAILED and state.error is not None
    assert state.error.details == {
        "call_id": "c1",
        "agent": "analyst",
        "child_run_id": agent_calls.child_of(state, "c1"),
    }


async def test_what_a_grandchild_used_counts_against_the_budget_at_the_top(team, model_server):
    model_server.responder = by_model(
        {
            "topper-model": [
                Reply(tool_calls=(Call("middle", {"input": "count"}, "t1"),)),
                Reply(content="done"),
            ],
            "middle-model": [
                Reply(tool_calls=(Call("counter", {"input": "add 1 and 2"}, "m1"),)),
                Reply(content="3"),
            ],
            "count-model": [Reply(content="3", usage=(1_500, 10))],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("topper", "count")).id
    assert (await client.result(run_id)).status is RunStatus.COMPLETED
    middle_id = await child_run(team.client, run_id, "t1")
    top, middle = await client.state(run_id), await client.state(middle_id)
    assert middle.token_budget == 5_000 - 15 and middle.agent.on_budget == "stop"
    grandchild = await client.state(await child_run(team.client, middle_id, "m1"))
    assert grandchild.token_budget == 5_000 - 15 - 15
    assert middle.sub_run_usage is not None and middle.sub_run_usage.total_tokens == 1_510
    assert top.sub_run_usage is not None and top.sub_run_usage.total_tokens == 30 + 1_510
