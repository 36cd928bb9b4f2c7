"""A sub-agent's run id (`<run>/<call id>~KEY.PART`, a part only the workers' gate keys
make) held by a workflow someone else started (the `temporal` CLI) does not fail the
call: the child starts under a fresh id, the run records it with why
(`renamed_children`), clients find the child there, and the squatter's run is never
taken as the child. Waited children and children in the background alike. Nobody
without the keys can compute the id before the run asks for the start
(`test_attack_child_ids`); these squatters stand for one who read it from history and
won the race to it (the test holds the workers' key)."""

from __future__ import annotations

import asyncio
import uuid

from durable_agents.client.agent_client import AgentClient
from durable_agents.client.tree import run_tree
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowExecutionStatus

from durable_agents.testing import Call, Reply
from tests.support.multi_agents import NOTICES, by_model
from tests.support.runs import (
    child_run,
    keyed_child_id,
    temporal_cli,
    tool_results,
    workflow_task_failures,
)


async def squat(team, workflow_id: str) -> None:
    """A workflow of nobody's type on a queue nobody polls: it holds the id for good."""
    await temporal_cli(
        team, "workflow", "start", "--type", "Squatter", "--task-queue", "nobody-polls",
        "--workflow-id", workflow_id,
    )  # fmt: skip


async def test_a_squatted_waited_childs_id_does_not_fail_the_call(team, model_server):
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(tool_calls=(Call("researcher", {"input": "add 2 and 3"}, "r1"),)),
                Reply(content="It is 5."),
            ],
            "research-model": [Reply(content="5")],
        }
    )
    run_id = f"lead-{uuid.uuid4().hex[:10]}"
    held = keyed_child_id(run_id, "r1")
    await squat(team, held)
    client = AgentClient(team.client, task_queue=team.task_queue)
    await client.start("lead", "what is 2 + 3?", run_id=run_id)
    result = await client.result(run_id)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "It is 5.")
    state = await client.state(run_id)
    [renamed] = state.renamed_children
    assert renamed.call_id == "r1" and renamed.run_id.startswith(f"{held}~")
    assert "held by a workflow this call did not start" in renamed.because
    assert not tool_results(state)["r1"].is_error and "5" in tool_results(state)["r1"].content
    child = await team.client.get_workflow_handle(renamed.run_id).describe()
    assert child.parent_id == run_id and child.status is WorkflowExecutionStatus.COMPLETED
    squatter = await team.client.get_workflow_handle(held).describe()
    assert squatter.status is WorkflowExecutionStatus.RUNNING and squatter.parent_id is None
    tree = await run_tree(client, run_id)  # the client finds the child from the state
    assert [c.run_id for c in tree.children] == [renamed.run_id]
    assert [c.run_id for c in state.child_runs] == [renamed.run_id]
    assert await workflow_task_failures(team.client.get_workflow_handle(run_id)) == 0
    await team.client.get_workflow_handle(held).terminate("test over")


async def test_a_squatted_background_childs_id_does_not_fail_the_call(team, model_server):
    model_server.responder = by_model(
        {
            "coord-model": [
                Reply(tool_calls=(Call("scout", {"input": "dig"}, "c1"),)),
                Reply(content="Digging."),
                Reply(content="Dug."),
            ],
            "scout-model": [Reply(content="found gold")],
        }
    )
    run_id = f"coord-{uuid.uuid4().hex[:10]}"
    held = keyed_child_id(run_id, "c1")
    await squat(team, held)
    client = AgentClient(team.client, task_queue=team.task_queue)
    await client.start("coordinator", "dig", run_id=run_id)
    result = await client.result(run_id)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "Dug.")
    state = await client.state(run_id)
    [renamed] = state.renamed_children
    [entry] = state.background_runs
    assert entry.run_id == renamed.run_id != held and entry.status is RunStatus.COMPLETED
    assert renamed.run_id in tool_results(state)["c1"].content  # the model was told it
    child = await team.client.get_workflow_handle(renamed.run_id).describe()
    assert child.parent_id == run_id and child.status is WorkflowExecutionStatus.COMPLETED
    squatter = await team.client.get_workflow_handle(held).describe()
    assert squatter.status is WorkflowExecutionStatus.RUNNING
    await team.client.get_workflow_handle(held).terminate("test over")


async def test_a_callers_interrupt_leaves_a_child_that_takes_no_interrupts_to_finish(
    team, model_server
):
    """`Agent(allow_interrupt=False)` holds for its runs as a tool too: the caller's
    interrupt (sent from outside, as anyone who may signal the caller) answers the call
    as interrupted, but the child is not cancelled: its waiting call is still decided
    by its approvers, and it finishes."""
    model_server.responder = by_model(
        {
            "boss-model": [
                Reply(tool_calls=(Call("steady", {"input": "tell ann"}, "s1"),)),
                Reply(content="Stopped."),
            ],
            "steady-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "hi"}, "n1"),)),
                Reply(content="ann was told"),
            ],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("boss", "tell ann", session=True)).id
    child = await child_run(team.client, run_id, "s1")
    for _ in range(600):
        if any(p.call_id == "n1" for p in await client.pending(run_id)):
            break
        await asyncio.sleep(0.1)
    await client.interrupt(run_id, by="mallory", reason="stop everything")
    for _ in range(600):
        if (await client.status(run_id)).status is RunStatus.AWAITING_INPUT:
            break
        await asyncio.sleep(0.1)
    state = await client.state(run_id)
    result = tool_results(state)["s1"]
    assert result.is_error and "left to finish" in result.content
    assert (await team.client.get_workflow_handle(child).describe()).status is (
        WorkflowExecutionStatus.RUNNING
    )
    await client.decide(child, "n1", "approve", approver="ops")  # on the child's own run
    done = await client.result(child)
    assert (done.status, done.final_output) == (RunStatus.COMPLETED, "ann was told")
    assert NOTICES == [{"to": "ann", "text": "hi"}]
    await client.end_session(run_id)
