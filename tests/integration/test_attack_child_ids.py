"""A squatter who holds a sub-agent's usual id (`<run>/<call id>`) and also the fresh id
the run would start it under instead cannot fail the call: the fresh id is not one anyone
can compute from the run's history. It once came from `workflow.uuid4()`, whose seed
Temporal derives from the run's id (SipHash-1-3 with zero keys over its bytes and 0xff,
as Python's own bytes hash is with PYTHONHASHSEED=0), so holding the first few ids that
seed gives failed the call."""

from __future__ import annotations

import json
import re
import uuid

from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows import contract
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowExecutionStatus

from durable_agents.testing import Call, Reply
from tests.integration.test_activity_gate import cli
from tests.support.predicted_ids import uuid4s
from tests.support.runs import held, requested, tool_results, workflow_task_failures


async def squat(team, workflow_id: str) -> None:
    """A workflow of nobody's type on a queue nobody polls: it holds the id for good."""
    await team.client.start_workflow("Squatter", id=workflow_id, task_queue="nobody-polls")


async def test_a_squatter_holding_the_computed_fresh_id_too_does_not_fail_the_call(
    team, model_server
):
    release = held(
        model_server,
        Reply(tool_calls=(Call("researcher", {"input": "add 2 and 3"}, "r1"),)),
        Reply(content="5"),
        Reply(content="It is 5."),
    )
    run_id = f"lead-{uuid.uuid4().hex[:10]}"
    usual = f"{run_id}/r1"
    await squat(team, usual)
    client = AgentClient(team.client, task_queue=team.task_queue)
    await client.start("lead", "what is 2 + 3?", run_id=run_id)
    await requested(model_server)  # the run exists; its reply is held
    execution = (await team.client.get_workflow_handle(run_id).describe()).run_id
    guesses = [f"{usual}~{made[:16]}" for made in uuid4s(execution, 8)]
    for guess in guesses:
        await squat(team, guess)
    release.set()
    result = await client.result(run_id)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "It is 5.")
    state = await client.state(run_id)
    [renamed] = state.renamed_children
    assert renamed.run_id.startswith(f"{usual}~") and renamed.run_id not in guesses
    assert not tool_results(state)["r1"].is_error and "5" in tool_results(state)["r1"].content
    child = await team.client.get_workflow_handle(renamed.run_id).describe()
    assert child.parent_id == run_id and child.status is WorkflowExecutionStatus.COMPLETED
    assert await workflow_task_failures(team.client.get_workflow_handle(run_id)) == 0
    for squatter in (usual, *guesses):
        await team.client.get_workflow_handle(squatter).terminate("test over")


async def test_a_standalone_fresh_id_draws_a_random_id_and_takes_no_input(worker):
    """Anyone who may start activities can run `fresh_id` (it is registered like our
    others): it acts on nothing and hands out a random id, never one a run used; input
    it does not take fails it."""
    base = (
        "activity", "execute", "--type", contract.ACTIVITY_FRESH_ID,
        "--task-queue", worker.task_queue, "--start-to-close-timeout", "20s",
        "--schedule-to-close-timeout", "30s", "--retry-maximum-attempts", "1",
    )  # fmt: skip
    drawn = []
    for _ in range(2):
        code, out = await cli(worker, *base, "--activity-id", f"atk-{uuid.uuid4().hex}")
        assert code == 0, out
        drawn += re.findall(r"\b[0-9a-f]{16}\b", out)
    assert len(drawn) == 2 and drawn[0] != drawn[1]
    hostile = json.dumps({"run_id": "lead-x/r1", "prefix": "\u0000" * 10_000})
    code, out = await cli(
        worker, *base, "--activity-id", f"atk-{uuid.uuid4().hex}", "--input", hostile
    )
    assert code != 0, out
