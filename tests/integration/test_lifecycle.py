"""Worker lifecycle: SIGTERM drains running tools within the grace period, then exits 0."""

from __future__ import annotations

import asyncio
import signal
import uuid
from pathlib import Path

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput
from temporalio.api.enums.v1 import EventType

from durable_agents.testing import Call, Reply
from tests.support.ops_support import worker_process


async def wait_for_file(path: Path, timeout: float = 30) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not path.exists():
        assert asyncio.get_running_loop().time() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize(
    ("drain", "nap", "finishes"),
    [("10", 1.0, True), ("0", 3.0, False)],
    ids=["tool-finishes-within-grace", "no-grace-cancels-the-tool"],
)
async def test_sigterm_lets_a_running_tool_finish_within_the_grace_period(
    env, model_server, tmp_path, drain, nap, finishes
):
    model_server.script(Reply(tool_calls=(Call("nap", {"seconds": nap}, call_id="n1"),)))
    queue = f"drain-{uuid.uuid4().hex[:8]}"
    async with worker_process(
        env,
        model_server,
        "--drain-seconds",
        drain,
        AGENT_MODULES="tests.support.ops_agents",
        AGENT_TASK_QUEUE=queue,
    ) as process:
        handle = await env.client.start_workflow(
            contract.WORKFLOW_TYPE,
            AgentInput(agent="napper", input="nap", context={"marks": str(tmp_path)}),
            id=f"drain-{uuid.uuid4().hex[:8]}",
            task_queue=queue,
        )
        await wait_for_file(tmp_path / "started")
        process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)
    assert process.returncode == 0, process.err.decode()
    assert f"worker: draining (running activities get {drain}s to finish)" in process.out.decode()
    assert (tmp_path / "finished").exists() is finishes
    history = await handle.fetch_history()
    completed = [
        e for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
    ]
    # describe_agent and call_model completed before; with the grace period the tool did too.
    assert len(completed) == (3 if finishes else 2)
    await handle.terminate("test over")
