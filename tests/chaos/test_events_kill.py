"""kill -9 of the worker that runs a run while someone follows its events: the run goes
on on another worker (its event log rebuilt from history, the same), the follower sees
every event once and in order, and one that reconnects from its last `seq` misses
nothing and sees nothing twice."""

from __future__ import annotations

import asyncio

import pytest
from durable_agents.client import events
from durable_agents.workflows.state import RunStatus

from tests.chaos import ledger
from tests.chaos.conftest import plan
from tests.chaos.harness import wait_until
from tests.chaos.runs import start


@pytest.mark.chaos_slow  # 18 s: `make chaos` (tests/integration/test_run_events.py keeps the rest)
async def test_followers_miss_nothing_across_a_worker_kill(client, workers, ledger_path, report):
    await workers.start("a")
    await workers.start("b")
    handle = await start(client, workers.task_queue, plan("charge", {"amount": 5, "seconds": 4}))
    whole: list[dict] = []
    first_part: list[dict] = []

    async def follow_all() -> None:
        async for event in events.follow(client, handle.id):
            whole.append(event)

    async def follow_until_the_tool() -> None:  # then it drops, and comes back later
        async for event in events.follow(client, handle.id):
            first_part.append(event)
            if event["type"] == "tool_started":
                return

    following = asyncio.create_task(follow_all())
    await follow_until_the_tool()
    [(_, _, victim, _)] = await wait_until(
        lambda: ledger.attempts(ledger_path, handle.id), 30, "the tool's first attempt"
    )
    await next(w for w in workers.started if w.pid == victim).kill()
    rest = [e async for e in events.follow(client, handle.id, after=first_part[-1]["seq"])]
    result = await handle.result()
    await asyncio.wait_for(following, 30)
    assert result.status is RunStatus.COMPLETED
    assert [e["seq"] for e in whole] == list(range(1, len(whole) + 1))
    assert whole[-1]["type"] == "run_finished"
    assert first_part + rest == whole  # reconnected from its last seq: the same events
    report.add(
        "kill -9 of the run's worker while 2 follow its events (one reconnects)",
        "completed",
        f"{len(whole)} events, each once and in order, for both followers",
    )
