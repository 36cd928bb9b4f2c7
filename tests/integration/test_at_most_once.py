"""At-most-once tools against the dev server, in-process: what their activity is scheduled
with, what they cost beside a normal tool (from real histories), a timed-out attempt
answered as interrupted, and a tools-only worker that cannot make a result interrupted.
(Worker kills and resumed snapshots: tests/chaos/test_at_most_once.py.)"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from durable_agents.client.cost import actions
from durable_agents.workflows.payloads import ToolOutcome, ToolRequest
from durable_agents.workflows.state import RunStatus
from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.worker import Worker

from durable_agents import gate
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.cli_support import bound_to
from tests.support.once_agents import ADDED, ONCE_QUEUE, once, once_carried
from tests.support.runs import start, state_of, tool_results, workflow_task_failures


async def _history(handle) -> tuple[list, int]:
    events = [e async for e in handle.fetch_history_events()]
    size = (await handle.describe()).raw_description.workflow_execution_info.history_size_bytes
    return events, size


def _run_tool_scheduled(events: list) -> list:
    return [
        e.activity_task_scheduled_event_attributes
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_tool"
    ]


async def test_an_at_most_once_call_is_one_attempt_and_costs_what_a_normal_one_does(
    env, model_server
):
    """The same turn with `add` and with `add_once`: one activity each, one attempt with
    a heartbeat timeout for the at-most-once call, the same actions; figures printed."""
    ADDED.clear()
    figures = {}
    async with serving(env.client, model_server, extra_agents=[once]) as worker:
        for name in ("add", "add_once"):
            model_server.script(
                Reply(tool_calls=(Call(name, {"a": 1, "b": 2}, "c1"),)), Reply(content="3")
            )
            handle = await start(worker, "add", agent="once")
            assert (await handle.result()).status is RunStatus.COMPLETED
            assert tool_results(await state_of(handle))["c1"].content == "3"
            figures[name] = (*(await _history(handle)), handle.id)
    (normal, normal_size, _), (single, single_size, run_id) = figures["add"], figures["add_once"]
    assert ADDED == [f"{run_id}:c1"]
    [normal_attrs], [once_attrs] = _run_tool_scheduled(normal), _run_tool_scheduled(single)
    assert normal_attrs.retry_policy.maximum_attempts == 3
    assert once_attrs.retry_policy.maximum_attempts == 1
    assert once_attrs.heartbeat_timeout.ToTimedelta() == timedelta(seconds=5)
    assert actions(normal) == actions(single)  # billed the same
    assert len(normal) == len(single)
    # the stamp (`started_at`) lives in the run's state, not in its history: a few bytes
    assert abs(single_size - normal_size) < 100, (normal_size, single_size)
    print(
        f"\nnormal tool: {sum(actions(normal).values())} actions, {normal_size} history bytes; "
        f"at most once: {sum(actions(single).values())} actions, {single_size} history bytes"
    )


@pytest.mark.history("at_most_once")
async def test_an_at_most_once_call_past_its_timeout_is_interrupted_not_retried(
    env, model_server, scenario
):
    """After a call that ran once, in a run that continues as new between them (the
    stamps carried over)."""
    ADDED.clear()
    model_server.script(
        Reply(tool_calls=(Call("add_once", {"a": 1, "b": 2}, "a1"),)),
        Reply(tool_calls=(Call("stall_once", {}, "s1"),)),
        Reply(content="ok"),
    )
    async with serving(env.client, model_server, extra_agents=[once_carried]) as worker:
        handle = await start(worker, "stall", agent="once_carried")
        scenario.run(handle)
        assert (await handle.result()).status is RunStatus.COMPLETED
        state = await state_of(handle)
        assert len(state.workflow_runs) == 2
        result = tool_results(state)["s1"]
        ctl = bound_to(worker)
        shown = await ctl("state", handle.id)
        followed = await ctl("watch", handle.id, "--follow", "--json")
    assert "tool interrupted [s1]: Interrupted: the call to tool 'stall_once'" in shown.stdout
    events = [json.loads(line) for line in followed.stdout.splitlines()]
    [finished] = [e for e in events if e["type"] == "tool_finished" and e["call_id"] == "s1"]
    assert (finished["call_id"], finished["interrupted"], finished["is_error"]) == (
        "s1",
        True,
        True,
    )
    assert ADDED == [f"{handle.id}:a1", f"{handle.id}:s1"]  # one start each, none after the timeout
    assert result.interrupted and result.is_error
    assert "outcome was lost (it ran past its timeout" in result.content  # (, or its worker died)
    sent = [m["content"] for m in model_server.requests[-1]["messages"] if m["role"] == "tool"]
    assert sent == ["3", result.content]  # both reach the model, across the switch
    assert await workflow_task_failures(handle) == 0


@activity.defn(name="run_tool")
async def claiming_run_tool(request: ToolRequest) -> ToolOutcome:
    """A tools-only worker that says the call was interrupted (and ran nothing)."""
    return ToolOutcome(call_id=request.call_id, content="3", interrupted=True)


async def test_a_tools_only_worker_cannot_mark_its_outcome_interrupted(env, model_server):
    """`interrupted` is the run's word, never a worker's: an outcome claiming it is taken
    as the tool's answer."""
    model_server.script(
        Reply(tool_calls=(Call("add_elsewhere", {"a": 1, "b": 2}, "e1"),)), Reply(content="3")
    )
    hostile = Worker(
        env.client,
        task_queue=ONCE_QUEUE,
        activities=[claiming_run_tool],
        interceptors=[GateInterceptor(gate.required_keys())],
    )
    async with serving(env.client, model_server, extra_agents=[once]) as worker, hostile:
        handle = await start(worker, "add", agent="once")
        assert (await handle.result()).status is RunStatus.COMPLETED
        result = tool_results(await state_of(handle))["e1"]
    assert (result.content, result.interrupted, result.is_error) == ("3", False, False)
