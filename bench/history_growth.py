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

from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter

from activities import Agent
from activities.registry import AgentRegistry
from bench import common
from bench.agents import report
from client.payload_store import with_payload_store
from examples.scripted_openai import Call
from worker import build_worker
from workflows import contract
from workflows.payloads import AgentInput, AgentResult
from workflows.state import RunState

SIZE = 20_000


def report_calls(turn: int) -> tuple[Call, ...]:
    return (Call("report", {"size": SIZE, "part": turn}),)


async def measure(client: Client, turns: int, label: str) -> dict:
    agent = Agent(
        name="reporter",
        instructions="read every part",
        tools=[report],
        max_turns=turns + 1,
        turns_per_workflow_run=1000,
    )
    with common.scripted_model(common.model_turns(turns, report_calls)) as model:
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
                per_turn.extend(b for _, b in common.per_turn(history.events))
    return {
        "label": label,
        "wall": wall,
        "runs": run_bytes,
        "per_turn": per_turn,
        "turns": state.turn,
        "error": error,
    }


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
        async with common.dev_server(converter) as env:
            with_store = await measure(env.client, args.turns, "with the payload store")
            stored = sum(p.stat().st_size for p in Path(store).rglob("*") if p.is_file())
            print_result(with_store, stored)
            naive_client = await Client.connect(
                env.client.service_client.config.target_host,
                data_converter=pydantic_data_converter,
            )
            naive = await measure(naive_client, args.naive_turns, "naive: no payload store")
            print_result(naive, None)


if __name__ == "__main__":
    asyncio.run(main())
