"""5. State: `python -m bench.state_queries [--quick]`.

A run resumed from a synthetic snapshot of 10, 100 and 1,000 turns
(`bench.states.parked`: an approved call with ~200 characters of arguments and
a 1 KB result per turn, then one more call awaiting approval); `get_state` and
`get_status` query latency (QUERIES each, client-side wall time; `get_state`
reads the whole state, page by page: `client.state_reader`), the
snapshot's size, and `dumps` / `loads` of it (median of 20, no server). The
designed converter: pydantic + codec + payload store.
"""

from __future__ import annotations

import asyncio
import tempfile
import time

from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import StatusView
from durable_agents.workflows.snapshot import dumps, loads
from durable_agents.workflows.state import RunStatus
from temporalio.client import Client

from bench import common, report_data, states
from bench.report import Section

QUERIES = 20


async def wait_parked(handle) -> None:
    for _ in range(1200):
        status = await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
        if status.status == RunStatus.AWAITING_APPROVAL:
            return
        assert not status.status.is_final, status
        await asyncio.sleep(0.05)
    raise TimeoutError("the resumed run did not park within 60 s")


async def state_queries(client: Client, *, turns: int) -> dict:
    """Query latencies of a run holding a `turns`-turn state."""
    snapshot = states.parked(turns)
    with common.scripted_model(common.model_turns(1, lambda t: ())) as model:
        queue = common.task_queue("state")
        async with common.agent_worker(client, model, queue):
            began = time.perf_counter()
            handle = await common.start_run(client, "bench", queue, text="", resume_from=snapshot)
            await wait_parked(handle)
            start = time.perf_counter() - began
            timings: dict[str, list[float]] = {"state": [], "status": []}
            for _ in range(QUERIES):
                t0 = time.perf_counter()
                got_state = await read_state(querying(handle))  # every page of it
                timings["state"].append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                await handle.query(contract.QUERY_GET_STATUS, result_type=StatusView)
                timings["status"].append((time.perf_counter() - t0) * 1000)
            await handle.terminate("bench done")
    assert len(got_state.items) == len(snapshot.items)
    text = dumps(got_state)
    return {
        "turns": turns,
        "items": len(snapshot.items),
        "file": len(text.encode()),
        "compact": len(got_state.model_dump_json().encode()),
        "dumps_ms": common.median_ms(lambda: dumps(got_state)),
        "loads_ms": common.median_ms(lambda: loads(text)),
        "start_s": start,
        **timings,
    }


async def section(target: str, *, quick: bool) -> Section:
    """Measurement 5, with the designed converter (the payload store on)."""
    measured = []
    with tempfile.TemporaryDirectory() as store:
        client = await Client.connect(target, data_converter=common.converter(store))
        for turns in (10, 100) if quick else (10, 100, 1_000):
            print(f"state: get_state on a {turns}-turn run", flush=True)
            measured.append(await state_queries(client, turns=turns))
    return report_data.state_section(measured)


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="5. State")
    parser.add_argument("--quick", action="store_true", help="10 and 100 turns only")
    args = parser.parse_args()
    async with common.dev_server(common.converter()) as env:
        target = env.client.service_client.config.target_host
        print((await section(target, quick=args.quick)).markdown)


if __name__ == "__main__":
    asyncio.run(main())
