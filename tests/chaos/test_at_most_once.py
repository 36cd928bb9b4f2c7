"""At-most-once tools (`@tool(at_most_once=True)`) in real worker processes: a worker
killed with SIGKILL mid-call, a tools-only worker killed, a snapshot read mid-call and
resumed. The tool's starts are counted in the ledger it writes: never two. The model's
next request holds the interrupted result; a normal tool is retried as before."""

from __future__ import annotations

import pytest
from durable_agents.client import render
from durable_agents.client.cost import actions
from durable_agents.client.snapshots import loads
from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import details
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.run_items import Decision, ToolResult
from durable_agents.workflows.state import RunState, RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowHandle

from durable_agents import AgentClient
from tests.chaos import ledger
from tests.chaos.agents import AT_MOST_ONCE_QUEUE
from tests.chaos.conftest import plan
from tests.chaos.harness import AGENTS, WorkerProcess, wait_until
from tests.chaos.runs import approve_pending, start, task_failures

INTERRUPTED = "Interrupted: the call to tool '{tool}' started, but its outcome was lost"


async def _started(ledger_path, handle: WorkflowHandle) -> list[tuple[str, str, int, float]]:
    return await wait_until(
        lambda: ledger.attempts(ledger_path, handle.id), 60, "the tool's first start"
    )


async def _only_result(handle: WorkflowHandle) -> tuple[RunState, ToolResult]:
    state = await read_state(querying(handle))
    [result] = [i for i in state.items if isinstance(i, ToolResult)]
    return state, result


def _tool_messages(endpoint) -> list[str]:
    """What the model was sent as tool results, request by request (all of them)."""
    return [
        m["content"]
        for body in endpoint.requests
        for m in body["messages"][-1:]
        if m["role"] == "tool"
    ]


async def _finished_events(client, task_queue: str, run_id: str) -> list[dict]:
    agents = AgentClient(client, task_queue=task_queue)
    return [e async for e in agents.events(run_id, follow=False) if e["type"] == "tool_finished"]


async def _history(handle: WorkflowHandle) -> tuple[int, int, int]:
    """Activities scheduled, billable actions and history bytes of the run."""
    events = [e async for e in handle.fetch_history_events()]
    scheduled = sum(e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED for e in events)
    size = (await handle.describe()).raw_description.workflow_execution_info.history_size_bytes
    return scheduled, sum(actions(events).values()), size


@pytest.mark.parametrize(
    ("tool", "starts"),
    # make test keeps the at-most-once kill; a normal tool's retry after kill -9 is
    # also there (test_worker_kill's failover)
    [("pay_once", 1), pytest.param("charge", 2, marks=pytest.mark.chaos_slow)],
)
async def test_a_worker_killed_mid_call_starts_an_at_most_once_tool_never_again(
    client, workers, endpoint, ledger_path, report, tool, starts
):
    """The run's only worker is killed with SIGKILL while the tool runs, and another
    worker started: an at-most-once tool is not started again and the model is told the
    call was interrupted; a normal tool (`charge`) is retried, as before."""
    victim = await workers.start("a")
    handle = await start(client, workers.task_queue, plan(tool, {"amount": 5, "seconds": 6}))
    [(key, _, pid, _)] = await _started(ledger_path, handle)
    assert pid == victim.pid
    await victim.kill()
    await workers.start("b")
    assert (await handle.result()).status is RunStatus.COMPLETED
    attempts = ledger.attempts(ledger_path, handle.id)
    assert [a[0] for a in attempts] == [key] * starts
    state, result = await _only_result(handle)
    [finished] = await _finished_events(client, workers.task_queue, handle.id)
    scheduled, billed, size = await _history(handle)
    report.add(
        f"kill -9 mid-call of {'an at-most-once' if starts == 1 else 'a normal'} tool, worker "
        "restarted",
        "started once, the model told it was interrupted"
        if starts == 1
        else "started twice (retried), applied once by its key",
        f"{scheduled} activities, tool started {starts}x ({billed} actions in history), "
        f"{size:,} history bytes",
    )
    if tool == "charge":  # retried on the new worker, applied there: unchanged
        assert attempts[1][2] != victim.pid
        assert (result.content, result.is_error, result.interrupted) == ("charged", False, False)
        assert "interrupted" not in finished
        return
    assert ledger.effects(ledger_path, handle.id) == []  # killed before it took effect
    assert result.is_error and result.interrupted
    assert result.content.startswith(INTERRUPTED.format(tool=tool))
    assert "no heartbeat" in result.content and "may or may not have taken effect" in result.content
    assert _tool_messages(endpoint) == [result.content]  # the model's next request holds it
    assert finished["interrupted"] is True and finished["is_error"] is True
    assert f"tool interrupted [{result.call_id}]" in render.state(state)  # agentctl state
    metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
    assert "**Last tool result** `pay_once` (interrupted)" in metadata.current_details
    assert "(interrupted)" in details.render(state)
    [call] = [c for i in state.items if i.type == "assistant_message" for c in i.tool_calls]
    assert call.started_at is not None
    assert await task_failures(handle) == 0


async def test_a_tool_s_own_error_is_its_answer_not_an_interruption(
    client, workers, endpoint, ledger_path
):
    await workers.start("a")
    handle = await start(client, workers.task_queue, plan("declined_once", {"amount": 5}))
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert len(ledger.attempts(ledger_path, handle.id)) == 1  # one attempt: no retry
    _, result = await _only_result(handle)
    assert result.is_error and not result.interrupted
    assert result.content == "Error: tool 'declined_once' failed: card declined for 5"
    assert _tool_messages(endpoint) == [result.content]


