"""4. History and 5. state: `python -m bench.history [--quick]`.

History: a run of 100 tool turns (then an answer) of the `history` agent, whose
tool returns 1 KB or 20 KB; events and bytes per turn (`common.per_turn`: from
one `call_model` scheduling to the next) at turns 10 and 100. The converter is
the designed one: pydantic + codec + the payload store (ExternalStorage,
directory driver, default 128 KiB threshold).

State: a run resumed from a synthetic snapshot of 10, 100 and 1,000 turns
(`bench.snapshot_size.state_of`: an approved call with ~200 characters of
arguments and a 1 KB result per turn) and parked on one more approval;
`get_state` / `get_status` query latency and the snapshot's size.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from temporalio.client import Client

from bench import common, report, snapshot_size
from client.codec import codec_data_converter
from client.payload_store import with_payload_store
from examples.scripted_openai import Call
from workflows import contract
from workflows.payloads import StatusView
from workflows.snapshot import dumps
from workflows.state import AssistantMessage, RunState, RunStatus, ToolCall

QUERIES = 20
SMALL_THRESHOLD = 16 * 1024
"""The payload-store threshold measured as an option (default: 128 KiB)."""


async def history(client: Client, *, size: int, turns: int) -> dict:
    """One run of `turns` tool turns with `size`-byte tool outputs."""

    def calls(turn: int) -> tuple[Call, ...]:
        return (Call("report", {"size": size, "part": turn}),)

    with common.scripted_model(common.model_turns(turns + 1, calls)) as model:
        queue = common.task_queue("history")
        async with common.agent_worker(client, model, queue):
            began = time.perf_counter()
            handle = await common.start_run(client, "history", queue)
            result = await handle.result()
            wall = time.perf_counter() - began
            state = await handle.query(contract.QUERY_GET_STATE, result_type=RunState)
            counted: list[tuple[int, int]] = []
            totals = []
            for run_id in state.workflow_runs:
                events = (
                    await client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
                ).events
                counted.extend(common.per_turn(events))
                totals.append((len(events), sum(e.ByteSize() for e in events)))
    assert result.turn == turns + 1, result
    return {"size": size, "per_turn": counted, "runs": totals, "wall": wall}


def parked(turns: int) -> RunState:
    """A `turns`-turn snapshot whose next step is to wait for one more approval."""
    state = snapshot_size.state_of(turns)
    call = ToolCall(call_id="pending", tool="search", arguments="{}", needs_approval=True)
    # Proposed now: the tool's approval timeout (1 h) must not have passed already.
    at = datetime.now(UTC)
    state.items.append(AssistantMessage(turn=turns + 1, tool_calls=[call], at=at))
    state.turn, state.max_turns = turns + 1, turns + 2
    return state


async def state_queries(client: Client, *, turns: int) -> dict:
    """Query latencies of a run holding a `turns`-turn state."""
    snapshot = parked(turns)
    with common.scripted_model(common.model_turns(1, lambda t: ())) as model:
        queue = common.task_queue("state")
        async with common.agent_worker(client, model, queue):
            began = time.perf_counter()
            handle = await common.start_run(client, "bench", queue, text="", resume_from=snapshot)
            for _ in range(1200):
                status = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
                if status.status == RunStatus.AWAITING_APPROVAL:
                    break
                assert not status.status.is_final, status
                await asyncio.sleep(0.05)
            start = time.perf_counter() - began
            timings: dict[str, list[float]] = {"state": [], "status": []}
            for _ in range(QUERIES):
                for name, query, kind in (
                    ("state", contract.QUERY_GET_STATE, RunState),
                    ("status", contract.QUERY_GET_STATUS, StatusView),
                ):
                    t0 = time.perf_counter()
                    got = await handle.query(query, result_type=kind)
                    timings[name].append((time.perf_counter() - t0) * 1000)
                    if name == "state":
                        got_state = got
            await handle.terminate("bench done")
    assert len(got_state.items) == len(snapshot.items)
    return {
        "turns": turns,
        "items": len(snapshot.items),
        "file": len(dumps(got_state).encode()),
        "compact": len(got_state.model_dump_json().encode()),
        "dumps_ms": snapshot_size.median_ms(lambda: dumps(got_state)),
        "start_s": start,
        **timings,
    }


async def section(target: str, *, quick: bool) -> str:
    """The markdown of measurements 4 and 5 (on a client with the payload store)."""
    with tempfile.TemporaryDirectory() as store:
        client = await Client.connect(target, data_converter=common.converter(store))
        runs = []
        for size in (1_000, 20_000):
            print(f"history: 100 turns, {size:,}-byte tool outputs", flush=True)
            runs.append(await history(client, size=size, turns=100))
        stored = sum(p.stat().st_size for p in Path(store).rglob("*") if p.is_file())
        if not quick:
            print(f"history option: payload threshold {SMALL_THRESHOLD:,} bytes", flush=True)
            env = {"AGENT_PAYLOAD_STORE": store, "AGENT_PAYLOAD_THRESHOLD": str(SMALL_THRESHOLD)}
            small = await Client.connect(
                target, data_converter=with_payload_store(codec_data_converter(None), env)
            )
            option = await history(small, size=1_000, turns=100)
            option["label"] = f"threshold {SMALL_THRESHOLD // 1024} KiB"
            runs.append(option)
        states = []
        for turns in (10, 100) if quick else (10, 100, 1_000):
            print(f"state: get_state on a {turns}-turn run", flush=True)
            states.append(await state_queries(client, turns=turns))
    return report.history_section(runs, stored) + "\n\n" + report.state_section(states)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        print(await section(env.client.service_client.config.target_host, quick=args.quick))


if __name__ == "__main__":
    asyncio.run(main())
