"""Payload conversion cost: `python -m bench.conversion [--quick]`. No server.

The two payloads that grow with a run, for synthetic states of N turns
(`bench.states.state_of`): the `call_model` input of the next turn
(`loop.model_request`: the workflow encodes it, the activity decodes it, once
per turn) and the RunState (carried by continue-as-new, returned by
`get_state`). Each through Temporal's pydantic payload converter alone
(`to_payloads` / `from_payloads`), worker.py's data converter (pydantic + the
codec, encryption off, no payload store: `encode` / `decode`), and the same
with AES-256-GCM encryption on (a key made for the bench). Medians of REPS.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from durable_agents.workflows import loop
from pydantic import BaseModel
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter

from bench import common, report_data, states
from bench.report import Section
from durable_agents.dataplane.codec import data_converter_from_env, new_key_entry

REPS = 20


async def median_ms(operation: Callable[[], Awaitable[object]], reps: int) -> float:
    times = []
    for _ in range(reps):
        began = time.perf_counter()
        await operation()
        times.append(time.perf_counter() - began)
    return common.median(times) * 1000


async def round_trip(converter: DataConverter, value: BaseModel, reps: int) -> tuple[float, float]:
    """Median ms of `encode` and of `decode` of `value` (payload converter, then codec)."""
    payloads = await converter.encode([value])
    encode = await median_ms(lambda: converter.encode([value]), reps)
    decode = await median_ms(lambda: converter.decode(payloads, [type(value)]), reps)
    return encode, decode


def pydantic_only(value: BaseModel, reps: int) -> tuple[float, float, int]:
    """Median ms of `to_payloads` and `from_payloads`, and the payload's bytes."""
    converter = pydantic_data_converter.payload_converter
    payloads = converter.to_payloads([value])
    to = common.median_ms(lambda: converter.to_payloads([value]), reps)
    back = common.median_ms(lambda: converter.from_payloads(payloads, [type(value)]), reps)
    return to, back, payloads[0].ByteSize()


async def measure(turns: list[int], *, reps: int = REPS) -> list[dict]:
    with_keys = {"AGENT_PAYLOAD_STORE": "off", "AGENT_CODEC_KEYS": new_key_entry("bench")}
    converters = {"codec": common.converter(), "aes": data_converter_from_env(with_keys)}
    rows = []
    for n in turns:
        state = states.state_of(n)
        for name, value in (("`call_model` input", loop.model_request(state)), ("RunState", state)):
            to, back, size = pydantic_only(value, reps)
            row = {"payload": name, "turns": n, "bytes": size, "pydantic": (to, back)}
            for label, converter in converters.items():
                row[label] = await round_trip(converter, value, reps)
            rows.append(row)
    return rows


async def section(*, quick: bool) -> Section:
    """The payload-conversion table."""
    print("payload conversion: pydantic, codec, AES-GCM", flush=True)
    return report_data.conversion_section(await measure([10, 100] if quick else [10, 100, 1000]))


async def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Payload conversion cost")
    parser.add_argument("--quick", action="store_true", help="10 and 100 turns only")
    args = parser.parse_args()
    print((await section(quick=args.quick)).markdown)


if __name__ == "__main__":
    asyncio.run(main())
