"""Signals from a run below are bound to the execution the caller started, not only to
workflow ids: a `sub_run_finished` copied, header and payload, from the history of an
earlier run under the same workflow id is refused by a later run whose background
child has the same id (`<run>/<call id>`), and the later child's real end is taken.
Sent from outside with a raw client, as anyone who may signal and read the namespace
would."""

from __future__ import annotations

import asyncio
import uuid

from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows import contract
from durable_agents.workflows.run_items import UserMessage
from durable_agents.workflows.state import RunState, RunStatus
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType
from temporalio.api.workflowservice.v1 import SignalWorkflowExecutionRequest

from durable_agents.testing import Call, Reply
from tests.support.runs import child_run, workflow_task_failures


def _coordinator_reply(body: dict) -> Reply:
    """The coordinator starts the scout in the background, says it digs, and answers
    with what the scout's end says."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Reply(content="Digging.")
    text = last["content"] if isinstance(last["content"], str) else ""
    if text.startswith("[The scout agent"):
        return Reply(content="Done: " + text.rsplit("\n", 1)[-1])
    return Reply(tool_calls=(Call("scout", {"input": text}, "c1"),))


def _scout_reply(body: dict) -> Reply:
    """The first run's scout ends at once; the second's waits for approval first."""
    first = body["messages"][1]["content"]
    last = body["messages"][-1]
    if "first" in first:
        return Reply(content="the first scout's words")
    if last["role"] == "tool":
        return Reply(content="the second scout's words")
    return Reply(tool_calls=(Call("notify", {"to": "ann", "text": "dig"}, "n1"),))


def _responder(body: dict) -> Reply:
    return _coordinator_reply(body) if body["model"] == "coord-model" else _scout_reply(body)


async def _until(check, what: str, tries: int = 600) -> None:
    for _ in range(tries):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never: {what}")


def _texts(state: RunState) -> list[str]:
    return [i.content for i in state.items if isinstance(i, UserMessage)]


async def test_an_earlier_runs_copied_end_is_refused_by_the_later_run_with_the_same_child_id(
    team, model_server
):
    model_server.responder = _responder
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = f"coord-{uuid.uuid4().hex[:10]}"
    first = await client.start("coordinator", "first dig", run_id=run_id)
    done = await client.result(first.id)
    assert done.final_output == "Done: the first scout's words"
    # the first child's end, as its history shows it: payload and gate header
    handle = team.client.get_workflow_handle(run_id)
    copies = {}
    async for event in handle.fetch_history_events():
        attrs = event.workflow_execution_signaled_event_attributes
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            copies[attrs.signal_name] = attrs  # the last of each
    tree_signals = (contract.SIGNAL_SUB_RUN_REPORT, contract.SIGNAL_SUB_RUN_FINISHED)
    assert all(copies[name].header.fields for name in tree_signals)  # sent, tagged

    await client.start("coordinator", "second dig", run_id=run_id)  # same ids again
    child = await child_run(team.client, run_id, "c1")

    async def child_waits() -> bool:
        return any(p.call_id == "n1" for p in await client.pending(run_id))

    await _until(child_waits, "the second child waits for approval")
    [entry] = (await client.state(run_id)).background_runs
    assert entry.run_id == child and entry.running and entry.execution
    for name in tree_signals:  # its last report (nothing waits), then its end
        await team.client.workflow_service.signal_workflow_execution(
            SignalWorkflowExecutionRequest(
                namespace=team.client.namespace,
                workflow_execution=WorkflowExecution(workflow_id=run_id),
                signal_name=name,
                input=copies[name].input,
                header=copies[name].header,
                identity="mallory",
                request_id=str(uuid.uuid4()),
            )
        )

    async def refused() -> bool:
        state = await client.state(run_id)
        return any(r.signal == contract.SIGNAL_SUB_RUN_FINISHED for r in state.refused_signals)

    await _until(refused, "the copied end refused")
    state = await client.state(run_id)
    assert [r.signal for r in state.refused_signals] == list(tree_signals)
    for why in [r.refused_because for r in state.refused_signals]:
        assert "not the one this run started" in why and entry.execution[:64] in why
    assert any(p.call_id == "n1" for p in await client.pending(run_id))  # not hidden
    assert state.background_runs[0].running  # still waits for its real child
    assert not any("first scout" in t for t in _texts(state))

    await client.decide(run_id, "n1", "approve", approver="ops")
    result = await client.result(run_id)
    assert (result.status, result.final_output) == (
        RunStatus.COMPLETED,
        "Done: the second scout's words",
    )
    assert await workflow_task_failures(team.client.get_workflow_handle(run_id)) == 0
