"""`temporal workflow reset` under the activity gate (durable_agents.gate_interceptor):
the run a reset makes takes the results its history holds from the run it was reset
from, runs again what was pending at the reset point, and goes on to complete; a result
completed from outside, even one our workers made for the run it was reset from, is
still not taken. Real parts: the dev server, the `temporal` CLI, the scripted model."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agents import gate, gate_interceptor
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_activity_gate import (
    activity_failure,
    cli,
    copy_into_the_next_task,
    running_activity,
)
from tests.support import agents
from tests.support.histories import replayed_workflows
from tests.support.runs import start, state_of, temporal_cli, tool_results, wait_for_status

SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
COMPLETED = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
TASK_COMPLETED = EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
TASK_FAILED = EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
RESET_CAUSE = WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW


async def events_of(handle: WorkflowHandle) -> list[HistoryEvent]:
    """The history of the run `handle` names (its run id)."""
    assert handle.run_id
    return [e async for e in handle.fetch_history_events()]


def activity_types(events: list[HistoryEvent]) -> dict[int, str]:
    """Scheduled event id -> activity type."""
    return {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name
        for e in events
        if e.event_type == SCHEDULED
    }


def task_after_completion(events: list[HistoryEvent], kind: str, nth: int = 0) -> int:
    """The id of the first WorkflowTaskCompleted after the `nth` completion of `kind`:
    the workflow task that took its result."""
    kinds = activity_types(events)
    done = [
        n
        for n, e in enumerate(events)
        if e.event_type == COMPLETED
        and kinds[e.activity_task_completed_event_attributes.scheduled_event_id] == kind
    ][nth]
    return next(e.event_id for e in events[done:] if e.event_type == TASK_COMPLETED)


async def outcome(handle: WorkflowHandle) -> AgentResult:
    """The run's result; a run wedged on a failing workflow task fails the test with
    what the task said."""
    try:
        async with asyncio.timeout(90):
            return await handle.result()
    except TimeoutError:
        raise AssertionError(f"no result: {failed_tasks(await events_of(handle))}") from None


def failed_tasks(events: list[HistoryEvent]) -> list[str]:
    """Messages of the run's failed workflow tasks, but for the one a reset fails."""
    return [
        e.workflow_task_failed_event_attributes.failure.message
        for e in events
        if e.event_type == TASK_FAILED
        and e.workflow_task_failed_event_attributes.cause != RESET_CAUSE
    ]


async def reset(worker, handle: WorkflowHandle, *how: str) -> WorkflowHandle:
    """Reset the run `handle` names with the `temporal` CLI; the handle of the new run."""
    await temporal_cli(
        worker, "workflow", "reset", "-w", handle.id, "-r", handle.run_id or "",
        *how, "--reason", "operator reset in a test",
    )  # fmt: skip
    latest = worker.client.get_workflow_handle(handle.id, result_type=AgentResult)
    run_id = (await latest.describe()).run_id
    assert run_id != handle.run_id
    return worker.client.get_workflow_handle(handle.id, run_id=run_id, result_type=AgentResult)


async def started(worker, text: str, **options) -> WorkflowHandle:
    """A new run; its handle names its run id."""
    handle = await start(worker, text, **options)
    return worker.client.get_workflow_handle(
        handle.id, run_id=handle.first_execution_run_id, result_type=AgentResult
    )


async def finished(worker, text: str = "add 1 and 2", **options) -> WorkflowHandle:
    """A run that called a tool and completed."""
    handle = await started(worker, text, **options)
    assert (await outcome(handle)).status is RunStatus.COMPLETED
    return handle


async def test_a_run_reset_to_its_last_workflow_task_takes_its_earlier_results_and_completes(
    worker, model_server
):
    model_server.script(Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)), Reply("3"))
    first = await finished(worker)

    again = await reset(worker, first, "--type", "LastWorkflowTask")

    result = await outcome(again)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "3")
    events = await events_of(again)
    assert failed_tasks(events) == []  # describe_agent, both model calls, the tool: taken
    assert len(model_server.requests) == 2 and len(agents.CALLS) == 1  # nothing ran again
    assert tool_results(await state_of(again))["a1"].content == "3"


async def test_a_reset_run_and_a_reset_of_it_run_on_from_the_reset_point(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)), Reply("3"), Reply("three")
    )
    first = await finished(worker)
    after_tool = task_after_completion(await events_of(first), contract.ACTIVITY_RUN_TOOL)

    second = await reset(worker, first, "--event-id", str(after_tool))
    result = await outcome(second)  # its own model call after the reset point: "three"
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "three")
    assert len(model_server.requests) == 3 and len(agents.CALLS) == 1
    assert failed_tasks(await events_of(second)) == []

    # A reset of the reset run: it takes results of both runs before it, the second
    # run's own model call (made after that run's reset point) among them.
    third = await reset(worker, second, "--type", "LastWorkflowTask")
    result = await outcome(third)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "three")
    assert len(model_server.requests) == 3
    assert failed_tasks(await events_of(third)) == []
    # A worker loading it again (cold, from its first event) checks every result again.
    replayer = Replayer(
        interceptors=[GateInterceptor(gate.required_keys())],
        workflows=replayed_workflows(),
        data_converter=pydantic_data_converter,
        namespace=worker.namespace,
    )
    replayed = await replayer.replay_workflow(await third.fetch_history())
    assert replayed.replay_failure is None


