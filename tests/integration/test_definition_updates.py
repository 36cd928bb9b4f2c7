"""A changed agent definition reaching the runs in flight as each agent declares
(`Agent(definition_updates=...)`), across a real deploy: the worker that started the
runs stops, one serving changed agents starts on the same task queue, and each run's
next model call shows which definition it answers to."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid

from durable_agents.activities.agent import Agent
from durable_agents.client.render import status as render_status
from durable_agents.workflows import contract, definitions
from durable_agents.workflows.payloads import StatusView
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowQueryFailedError

from durable_agents.testing import Reply
from tests.conftest import serving
from tests.support.runs import start, state_of, wait_for_status

EVOLVING = Agent(
    name="evolving", instructions="v1", model="defs", definition_updates="next_message"
)
STEADFAST = Agent(name="steadfast", instructions="v1", model="defs")
MOVER = Agent(
    name="mover",
    instructions="v1",
    model="defs",
    definition_updates="continue_as_new",
    turns_per_workflow_run=1,
)
BEFORE = [EVOLVING, STEADFAST, MOVER]
AFTER = [dataclasses.replace(a, instructions="v2") for a in BEFORE]


def instructions_and_message(body: dict) -> Reply:
    """Answers with the instructions the model was sent and the user's latest message."""
    messages = body["messages"]
    system = next(m["content"] for m in messages if m["role"] == "system")
    said = [m["content"] for m in messages if m["role"] == "user"][-1]
    return Reply(content=f"{system}: {said}")


async def answered(handle, text: str) -> None:
    """Wait until the run's latest answer is `text` (its state is there once started)."""
    async with asyncio.timeout(20):
        while True:
            with contextlib.suppress(WorkflowQueryFailedError):
                if (await state_of(handle)).final_output == text:
                    return
            await asyncio.sleep(0.1)


async def say(handle, message: str) -> None:
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": message})


async def test_a_changed_definition_reaches_each_run_as_its_agent_declares(env, model_server):
    model_server.responder = instructions_and_message
    task_queue = f"defs-{uuid.uuid4().hex[:8]}"
    async with serving(
        env.client, model_server, task_queue=task_queue, extra_agents=BEFORE
    ) as worker:
        runs = {a.name: await start(worker, "one", agent=a.name, session=True) for a in BEFORE}
        for handle in runs.values():
            await answered(handle, "v1: one")
            await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        started = {n: definitions.digest((await state_of(h)).agent) for n, h in runs.items()}

    async with serving(
        env.client, model_server, task_queue=task_queue, extra_agents=AFTER
    ) as worker:
        for handle in runs.values():
            await say(handle, "two")
        await answered(runs["evolving"], "v2: two")  # at the next message
        await answered(runs["steadfast"], "v1: two")  # never
        await answered(runs["mover"], "v1: two")  # not before its next continue-as-new
        await say(runs["mover"], "three")
        await answered(runs["mover"], "v2: three")  # it continued as new after "two"
        await say(runs["steadfast"], "three")
        await answered(runs["steadfast"], "v1: three")

        evolving = await state_of(runs["evolving"])
        [entry] = evolving.redefinitions
        assert (entry.reason, entry.before, entry.changed) == (
            "session_message",
            started["evolving"],
            ["instructions"],
        )
        assert entry.after == definitions.digest(evolving.agent) != started["evolving"]
        mover = await state_of(runs["mover"])
        assert [r.reason for r in mover.redefinitions] == ["continue_as_new"]
        assert len(mover.workflow_runs) >= 3
        steadfast = await state_of(runs["steadfast"])
        assert steadfast.redefinitions == [] and steadfast.definition_checked is None
        # `agentctl status` shows which definition each run uses now.
        for name, handle in runs.items():
            view = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
            moved = name != "steadfast"
            assert (view.definition != started[name]) is moved
            assert f"definition {view.definition}" in render_status(
                handle.id, view, definition=True
            )
        for handle in runs.values():
            await handle.signal(contract.SIGNAL_END_SESSION)
            assert (await handle.result()).status is RunStatus.COMPLETED


async def test_a_run_keeps_its_definition_and_says_why_when_its_agent_is_gone(env, model_server):
    model_server.responder = instructions_and_message
    task_queue = f"defs-{uuid.uuid4().hex[:8]}"
    async with serving(
        env.client, model_server, task_queue=task_queue, extra_agents=[EVOLVING]
    ) as worker:
        handle = await start(worker, "one", agent="evolving", session=True)
        await answered(handle, "v1: one")
    async with serving(env.client, model_server, task_queue=task_queue):  # no "evolving"
        await say(handle, "two")
        await answered(handle, "v1: two")
        [entry] = (await state_of(handle)).redefinitions
        assert entry.after is None and "unknown agent 'evolving'" in (entry.error or "")
        await handle.signal(contract.SIGNAL_END_SESSION)
        assert (await handle.result()).status is RunStatus.COMPLETED
