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
from worker import build_worker, temporal_binary
from workflows import contract, search_attributes
from workflows.payloads import AgentInput, DecisionSignal, EndSessionSignal, MessageSignal

HISTORIES = Path(__file__).parent / "histories"
AWAITING = "awaiting_approval"

SCENARIOS = {
    # name: (agent, session, model script, [(status to wait for, signal, payload)])
    "approve_always_reject_v1": (
        "assistant",
        False,
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
        [
            (
                AWAITING,
                contract.SIGNAL_APPROVE,
                DecisionSignal(call_id="c2", approver="ann", always=True),
            )
        ],
    ),
    "reject_then_model_400_v1": (
        "assistant",
        False,
        [
            Reply(tool_calls=(Call("send_email", {"to": "x", "body": "y"}, "c1"),)),
            Fault(400, "invalid_request_error: bad"),
        ],
        [
            (
                AWAITING,
                contract.SIGNAL_REJECT,
                DecisionSignal(call_id="c1", approver="bob", reason="no"),
            )
        ],
    ),
    # The first workflow run of a session that continues as new after 2 model calls.
    "session_continue_as_new_v1": (
        "concierge",
        True,
        [Reply(content="a"), Reply(content="b"), Reply(content="c")],
        [
            ("awaiting_input", contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="two")),
            ("awaiting_input", contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="three")),
            ("awaiting_input", contract.SIGNAL_END_SESSION, EndSessionSignal()),
        ],
    ),
}


async def record(
    client: Client, name: str, agent: str, session: bool, script: list, actions: list
) -> None:
    with ScriptedModelServer() as server:
        server.script(*script)
        model = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        worker = build_worker(
            client,
            registry=AgentRegistry.from_modules(["tests.agents"]),
            model_client=model,
            task_queue=f"record-{name}",
        )
        async with worker:
            handle = await client.start_workflow(
                contract.WORKFLOW_TYPE,
                AgentInput(agent=agent, input="go", session=session),
                id=f"history-{name}",
                task_queue=f"record-{name}",
            )
            for status, signal_name, payload in actions:
                while (await handle.query(contract.QUERY_GET_STATUS)).get("status") != status:
                    await asyncio.sleep(0.1)
                await handle.signal(signal_name, payload)
            try:
                await handle.result()
            except WorkflowFailureError:
                pass
            first_run = client.get_workflow_handle(handle.id, run_id=handle.first_execution_run_id)
            history = await first_run.fetch_history()
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
        for name, (agent, session, script, actions) in SCENARIOS.items():
            if not (HISTORIES / f"{name}.json").exists():
                await record(env.client, name, agent, session, script, actions)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