async def test_a_tool_pending_at_the_reset_point_runs_again_and_its_result_is_taken(
    worker, model_server
):
    model_server.script(Reply(tool_calls=(Call("nap", {"seconds": 4}, "n1"),)), Reply("rested"))
    handle = await started(worker, "rest")
    await running_activity(handle, contract.ACTIVITY_RUN_TOOL)
    # A signal while the tool runs: a workflow task completes after it was scheduled.
    await handle.signal(contract.SIGNAL_APPROVE, {"call_id": "nobody", "approver": "ann"})
    for _ in range(300):
        events = await events_of(handle)
        signalled = max(
            n
            for n, e in enumerate(events)
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
        )
        after = [e.event_id for e in events[signalled:] if e.event_type == TASK_COMPLETED]
        if after:
            break
        await asyncio.sleep(0.05)
    assert not any(e.event_type == COMPLETED for e in events[signalled:]), "nap ended too soon"

    again = await reset(worker, handle, "--event-id", str(after[0]))

    result = await outcome(again)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "rested")
    naps = [key for name, _, key in agents.CALLS if name == "nap"]
    assert len(naps) == 2 and naps[0] == naps[1]  # started again, under the same key
    assert tool_results(await state_of(again))["n1"].content == "slept 4.0"
    assert failed_tasks(await events_of(again)) == []


async def test_a_reset_of_a_continued_as_new_run_completes(worker, model_server):
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)),
        Reply(tool_calls=(Call("add", {"a": 3, "b": 4}, "a2"),)),
        Reply(tool_calls=(Call("add", {"a": 5, "b": 6}, "a3"),)),
        Reply("done"),
    )
    handle = await start(worker, "add", agent="concierge")  # continues as new every 2 calls
    assert (await handle.result()).status is RunStatus.COMPLETED  # (follows its runs)
    latest = worker.client.get_workflow_handle(handle.id, result_type=AgentResult)
    last_run = (await latest.describe()).run_id
    assert last_run != handle.run_id  # it did continue as new

    again = await reset(
        worker,
        worker.client.get_workflow_handle(handle.id, run_id=last_run),
        "--type",
        "LastWorkflowTask",
    )
    result = await outcome(again)
    assert (result.status, result.final_output) == (RunStatus.COMPLETED, "done")
    assert failed_tasks(await events_of(again)) == []
    assert len(model_server.requests) == 4


def completed_results(events: list[HistoryEvent], kind: str) -> list[dict]:
    """The results (as sent, JSON) of the run's completed activities of type `kind`."""
    kinds = activity_types(events)
    return [
        json.loads(e.activity_task_completed_event_attributes.result.payloads[0].data)
        for e in events
        if e.event_type == COMPLETED
        and kinds[e.activity_task_completed_event_attributes.scheduled_event_id] == kind
    ]


def scheduled_inputs(events: list[HistoryEvent], kind: str) -> list[bytes]:
    return [
        e.activity_task_scheduled_event_attributes.input.payloads[0].data
        for e in events
        if e.event_type == SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == kind
    ]


@pytest.mark.parametrize("forged", ["copied", "bare"])
async def test_a_model_reply_completed_from_outside_after_a_reset_is_not_taken(
    worker, model_server, forged
):
    """Even a reply our workers made, for the same call with the same arguments in the
    run this one was reset from, is not taken: it was not made for this run's call."""
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)),
        Reply("the first run's answer"),
        Reply("the reset run's answer", delay_seconds=60),
    )
    first = await finished(worker)
    first_events = await events_of(first)
    after_tool = task_after_completion(first_events, contract.ACTIVITY_RUN_TOOL)
    again = await reset(worker, first, "--event-id", str(after_tool))
    activity_id = await running_activity(again, contract.ACTIVITY_CALL_MODEL)
    genuine = completed_results(first_events, contract.ACTIVITY_CALL_MODEL)[-1]
    assert set(genuine) == {gate.RESULT_FIELD, gate.TAG_FIELD}
    payload = genuine if forged == "copied" else genuine[gate.RESULT_FIELD]
    if forged == "copied":  # the same call: only the binding tells them apart
        asked = scheduled_inputs(await events_of(again), contract.ACTIVITY_CALL_MODEL)
        assert asked[-1] == scheduled_inputs(first_events, contract.ACTIVITY_CALL_MODEL)[-1]

    code, out = await cli(
        worker, "activity", "complete", "--workflow-id", again.id, "--run-id",
        again.run_id or "", "--activity-id", activity_id, "--result", json.dumps(payload),
    )  # fmt: skip
    assert code == 0, out  # the server takes the completion...
    for _ in range(300):  # ...the run does not
        failures = failed_tasks(await events_of(again))
        if failures:
            break
        await asyncio.sleep(0.05)
    assert failures and "not taken" in failures[0], failures
    events = await events_of(again)
    done = max(n for n, e in enumerate(events) if e.event_type == COMPLETED)
    assert not any(e.event_type == TASK_COMPLETED for e in events[done:])  # nothing took it
    await again.terminate("test over")


