"""History growth of a long run: `python -m bench.history_growth [--turns 200]`.

A scripted run of N turns (one 20 KB tool output each) on the dev server, once
with the payload store (Temporal's ExternalStorage, local directory driver)
and once without it (the naive design). Prints, for each: history bytes per
Temporal run and per turn, the ratio of history bytes per turn at the last
turn to turn 10, the continue-as-new switches, the bytes in the store, and
the wall time.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from pathlib import Path

from openai import AsyncOpenAI
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from activities import Agent, tool
from activities.registry import AgentRegistry
from client.payload_store import with_payload_store
from examples.scripted_openai import Call, Reply, ScriptedModelServer
from worker import build_worker, temporal_binary
from workflows import contract, search_attributes
from workflows.payloads import AgentInput, AgentResult
from workflows.state import RunState


@tool
def report(part: int) -> str:
    """Return part `part` of a 20 KB report."""
    return f"part {part}: " + "x" * 20_000


def responder_for(turns: int):
    def respond(request: dict) -> Reply:
        done = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if done + 1 >= turns:
            return Reply(content="finished")
        return Reply(tool_calls=(Call("report", {"part": done + 1}),))

    return respond


async def measure(client: Client, turns: int, label: str) -> dict:
    agent = Agent(
        name="reporter",
        instructions="read every part",
        tools=[report],
        max_turns=turns + 1,
        turns_per_workflow_run=1000,
    )
    with ScriptedModelServer(responder_for(turns)) as server:
        model = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        task_queue = f"growth-{uuid.uuid4().hex[:6]}"
        worker = build_worker(
            client, registry=AgentRegistry([agent]), model_client=model, task_queue=task_queue
        )
        async with worker:
            began = time.perf_counter()
            handle = await client.start_workflow(
                contract.WORKFLOW_TYPE,
                AgentInput(agent="reporter", input="go"),
                id=f"growth-{label}-{uuid.uuid4().hex[:6]}",
                task_queue=task_queue,
                result_type=AgentResult,
            )
            error = None
            try:
                await handle.result()
            except WorkflowFailureError as err:
                error = str(err.cause)
            wall = time.perf_counter() - began
            state = await handle.query(contract.QUERY_GET_STATE, result_type=RunState)
            per_turn: list[int] = []
            run_bytes = []
            for run_id in state.workflow_runs:
                history = await client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
                run_bytes.append(sum(e.ByteSize() for e in history.events))
                per_turn.extend(_bytes_per_turn(history.events))
    return {
        "label": label,
        "wall": wall,
        "runs": run_bytes,
        "per_turn": per_turn,
        "turns": state.turn,
        "error": error,
    }


def _bytes_per_turn(events) -> list[int]:
    """History bytes from one call_model scheduling to the next."""
    turns: list[int] = []
    for event in events:
        starts_turn = (
            event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
            and event.activity_task_scheduled_event_attributes.activity_type.name == "call_model"
        )
        if starts_turn:
            turns.append(0)
        if turns:
            turns[-1] += event.ByteSize()
    return turns


def print_result(result: dict, store_bytes: int | None) -> None:
    per_turn = result["per_turn"]
    print(f"\n## {result['label']}", flush=True)
    if result["error"]:
        print(f"run FAILED at turn {result['turns'] + 1}: {result['error'][:160]}")
    print(f"turns completed:             {result['turns']}")
    print(f"workflow runs (switches):    {len(result['runs'])} ({len(result['runs']) - 1})")
    print(f"history bytes per run:       {', '.join(f'{b:,}' for b in result['runs'])}")
    print(f"history bytes, total:        {sum(result['runs']):,}")
    print(f"history bytes per turn:      mean {sum(per_turn) // max(len(per_turn), 1):,}")
    if len(per_turn) >= 10:
        last = per_turn[-2] if len(per_turn) > 10 else per_turn[-1]  # the final turn has no tool
        print(f"  at turn 10:                {per_turn[9]:,}")
        print(f"  at turn {len(per_turn) - 1}:               {last:,}")
        print(f"  ratio turn {len(per_turn) - 1} / turn 10:   {last / per_turn[9]:.2f}")
    if store_bytes is not None:
        print(f"payload store bytes:         {store_bytes:,}")
    print(f"wall time:                   {result['wall']:.1f} s", flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument(
        "--naive-turns",
        type=int,
        default=60,
        help="turns of the naive run: near 100 its 2 MB continue-as-new input exceeds "
        "Temporal's payload limit and its workflow task fails on every retry",
    )
    args = parser.parse_args()
    print("# History growth: one 20 KB tool output per turn")
    with tempfile.TemporaryDirectory() as store:
        converter = with_payload_store(pydantic_data_converter, {"AGENT_PAYLOAD_STORE": store})
        env = await WorkflowEnvironment.start_local(
            data_converter=converter,
            search_attributes=search_attributes.ALL,
            dev_server_existing_path=temporal_binary(),
        )
        try:
            with_store = await measure(env.client, args.turns, "with the payload store")
            stored = sum(p.stat().st_size for p in Path(store).rglob("*") if p.is_file())
            print_result(with_store, stored)
            naive_client = await Client.connect(
                env.client.service_client.config.target_host,
                data_converter=pydantic_data_converter,
            )
            naive = await measure(naive_client, args.naive_turns, "naive: no payload store")
            print_result(naive, None)
        finally:
            await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
