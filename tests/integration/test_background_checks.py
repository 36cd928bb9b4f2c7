"""Agents in the background, the review's cases (issue 48): a caller that has continued
as new still learns of a child that ended without telling it (its checks,
`caller_check`), the run that started a child hears of its termination at once, a
control signal refused by a live child (its signal limit, on a dev server of its own)
leaves it running, and an interrupt does not cut a background start half-way. Against a
real dev server, worker and scripted model server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows import background, contract
from durable_agents.workflows.run_items import ToolResult, UserMessage
from durable_agents.workflows.state import RunStatus
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus
from temporalio.plugin import SimplePlugin
from temporalio.worker import (
    Interceptor,
    StartChildWorkflowInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_background_agents import _until
from tests.support.multi_agents import AGENT_TOOL_AGENTS, NOTICES, by_model
from tests.support.runs import child_run, keyed_child_id


async def _events(client, run_id: str, run: str | None = None) -> list[Any]:
    handle = client.get_workflow_handle(run_id, run_id=run)
    return [e async for e in handle.fetch_history_events()]


def _checks_sent(events: list[Any]) -> list[str]:
    """The workflow ids a history's `caller_check` signals went to."""
    kind = EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED
    attrs = "signal_external_workflow_execution_initiated_event_attributes"
    return [
        getattr(e, attrs).workflow_execution.workflow_id
        for e in events
        if e.event_type == kind and getattr(e, attrs).signal_name == contract.SIGNAL_CALLER_CHECK
    ]


def _checks_taken(events: list[Any]) -> int:
    kind = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    attrs = "workflow_execution_signaled_event_attributes"
    return sum(
        e.event_type == kind and getattr(e, attrs).signal_name == contract.SIGNAL_CALLER_CHECK
        for e in events
    )


RELAY_SCRIPT = {
    "relay-model": [
        Reply(tool_calls=(Call("scout", {"input": "dig"}, "c1"),)),
        Reply(content="Started the scout."),
        Reply(content="The scout is gone; I go on without it."),
    ],
    "scout-model": [Reply(tool_calls=(Call("notify", {"to": "ann", "text": "x"}, "n1"),))],
}


async def test_a_background_child_terminated_after_the_caller_continued_as_new_ends_in_the_caller(
    team, model_server
):
    """The review's repro: the relay continues as new after each turn, so the workflow run
    that started its child (and would hear Temporal's word on its end) is long gone when
    the child is terminated. The current run's check finds it gone: the child ends
    `failed`, its pending call goes, the model is told and the single run finishes."""
    model_server.responder = by_model({k: list(v) for k, v in RELAY_SCRIPT.items()})
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("relay", "go")).id
    child = await child_run(team.client, run_id, "c1")

    async def checked_after_switch() -> bool:  # a check reached the running child
        state = await client.state(run_id)
        shown = any(p.call_id == "n1" for p in await client.pending(run_id))
        taken = _checks_taken(await _events(team.client, child))
        return len(state.workflow_runs) >= 3 and shown and taken >= 1

    await _until(checked_after_switch, "the continued caller checked its running child")
    state = await client.state(run_id)
    assert state.background_runs[0].running  # a check it answered leaves it running
    assert (await client.status(run_id)).status is RunStatus.AWAITING_APPROVAL
    first = await _events(team.client, run_id, state.workflow_runs[0])
    assert _checks_sent(first) == []  # the run that started it hears Temporal: no checks
    assert (await team.client.get_workflow_handle(child).describe()).status is (
        WorkflowExecutionStatus.RUNNING
    )
    assert [r.signal for r in (await client.state(child)).refused_signals] == []

    await team.client.get_workflow_handle(child).terminate(reason="operator")
    async with asyncio.timeout(120):  # before the fix it waited for good
        result = await client.result(run_id)  # it no longer waits for the child
    assert result.status is RunStatus.COMPLETED
    assert result.final_output == "The scout is gone; I go on without it."
    state = await client.state(run_id)
    [entry] = state.background_runs
    assert entry.status is RunStatus.FAILED and not entry.running
    assert await client.pending(run_id) == []
    told = [i.content for i in state.items if isinstance(i, UserMessage)][-1]
    assert told.startswith(f"[The scout agent you started in the background (run {child}")
    assert "ended failed without an answer" in told and background.GONE in told
    assert NOTICES == []


