"""Peers: `python -m bench.peers [--turns 10,50] [--sizes 1000,20000]`.

The same scenario through our AgentWorkflow and through peers, on one dev server: a
run of N tool turns (the scripted model calls `report`, which returns S bytes), then
an answer. Reported per kind and (N, S): ms per turn, the bench process's CPU ms per
turn (worker, client and scripted model are all in it; not the dev server's) and the
history bytes of the whole run (every workflow run of a continue-as-new chain; not
what our payload store keeps outside history). One run each; in every other cell the
peer runs first. Single runs: read ratios near 1 as equal.

Peers so far: the hand-written loop (`bench.handwritten`: the whole conversation into
every model activity, pydantic converter, no payload store: as such a loop is usually
written; ours runs with its payload store, as designed). The Temporal OpenAI
Agents plugin and Pydantic AI's Temporal durability, in virtualenvs of their own, are
not in this bench yet.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
import uuid
from dataclasses import dataclass

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError
from temporalio.worker import Worker

from bench import common, handwritten
from durable_agents.testing import Call

OURS, HAND = "AgentWorkflow (payload store)", "hand-written loop"
TIMEOUT_S = 120.0


@dataclass
class Outcome:
    kind: str
    turns: int
    size: int
    wall_ms: float
    cpu_ms: float
    history_bytes: int
    completed: str
    """"completed", or why not."""


async def history_bytes(client: Client, handle: WorkflowHandle) -> int:
    """Bytes of every workflow run of the handle's chain."""
    total, run_id = 0, handle.first_execution_run_id
    while run_id:
        one = client.get_workflow_handle(handle.id, run_id=run_id)
        events = [e async for e in one.fetch_history_events()]
        total += sum(e.ByteSize() for e in events)
        last = events[-1]
        run_id = (
            last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
            if last.HasField("workflow_execution_continued_as_new_event_attributes")
            else None
        )
    return total


async def measure(client: Client, kind: str, turns: int, size: int, start) -> Outcome:
    began, cpu = time.perf_counter(), time.process_time()
    handle = await start()
    try:
        await asyncio.wait_for(handle.result(), TIMEOUT_S)
        completed = "completed"
    except WorkflowFailureError as err:  # e.g. the server ended it at its history limit
        completed = f"**failed**: {str(err.cause or err)[:120]}"
    except TimeoutError:
        completed = f"**stuck** after {TIMEOUT_S:g} s"
        with contextlib.suppress(RPCError):
            await handle.terminate("bench: stuck")
    wall, used = time.perf_counter() - began, time.process_time() - cpu
    return Outcome(
        kind, turns, size, wall * 1000 / turns, used * 1000 / turns,
        await history_bytes(client, handle), completed,
    )  # fmt: skip


async def compare(target: str, turns: int, size: int, *, first_peer: bool) -> list[Outcome]:
    def calls(turn: int) -> tuple[Call, ...]:
        return (Call("report", {"size": size, "part": turn}),)

    found = []
    with (
        tempfile.TemporaryDirectory() as store,
        common.scripted_model(common.model_turns(turns + 1, calls)) as model,
    ):
        ours = await Client.connect(target, data_converter=common.converter(store))
        plain = await Client.connect(target, data_converter=common.converter())
        queue = common.task_queue("peers")
        hand_queue = f"{queue}-hand"
        activities = handwritten.Activities(model)
        hand_worker = Worker(
            plain,
            task_queue=hand_queue,
            workflows=[handwritten.HandwrittenLoop],
            activities=[activities.call_model, activities.report],
        )
        async with common.agent_worker(ours, model, queue), hand_worker:

            async def start_ours() -> WorkflowHandle:
                return await common.start_run(ours, "history", queue)

            async def start_hand() -> WorkflowHandle:
                return await plain.start_workflow(
                    handwritten.WORKFLOW_TYPE,
                    "go",
                    id=f"{hand_queue}-{uuid.uuid4().hex[:8]}",
                    task_queue=hand_queue,
                )

            runs = [(ours, OURS, start_ours), (plain, HAND, start_hand)]
            if first_peer:
                runs.reverse()
            for client, kind, start in runs:
                found.append(await measure(client, kind, turns, size, start))
    return found


def table(outcomes: list[Outcome]) -> str:
    lines = [
        "| N turns | S bytes | kind | ms/turn | CPU ms/turn | history bytes | ours / it "
        "(ms, CPU, bytes) | outcome |",
        "|---:|---:|---|---:|---:|---:|---|---|",
    ]
    ours = {(o.turns, o.size): o for o in outcomes if o.kind == OURS}
    for o in outcomes:
        mine = ours[(o.turns, o.size)]
        if o.kind == OURS:
            ratio = "—"
        elif o.completed != "completed" or mine.completed != "completed":
            ratio = "— (a run did not complete)"
        else:
            ratio = (
                f"{mine.wall_ms / o.wall_ms:.2f}, {mine.cpu_ms / o.cpu_ms:.2f}, "
                f"{mine.history_bytes / o.history_bytes:.3f}"
            )
        lines.append(
            f"| {o.turns} | {o.size:,} | {o.kind} | {o.wall_ms:.1f} | {o.cpu_ms:.1f} | "
            f"{o.history_bytes:,} | {ratio} | {o.completed} |"
        )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="10,50", help="comma-separated N")
    parser.add_argument("--sizes", default="1000,20000", help="comma-separated S (bytes)")
    args = parser.parse_args()
    outcomes: list[Outcome] = []
    async with common.dev_server(common.converter()) as env:
        target = env.client.service_client.config.target_host
        for turns in (int(n) for n in args.turns.split(",")):
            for size in (int(s) for s in args.sizes.split(",")):
                print(f"peers: {turns} turns, {size:,}-byte outputs", flush=True)
                first_peer = len(outcomes) % 4 == 2  # every other cell, the peer runs first
                outcomes += await compare(target, turns, size, first_peer=first_peer)
    print(table(outcomes))


if __name__ == "__main__":
    asyncio.run(main())
