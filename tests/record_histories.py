"""Record the workflow histories that CI replays: `python -m tests.record_histories`.

Run it only to add a history for a new workflow version; never re-record an
existing file to make a replay pass (that is what `workflow.patched` is for).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from openai import AsyncOpenAI
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities.registry import AgentRegistry
from examples.scripted_openai import Call, Fault, Reply, ScriptedModelServer
from tests import agents
from worker import build_worker, temporal_binary
from workflows import contract, search_attributes
from workflows.payloads import AgentInput, DecisionSignal

HISTORIES = Path(__file__).parent / "histories"

SCENARIOS = {
    # name: (model script, decisions sent once the run awaits approval)
    "approve_always_reject_v1": (
        [
            Reply(
                tool_calls=(
                    Call("add", {"a": 1, "b": 2}, "c1"),
                    Call("send_email", {"to": "a", "body": "1"}, "c2"),
                )
            ),
            Reply(
                tool_calls=(
                    Call("send_email", {"to": "b", "body": "2"}, "c3"),
                    Call("teleport", {}, "c4"),
                    Call("flaky", {}, "c5"),
                )
            ),
            Reply(content="all done"),
        ],
        [(contract.SIGNAL_APPROVE, DecisionSignal(call_id="c2", approver="ann", always=True))],
    ),
    "reject_then_model_400_v1": (
        [
            Reply(tool_calls=(Call("send_email", {"to": "x", "body": "y"}, "c1"),)),
            Fault(400, "invalid_request_error: bad"),
        ],
        [(contract.SIGNAL_REJECT, DecisionSignal(call_id="c1", approver="bob", reason="no"))],
    ),
}


async def record(client: Client, name: str, script: list, decisions: list) -> None:
    with ScriptedModelServer() as server:
        server.script(*script)
        model = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        worker = build_worker(
            client,
            registry=AgentRegistry([agents.assistant]),
            model_client=model,
            task_queue=f"record-{name}",
        )
        async with worker:
            handle = await client.start_workflow(
                contract.WORKFLOW_TYPE,
                AgentInput(agent="assistant", input="go"),
                id=f"history-{name}",
                task_queue=f"record-{name}",
            )
            for signal_name, payload in decisions:
                while (await handle.query(contract.QUERY_GET_STATUS)).get("status") != (
                    "awaiting_approval"
                ):
                    await asyncio.sleep(0.1)
                await handle.signal(signal_name, payload)
            try:
                await handle.result()
            except WorkflowFailureError:
                pass
            history = await handle.fetch_history()
    path = HISTORIES / f"{name}.json"
    if path.exists():
        sys.exit(f"{path} exists: recorded histories are never overwritten")
    path.write_text(history.to_json())
    print(f"recorded {path} ({len(history.events)} events)")


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter,
        search_attributes=search_attributes.ALL,
        dev_server_existing_path=temporal_binary(),
    )
    try:
        for name, (script, decisions) in SCENARIOS.items():
            if not (HISTORIES / f"{name}.json").exists():
                await record(env.client, name, script, decisions)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
