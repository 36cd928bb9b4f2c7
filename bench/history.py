"""4. History (and issue 5's figures): `python -m bench.history [--quick] [--turns 200]`.

Runs of the `history` agent (continue-as-new after 300 model calls, the default, or when
Temporal suggests it), each tool turn returning SIZE bytes:
- 20 KB outputs, `--turns` tool turns then an answer (issue 5), and 1 KB outputs,
  100 turns (issue 7), with the designed converter: pydantic + codec + payload
  store (ExternalStorage, directory driver, default 16 KiB threshold);
- in a full run, the 1 KB run again with a 128 KiB threshold (the old default), and the
  naive design for contrast: 20 KB outputs, no payload store, `--naive-turns`
  (120) turns. A run whose workflow task fails twice (Temporal would retry it
  forever, e.g. a payload over its 2 MB limit) is stopped and reported with
  the failure and the last turn it completed.

For each run: events and bytes of turns 10, 100 and 200 (`common.per_turn`: from
one `call_model` scheduling to the next), each Temporal run's history, the
continue-as-new switches, bytes per turn, the ratio turn 200 (or the last tool
turn) / turn 10, and the wall time. One run each: history sizes do not vary
between runs; the wall times are single runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from pathlib import Path

from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

from bench import common, report, report_data
from bench.report import Section
from durable_agents.testing import Call

OTHER_THRESHOLD = 128 * 1024
"""The payload-store threshold measured as an option (the default was 128 KiB until
this bench showed 16 KiB keeps history flat at the same wall time)."""
CAUSE_PREFIX = "WORKFLOW_TASK_FAILED_CAUSE_"
STALL_S = 60.0
"""Seconds a run may take beyond one per turn before it is called stuck."""
CHECK_S = 3.0
"""Seconds between checks of a running run's history for failed workflow tasks."""


async def history(client: Client, *, size: int, turns: int, label: str = "") -> dict:
    """One run of `turns` tool turns with `size`-byte tool outputs, through `client`."""

    def calls(turn: int) -> tuple[Call, ...]:
        return (Call("report", {"size": size, "part": turn}),)

    with common.scripted_model(common.model_turns(turns + 1, calls)) as model:
        queue = common.task_queue("history")
        async with common.agent_worker(client, model, queue):
            began = time.perf_counter()
            handle = await common.start_run(client, "history", queue)
            failure = await wait_outcome(client, handle, timeout=STALL_S + turns)
            wall = time.perf_counter() - began
            per_turn: list[tuple[int, int]] = []
            runs = []
            async for events in run_histories(client, handle):
                per_turn.extend(common.per_turn(events))
                runs.append((len(events), sum(e.ByteSize() for e in events)))
    return {
        "label": label,
        "size": size,
        "turns": turns,
        "per_turn": per_turn,
        "runs": runs,
        "wall": wall,
        "failure": failure,
    }


async def run_histories(client: Client, handle: WorkflowHandle):
    """The events of each Temporal run of the workflow, following continue-as-new."""
    run_id: str | None = handle.first_execution_run_id or handle.run_id
    while run_id:
        events = (await client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()).events
        yield events
        last = events[-1]
        continued = last.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
        attrs = last.workflow_execution_continued_as_new_event_attributes
        run_id = attrs.new_execution_run_id if continued else None


async def wait_outcome(client: Client, handle: WorkflowHandle, *, timeout: float) -> str | None:
    """None once the run completes; why not, if it fails, if its workflow task has failed
    twice (Temporal retries it forever: the run is stuck) or after `timeout` s."""
    result = asyncio.ensure_future(handle.result())
    deadline = time.monotonic() + timeout
    try:
        while not (await asyncio.wait({result}, timeout=CHECK_S))[0]:
            failures = await task_failures(client, handle)
            if len(failures) >= 2 or time.monotonic() > deadline:
                with contextlib.suppress(RPCError):
                    await handle.terminate("bench: the run is stuck")
                return failures[-1] if failures else f"no result after {timeout:.0f} s"
        result.result()
        return None
    except WorkflowFailureError as err:
        return f"failed: {err.cause}"
    finally:
        result.cancel()


async def task_failures(client: Client, handle: WorkflowHandle) -> list[str]:
    """The workflow-task failures of the run's latest Temporal run."""
    out = []
    async for event in client.get_workflow_handle(handle.id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
            attrs = event.workflow_task_failed_event_attributes
            cause = WorkflowTaskFailedCause.Name(attrs.cause).removeprefix(CAUSE_PREFIX)
            out.append(f"workflow task failed ({cause}): {attrs.failure.message[:200]}")
    return out


async def section(
    target: str, *, quick: bool, turns: int | None = None, naive_turns: int = 120
) -> Section:
    """Measurement 4 and issue 5's figures (a client per converter, one server)."""
    turns = turns or (100 if quick else 200)
    runs = []
    with tempfile.TemporaryDirectory() as store:
        client = await Client.connect(target, data_converter=common.converter(store))
        for size, n in ((20_000, turns), (1_000, 100)):
            print(f"history: {n} turns, {size:,}-byte tool outputs, payload store", flush=True)
            runs.append(await history(client, size=size, turns=n, label="payload store"))
        stored = sum(p.stat().st_size for p in Path(store).rglob("*") if p.is_file())
        if not quick:
            print(f"history option: payload threshold {OTHER_THRESHOLD:,} bytes", flush=True)
            converter = common.converter(store, threshold=OTHER_THRESHOLD)
            small = await Client.connect(target, data_converter=converter)
            label = f"store, threshold {OTHER_THRESHOLD // 1024} KiB"
            runs.append(await history(small, size=1_000, turns=100, label=label))
    if not quick:
        print(f"history: naive, {naive_turns} turns, no payload store", flush=True)
        naive = await Client.connect(target, data_converter=common.converter())
        runs.append(await history(naive, size=20_000, turns=naive_turns, label="naive: no store"))
    return report_data.history_section(runs, stored)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="4. History, and issue 5's figures")
    parser.add_argument("--quick", action="store_true", help="100 turns, no option, no naive")
    parser.add_argument("--turns", type=int, default=None, help="20 KB turns (default 200)")
    parser.add_argument("--naive-turns", type=int, default=120)
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        target = env.client.service_client.config.target_host
        measured = await section(
            target, quick=args.quick, turns=args.turns, naive_turns=args.naive_turns
        )
        print(report.alone(measured))


if __name__ == "__main__":
    asyncio.run(main())