@pytest.mark.parametrize(
    "tamper",
    [
        {gate_interceptor.RUN_FIELD: "another-run-of-the-workflow-id"},
        {gate_interceptor.SEED_FIELD: "12345"},
        {gate_interceptor.RUN_FIELD: None, gate_interceptor.SEED_FIELD: None},
    ],
    ids=["other-run", "other-seed", "unbound"],
)
async def test_a_tool_command_whose_header_names_another_execution_is_refused(
    env, model_server, tamper
):
    """As a poller of our workflow task queue without the keys: answer a later task of
    the run with a copy of its tool command (within the schedule window, where an
    unaltered copy is admitted), its header naming another execution (`run`, `seed`)
    or none. The tag covers them: refused, and the tool never runs again."""
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)),
        Reply(tool_calls=(Call("send_email", {"to": "a@example.com", "body": "hi"}, "c2"),)),
    )
    async with serving(env.client, model_server) as worker:
        handle = await start(worker)
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    assert [c[0] for c in agents.CALLS] == ["add"]
    [command] = [
        e.activity_task_scheduled_event_attributes
        async for e in handle.fetch_history_events()
        if e.event_type == SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name
        == contract.ACTIVITY_RUN_TOOL
    ]
    header = command.header.fields[gate.HEADER]
    tag = json.loads(header.data)
    assert {gate_interceptor.RUN_FIELD, gate_interceptor.SEED_FIELD} <= set(tag)
    tag = {k: v for k, v in {**tag, **tamper}.items() if v is not None}
    header.data = json.dumps(tag).encode()
    await copy_into_the_next_task(worker, handle, command)
    async with serving(env.client, model_server, task_queue=worker.task_queue):
        async with asyncio.timeout(30):
            while not (failed := await activity_failure(handle, "copied-1")):
                await asyncio.sleep(0.1)
    assert failed.type == gate.REFUSED
    assert "does not match what it asks" in failed.message or "no gate tag" in failed.message
    assert agents.CALLS == []  # the second worker (serving() cleared CALLS) ran nothing
    await handle.terminate("test over")


async def test_a_reply_made_for_an_earlier_run_of_the_workflow_id_is_not_taken(
    worker, model_server
):
    """A new run under a closed run's workflow id asks the same first question; the
    earlier run's genuine reply to it, completed from outside, is not taken."""
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)),
        Reply("3"),
        Reply("the new run's answer", delay_seconds=60),
    )
    first = await finished(worker)
    first_events = await events_of(first)
    latest = await worker.client.start_workflow(
        contract.WORKFLOW_TYPE,
        _same_input(first_events),
        id=first.id,
        task_queue=worker.task_queue,
        result_type=AgentResult,
    )
    later = worker.client.get_workflow_handle(
        first.id, run_id=latest.first_execution_run_id, result_type=AgentResult
    )
    activity_id = await running_activity(later, contract.ACTIVITY_CALL_MODEL)
    asked = scheduled_inputs(await events_of(later), contract.ACTIVITY_CALL_MODEL)
    assert asked[0] == scheduled_inputs(first_events, contract.ACTIVITY_CALL_MODEL)[0]
    genuine = completed_results(first_events, contract.ACTIVITY_CALL_MODEL)[0]

    code, out = await cli(
        worker, "activity", "complete", "--workflow-id", later.id, "--run-id",
        later.run_id or "", "--activity-id", activity_id, "--result", json.dumps(genuine),
    )  # fmt: skip
    assert code == 0, out
    for _ in range(300):
        failures = failed_tasks(await events_of(later))
        if failures:
            break
        await asyncio.sleep(0.05)
    assert failures and "not taken" in failures[0], failures
    assert len(agents.CALLS) == 1  # the earlier reply's tool call never ran here
    await later.terminate("test over")


def _same_input(events: list[HistoryEvent]) -> dict:
    """The start input of the run whose history `events` is."""
    started = events[0].workflow_execution_started_event_attributes
    return json.loads(started.input.payloads[0].data)