async def test_a_background_child_terminated_is_noticed_at_once_by_the_run_that_started_it(
    team, model_server
):
    """The workflow run that started the child holds its handle: Temporal tells it the
    child was terminated, with no check (the coordinator checks every 5 minutes, the
    default) and no signal sent to the child."""
    model_server.responder = by_model(
        {
            "coord-model": [
                Reply(tool_calls=(Call("scout", {"input": "dig"}, "c1"),)),
                Reply(content="Started the scout."),
                Reply(content="The scout is gone; I go on without it."),
            ],
            "scout-model": [Reply(tool_calls=(Call("notify", {"to": "ann", "text": "x"}, "n1"),))],
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("coordinator", "go")).id
    child = await child_run(team.client, run_id, "c1")

    async def child_waits() -> bool:
        return any(p.call_id == "n1" for p in await client.pending(run_id))

    await _until(child_waits, "the child's call shows at the root")
    await team.client.get_workflow_handle(child).terminate(reason="operator")
    async with asyncio.timeout(60):  # far less than the 5 minutes between checks
        result = await client.result(run_id)
    assert result.final_output == "The scout is gone; I go on without it."
    state = await client.state(run_id)
    assert len(state.workflow_runs) == 1  # the run that started it
    [entry] = state.background_runs
    assert entry.status is RunStatus.FAILED and not entry.running
    told = [i.content for i in state.items if isinstance(i, UserMessage)][-1]
    assert told.startswith(f"[The scout agent you started in the background (run {child}")
    assert "ended failed without an answer" in told and "terminated" in told.lower()
    assert _checks_sent(await _events(team.client, run_id)) == []  # Temporal told it
    assert await client.pending(run_id) == []


async def test_the_caller_check_signal_from_outside_changes_nothing(team, model_server):
    """`caller_check` sent from outside, as an attacker would (no payload, garbage, too
    many arguments, a huge one): dropped without a trace; the run goes on as before."""
    model_server.responder = by_model(
        {
            "scout-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "x"}, "n1"),)),
                Reply(content="notified ann"),
            ]
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("scout", "tell ann")).id
    handle = team.client.get_workflow_handle(run_id)

    async def waiting() -> bool:
        return (await client.status(run_id)).status is RunStatus.AWAITING_APPROVAL

    await _until(waiting, "the scout waits for approval")
    await handle.signal(contract.SIGNAL_CALLER_CHECK)
    await handle.signal(contract.SIGNAL_CALLER_CHECK, {"call_id": "n1", "approver": "mallory"})
    await handle.signal(contract.SIGNAL_CALLER_CHECK, args=["x", {"y": 1}, [2]])
    await handle.signal(contract.SIGNAL_CALLER_CHECK, "A" * 200_000)

    async def delivered() -> bool:  # all four (one sent while a workflow task runs waits)
        return _checks_taken(await _events(team.client, run_id)) == 4

    await _until(delivered, "the four checks in the run's history")
    await client.status(run_id)  # a query: answered once the run has taken them
    state = await client.state(run_id)
    assert state.refused_signals == [] and state.refused_decisions == []
    assert [p.call_id for p in await client.pending(run_id)] == ["n1"]  # not decided
    await client.decide(run_id, "n1", "approve", approver="ops")
    result = await client.result(run_id)
    assert result.status is RunStatus.COMPLETED and result.final_output == "notified ann"
    state = await client.state(run_id)  # every check taken by now: none left a trace
    assert state.refused_signals == [] and state.refused_decisions == []
    assert NOTICES == [{"to": "ann", "text": "x"}]


# --- an interrupt while a background child starts --------------------------------------

HELD: list[str] = []
"""The child ids whose start the test worker held (`_HoldStart`)."""


class _HoldStartOut(WorkflowOutboundInterceptor):
    """(Test worker only) The workflow task in which a child's start resolves fails until
    the run has an interrupt pending: Temporal retries it, and the retry carries the
    `interrupt` update with the child's start, so the interrupt reaches the run while its
    start is in flight (updates are applied before resolutions), every time."""

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        handle = await super().start_child_workflow(input)
        state = getattr(workflow.instance(), "_state", None)
        if state is not None and state.interrupt is None and not workflow.unsafe.is_replaying():
            HELD.append(input.id)
            raise RuntimeError(f"test: the start of {input.id} is held until an interrupt")
        return handle


class _HoldStartIn(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_HoldStartOut(outbound))


class _HoldStart(Interceptor):
    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _HoldStartIn


@pytest.fixture
async def holding(env, model_server):
    """A worker serving the agents calling each other, whose child starts are held."""
    NOTICES.clear()
    HELD.clear()
    plugin = SimplePlugin("test-hold-start", interceptors=[_HoldStart()])
    async with serving(
        env.client, model_server, extra_agents=AGENT_TOOL_AGENTS, plugins=[plugin]
    ) as running:
        yield running


async def test_an_interrupt_while_a_background_child_starts_leaves_it_working(
    holding, model_server
):
    """The review's repro, made certain: the interrupt reaches the session while its
    background start is in flight. The start is not cut: the child runs on (not
    cancelled), the model is told the run it started, and its end comes as a message."""
    model_server.responder = by_model(
        {
            "coord-model": [
                Reply(tool_calls=(Call("scout", {"input": "dig"}, "c1"),)),
                Reply(content="The scout is done."),
            ],
            "scout-model": [
                Reply(tool_calls=(Call("notify", {"to": "ann", "text": "x"}, "n1"),)),
                Reply(content="notified ann"),
            ],
        }
    )
    client = AgentClient(holding.client, task_queue=holding.task_queue)
    run_id = (await client.start("coordinator", "go", session=True)).id
    child = keyed_child_id(run_id, "c1")  # held before its start: not recorded yet

    async def held() -> bool:
        return child in HELD

    await _until(held, "the child's start is held")
    done = await client.interrupt(run_id, by="oncall")
    assert done.status.status is RunStatus.AWAITING_INPUT
    assert done.interruption is not None
    [call] = done.interruption.calls
    assert call.call_id == "c1" and call.was == "finished"  # started: the model is told so
    assert "had finished; it keeps its own result: The scout agent works on this in the " in (
        call.note
    )
    assert f"as run {child}" in call.note and "was cancelled" not in call.note
    described = await holding.client.get_workflow_handle(child).describe()
    assert described.status is WorkflowExecutionStatus.RUNNING  # not cancelled
    cancels = [
        e
        for e in await _events(holding.client, run_id)
        if e.event_type == EventType.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED
    ]
    assert cancels == []
    state = await client.state(run_id)
    assert [(b.run_id, b.running) for b in state.background_runs] == [(child, True)]

    async def shown() -> bool:
        return any(p.call_id == "n1" for p in await client.pending(run_id))

    await _until(shown, "the child's call shows on the caller")
    await client.decide(run_id, "n1", "approve", approver="ops")

    async def answered() -> bool:
        state = await client.state(run_id)
        return any(getattr(i, "content", None) == "The scout is done." for i in state.items)

    await _until(answered, "the caller's model answered the child's end")
    state = await client.state(run_id)
    assert state.background_runs[0].status is RunStatus.COMPLETED
    told = [i.content for i in state.items if isinstance(i, UserMessage)][-1]
    assert told.endswith("Its final output:]\nnotified ann")
    await client.end_session(run_id)
    assert (await client.result(run_id)).status is RunStatus.COMPLETED
    assert NOTICES == [{"to": "ann", "text": "x"}]


# --- a control signal that fails for another reason than "not found" -------------------


@pytest.fixture
async def few_signals():
    """A dev server of its own on which a workflow takes one signal at most
    (`history.maximumSignalsPerExecution`): the second signal to a run fails, though the
    run goes on."""
    from durable_agents.workflows import search_attributes
    from temporalio.contrib.pydantic import pydantic_data_converter

    from durable_agents.dev_server_config import dev_server_args
    from tests.support.dev_servers import local_server

    args = [*dev_server_args(), "--dynamic-config-value", "history.maximumSignalsPerExecution=1"]
    environment = await local_server(
        data_converter=pydantic_data_converter,
        search_attributes=search_attributes.ALL,
        dev_server_extra_args=args,
    )
    try:
        yield environment
    finally:
        await environment.shutdown()


async def test_a_message_that_cannot_be_signalled_leaves_a_running_child_running(
    few_signals, model_server
):
    """The child is alive but takes no more signals: the control call tells the model to
    try again later, and the child still counts as running (before, any failure of the
    signal ended it in the caller as `failed`)."""
    run_id = "few-signals-lead"
    child = keyed_child_id(run_id, "c1")  # what the script names; only a key holder knows it

    def message(text: str, call_id: str) -> Reply:
        arguments = {"run_id": child, "message": text}
        return Reply(tool_calls=(Call("message_background_agent", arguments, call_id),))

    model_server.responder = by_model(
        {
            "coord-model": [
                Reply(tool_calls=(Call("scout", {"input": "dig"}, "c1"),)),
                message("first", "m1"),
                message("second", "m2"),
                Reply(content="The scout works on."),
            ],
            "scout-model": [Reply(tool_calls=(Call("notify", {"to": "ann", "text": "x"}, "n1"),))],
        }
    )
    async with serving(few_signals.client, model_server, extra_agents=AGENT_TOOL_AGENTS) as team:
        client = AgentClient(team.client, task_queue=team.task_queue)
        await client.start("coordinator", "go", run_id=run_id)

        async def answered_twice() -> bool:
            state = await client.state(run_id)
            return {"m1", "m2"} <= {i.call_id for i in state.items if isinstance(i, ToolResult)}

        await _until(answered_twice, "both messages answered")
        state = await client.state(run_id)
        results = {i.call_id: i for i in state.items if isinstance(i, ToolResult)}
        assert not results["m1"].is_error, results["m1"].content
        second = results["m2"]
        assert second.is_error and f"Run {child} could not be reached" in second.content
        assert second.content.endswith("it still counts as running, try again later")
        [entry] = state.background_runs
        assert entry.running and entry.status is not RunStatus.FAILED
        described = await team.client.get_workflow_handle(child).describe()
        assert described.status is WorkflowExecutionStatus.RUNNING
        for wid in (run_id, child):
            await team.client.get_workflow_handle(wid).terminate("test over")
