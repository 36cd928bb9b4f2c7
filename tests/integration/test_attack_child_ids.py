"""A squatter who holds every id of a sub-agent's run it can compute from what it can
read (the run's history, the old predictable ids) cannot fail the call, nor get its run
taken for the child: the child's id carries a part only the workers' gate keys make
(`workflows.secret_ids`), and the run's history shows nothing of it before the start that
uses it. The squatter holds the plain id (`<run>/<call id>`), the ids a fresh id from
`workflow.uuid4()` would give (its seed Temporal derives from the run's id: SipHash-1-3
with zero keys over its bytes and 0xff, as Python's own bytes hash is with
PYTHONHASHSEED=0), and the id the published development key would make."""

from __future__ import annotations

import json
import re
import uuid

from durable_agents.client.agent_client import AgentClient
from durable_agents.client.tree import run_tree
from durable_agents.workflows import agent_calls, contract
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowExecutionStatus

from durable_agents import gate
from durable_agents.testing import Call, Reply
from tests.integration.test_activity_gate import cli
from tests.support.multi_agents import by_model
from tests.support.predicted_ids import uuid4s
from tests.support.runs import (
    child_run,
    held,
    keyed_child_id,
    requested,
    tool_results,
    workflow_task_failures,
)


async def squat(team, workflow_id: str) -> None:
    """A workflow of nobody's type on a queue nobody polls: it holds the id for good."""
    await team.client.start_workflow("Squatter", id=workflow_id, task_queue="nobody-polls")


def computable(run_id: str, call_id: str, execution: str) -> list[str]:
    """Every id of the call's child someone without the workers' keys can compute."""
    plain = agent_calls.child_id(run_id, call_id)
    dev = gate.GateKeys.development()
    part = gate.id_part(dev, "dev", ["child", "default", run_id, plain])
    return [
        plain,
        *(f"{plain}~{made[:16]}" for made in uuid4s(execution, 8)),
        agent_calls.child_id(run_id, call_id, f"~dev.{part}"),
    ]


async def test_a_squatter_holding_every_id_it_can_compute_does_not_fail_the_call(
    team, model_server
):
    release = held(
        model_server,
        Reply(tool_calls=(Call("researcher", {"input": "add 2 and 3"}, "r1"),)),
        Reply(content="5"),
        Reply(content="It is 5."),
    )
    run_id = f"lead-{uuid.uuid4().hex[:10]}"
    client = AgentClient(team.client, task_queue=team.task_queue)
    await client.start("lead", "what is 2 + 3?", run_id=run_id)
    await requested(model_server)  # the run exists; its reply is held
    execution = (await team.client.get_workflow_handle(run_id).describe()).run_id
    guesses = computable(run_id, "r1", execution)
    for guess in guesses:
        await squat(team, guess)
    release.set()
    result = await client.result(run_id)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "It is 5.")
    state = await client.state(run_id)
    assert state.renamed_children == []  # its first id was free: nobody could compute it
    [child_run] = state.child_runs
    assert child_run.call_id == "r1" and child_run.run_id not in guesses
    assert child_run.run_id == keyed_child_id(run_id, "r1")  # what only the keys make
    assert not tool_results(state)["r1"].is_error and "5" in tool_results(state)["r1"].content
    child = await team.client.get_workflow_handle(child_run.run_id).describe()
    assert child.parent_id == run_id and child.status is WorkflowExecutionStatus.COMPLETED
    for guess in guesses:  # the squatters' runs were never taken as the child
        squatter = await team.client.get_workflow_handle(guess).describe()
        assert squatter.status is WorkflowExecutionStatus.RUNNING and squatter.parent_id is None
    tree = await run_tree(client, run_id)  # clients find the child from the state
    assert [c.run_id for c in tree.children] == [child_run.run_id]
    # The history shows the id's secret part first in the start that uses it.
    events = json.loads((await team.client.get_workflow_handle(run_id).fetch_history()).to_json())
    part = child_run.run_id.rpartition(".")[2]
    first = next(e for e in events["events"] if part in json.dumps(e))
    assert first["eventType"] == "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED"
    assert await workflow_task_failures(team.client.get_workflow_handle(run_id)) == 0
    for squatter in guesses:
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


async def test_a_snapshot_cannot_name_someone_elses_run_as_the_resumed_runs_child(
    team, model_server, tmp_path
):
    """Anyone who may start workflows can resume a snapshot they wrote. One that names a
    squatter's run as the child of the resumed run's open agent call (`child_runs`,
    `renamed_children`, with the resumed run as caller) gets no say: the resumed run
    records the children it starts, and clients never find the squatter's run there."""
    model_server.responder = by_model(
        {
            "lead-model": [Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),))],
            "mail-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "5"}, "n1"),)),
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "5"}, "n1"),)),
            ],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    source = (await client.start("lead", "tell ann")).id
    await child_run(team.client, source, "c1")
    document = json.loads((await client.state(source)).model_dump_json())
    await client.cancel(source)
    run_id = f"forged-{uuid.uuid4().hex[:8]}"
    squatter = f"someone-{uuid.uuid4().hex[:8]}"
    await squat(team, squatter)
    document["child_runs"] = [{"call_id": "c1", "caller": run_id, "run_id": squatter}]
    planted = {"call_id": "c1", "caller": run_id, "run_id": squatter, "because": "trust me"}
    document["renamed_children"] = [planted]
    input_file = tmp_path / "input.json"
    input_file.write_text(json.dumps({"agent": "lead", "input": "", "resume_from": document}))
    code, out = await cli(
        team, "workflow", "start", "--type", contract.WORKFLOW_TYPE,
        "--task-queue", team.task_queue, "--workflow-id", run_id,
        "--input-file", str(input_file),
    )  # fmt: skip
    assert code == 0, out
    child = await child_run(team.client, run_id, "c1")  # the one it started itself
    state = await client.state(run_id)
    assert child != squatter and child == keyed_child_id(run_id, "c1")
    assert squatter not in [c.run_id for c in state.child_runs]
    assert squatter not in [r.run_id for r in state.renamed_children]
    tree = await run_tree(client, run_id)
    assert [c.run_id for c in tree.children] == [child]
    described = await team.client.get_workflow_handle(squatter).describe()
    assert described.status is WorkflowExecutionStatus.RUNNING and described.parent_id is None
    await client.cancel(run_id)
    await team.client.get_workflow_handle(squatter).terminate("test over")
