"""Run events and token streaming: `python -m bench.run_events [--runs N] [--turns T]`.

On one dev server and one worker, with the scripted model over HTTP (a 400-character
answer a turn, written in 8-character pieces 20 ms apart: 1 s of writing):

- history a turn adds (events, bytes), for runs of T tool turns: nobody following
  the events; one follower (`AgentClient.events`) from start to end; one follower
  and `stream=True` (text deltas published every 0.5 s);
- the time from a piece of text leaving the model server to a follower holding it in
  a `text_delta` event (p50, p99 over every piece of every streamed run).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import time
from datetime import timedelta

from durable_agents.activities import model_stream
from durable_agents.activities.registry import AgentRegistry
from durable_agents.client import events as run_events
from openai import AsyncOpenAI

from bench import common
from durable_agents import Agent, ToolContext, tool
from durable_agents.testing import Call, Reply, ScriptedModelServer
from durable_agents.worker import build_worker

TEXT = ("The answer, written slowly so that it streams. " * 9)[:400]


@tool
def look(n: int, ctx: ToolContext) -> str:
    """Look something up (instant)."""
    return f"found {n}"


plain = Agent(name="plain", instructions="", model="m", tools=[look], max_turns=100)
streaming = dataclasses.replace(plain, name="streaming", stream=True)


def responder(turns: int):
    def respond(request: dict) -> Reply:
        done = sum(1 for m in request["messages"] if m["role"] == "tool")
        if done >= turns:
            return Reply(TEXT, chunk_chars=8, chunk_delay_seconds=0.02)
        return Reply(
            TEXT, tool_calls=(Call("look", {"n": done}),), chunk_chars=8, chunk_delay_seconds=0.02
        )

    return respond


async def one_run(client, queue: str, agent: str, *, follow: bool) -> tuple[int, int, list]:
    handle = await common.start_run(client, agent, queue)
    received: list[tuple[float, str]] = []
    if follow:
        async for event in run_events.follow(client, handle.id):
            if event["type"] == "text_delta" and "call_id" not in event:
                received.append((time.monotonic(), event["text"]))
    await handle.result()
    history = await handle.fetch_history()
    return len(history.events), sum(e.ByteSize() for e in history.events), received


def latencies(sent: list[tuple[float, str]], received: list[tuple[float, str]]) -> list[float]:
    """For each piece sent, ms until the first delta that completes it arrived (the
    text of one model call, sent and received, in order)."""
    found, at, got = [], 0, 0
    position = 0
    for sent_at, piece in sent:
        position += len(piece)
        while got < position and at < len(received):
            got += len(received[at][1])
            at += 1
        if got >= position:
            found.append((received[at - 1][0] - sent_at) * 1000)
    return found


async def measure(runs: int, turns: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    server = ScriptedModelServer(responder(turns))
    with server:
        model = AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        async with common.dev_server(common.converter()) as env:
            queue = common.task_queue("events")
            worker = build_worker(
                env.client,
                registry=AgentRegistry([plain, streaming]),
                model_client=model,
                task_queue=queue,
            )
            async with worker:
                await one_run(env.client, queue, "streaming", follow=True)  # warm up
                for _ in range(runs):
                    for name, agent, follow in (
                        ("unfollowed", "plain", False),
                        ("followed", "plain", True),
                        ("streamed", "streaming", True),
                    ):
                        with server._lock:
                            server.streamed.clear()
                        events, size, received = await one_run(
                            env.client, queue, agent, follow=follow
                        )
                        found.setdefault(f"{name} events", []).append(events / (turns + 1))
                        found.setdefault(f"{name} bytes", []).append(size / (turns + 1))
                        if name == "streamed":
                            sent = _text_pieces(server.streamed)
                            found.setdefault("latency", []).extend(latencies(sent, received))
    return found


def _text_pieces(streamed: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """The pieces of answer text, in order (not those of tool arguments): each answer
    is `TEXT`, so a piece is text if it is the next piece of `TEXT`."""
    pieces, position = [], 0
    for at, piece in streamed:
        if TEXT.startswith(piece, position):
            pieces.append((at, piece))
            position = (position + len(piece)) % len(TEXT)
    return pieces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument(
        "--interval", type=float, default=None, help="seconds between delta batches"
    )
    args = parser.parse_args()
    if args.interval is not None:
        model_stream.INTERVAL = timedelta(seconds=args.interval)
    found = asyncio.run(measure(args.runs, args.turns))
    print(
        f"runs: {args.runs} of {args.turns} tool turns and an answer, deltas every "
        f"{model_stream.INTERVAL.total_seconds():g} s (medians, per model call)"
    )
    base_e, base_b = (
        common.median(found["unfollowed events"]),
        common.median(found["unfollowed bytes"]),
    )
    for name in ("unfollowed", "followed", "streamed"):
        events, size = common.median(found[f"{name} events"]), common.median(found[f"{name} bytes"])
        print(
            f"  {name:10s}: {events:5.1f} history events, {size:6.0f} bytes "
            f"(+{events - base_e:.1f} events, +{size - base_b:.0f} bytes)"
        )
    latency = found["latency"]
    print(
        f"model text leaves the server -> follower holds it: p50 "
        f"{common.percentile(latency, 50):.0f} ms, p99 {common.percentile(latency, 99):.0f} ms "
        f"({len(latency)} pieces)"
    )


if __name__ == "__main__":
    main()