@pytest.mark.parametrize(
    "tool",
    # make test keeps the plain call (the approved one's resume: tests/unit too)
    ["pay_once", pytest.param("approved_pay_once", marks=pytest.mark.chaos_slow)],
)
async def test_a_snapshot_read_mid_call_resumes_without_starting_the_call_again(
    client, workers, endpoint, ledger_path, tool
):
    """A snapshot exported while the call runs holds it as started; the run resumed from
    it answers the call interrupted (an approved call is not asked about again) and never
    starts it, while the source run finishes its own call."""
    await workers.start("a")
    agents = AgentClient(client, task_queue=workers.task_queue)
    source = await start(client, workers.task_queue, plan(tool, {"amount": 5, "seconds": 4}))
    if tool == "approved_pay_once":
        await wait_until(lambda: approve_pending(source), 60, "the call's approval")
    [(key, _, _, _)] = await _started(ledger_path, source)
    text = await agents.export(source.id)
    [call] = [c for i in loads(text).items if i.type == "assistant_message" for c in i.tool_calls]
    assert call.started_at is not None
    resumed = await agents.resume(text)
    handle = client.get_workflow_handle(resumed.id, result_type=AgentResult)
    assert (await handle.result()).status is RunStatus.COMPLETED
    state, result = await _only_result(handle)
    assert result.interrupted and "resumed from a snapshot taken while the call ran" in (
        result.content
    )
    assert await agents.pending(resumed.id) == []
    events = [e["type"] async for e in agents.events(resumed.id, follow=False)]
    assert "approval_requested" not in events
    [finished] = await _finished_events(client, workers.task_queue, resumed.id)
    assert finished["interrupted"] is True
    assert (await source.result()).status is RunStatus.COMPLETED
    _, done = await _only_result(source)
    assert done.content == "paid"  # the source's own call ran, once
    assert [a[0] for a in ledger.attempts(ledger_path)] == [key]  # and nothing else did
    if tool == "approved_pay_once":  # the approval stays on the record: not asked again
        assert [i.approver for i in state.items if isinstance(i, Decision)] == ["chaos"]


@pytest.mark.chaos_slow
async def test_an_approved_at_most_once_call_killed_mid_call_is_not_asked_or_run_again(
    client, workers, endpoint, ledger_path
):
    victim = await workers.start("a")
    agents = AgentClient(client, task_queue=workers.task_queue)
    text = plan("approved_pay_once", {"amount": 5, "seconds": 6})
    handle = await start(client, workers.task_queue, text)
    await wait_until(lambda: approve_pending(handle), 60, "the call's approval")
    [(key, _, _, _)] = await _started(ledger_path, handle)
    await victim.kill()
    await workers.start("b")
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert [a[0] for a in ledger.attempts(ledger_path, handle.id)] == [key]
    state, result = await _only_result(handle)
    assert result.interrupted and _tool_messages(endpoint) == [result.content]
    assert [i.approver for i in state.items if isinstance(i, Decision)] == ["chaos"]
    requested = [e async for e in agents.events(handle.id, follow=False)]
    assert [e["type"] for e in requested].count("approval_requested") == 1


@pytest.mark.chaos_slow
async def test_a_tools_only_worker_killed_mid_call_is_an_interrupted_call(
    client, server, workers, endpoint, ledger_path, report
):
    """The tool runs on a queue of its own, served by a tools-only worker; that worker
    is killed: the run's worker tells the model, and no other worker starts it."""
    await workers.start("a")
    tools = WorkerProcess(
        name="tools",
        address=server.address,
        task_queue=AT_MOST_ONCE_QUEUE,
        model_url=endpoint.base_url,
        ledger_path=ledger_path,
        tools_only=AGENTS,
    )
    workers.started.append(tools)
    await tools.start()
    text = plan("pay_once_elsewhere", {"amount": 5, "seconds": 6})
    handle = await start(client, workers.task_queue, text)
    [(key, _, pid, _)] = await _started(ledger_path, handle)
    assert pid == tools.pid  # it ran on the tools-only worker
    await tools.kill()
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert [a[0] for a in ledger.attempts(ledger_path, handle.id)] == [key]
    _, result = await _only_result(handle)
    assert result.interrupted and "no heartbeat" in result.content
    assert _tool_messages(endpoint) == [result.content]
    assert await task_failures(handle) == 0
    scheduled, billed, size = await _history(handle)
    report.add(
        "kill -9 of a tools-only worker mid-call of an at-most-once tool",
        "started once; the model told it was interrupted",
        f"{scheduled} activities ({billed} actions), {size:,} history bytes",
    )


@pytest.mark.chaos_slow
async def test_a_worker_stopped_mid_call_for_a_deploy_starts_the_tool_never_again(
    client, workers, endpoint, ledger_path
):
    """SIGTERM (a deploy; `--drain-seconds 0`): the running call is cut short, and the
    run on the next worker tells the model it was interrupted."""
    first = await workers.start("a")
    handle = await start(client, workers.task_queue, plan("pay_once", {"amount": 5, "seconds": 6}))
    [(key, _, _, _)] = await _started(ledger_path, handle)
    await first.stop()
    await workers.start("b")
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert [a[0] for a in ledger.attempts(ledger_path, handle.id)] == [key]
    assert ledger.effects(ledger_path, handle.id) == []
    _, result = await _only_result(handle)
    assert result.interrupted and _tool_messages(endpoint) == [result.content]
    print(f"\nSIGTERM: {result.content}")
