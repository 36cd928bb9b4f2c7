"""The Temporal server restarts (same database) while runs wait for approval and
tools run: every run completes, each side effect once."""

from __future__ import annotations

import asyncio
import time

import pytest
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.state import RunStatus

from tests.chaos import ledger
from tests.chaos.conftest import plan
from tests.chaos.harness import wait_until
from tests.chaos.runs import approve_pending, is_final, start, task_failures

pytestmark = pytest.mark.chaos_slow

DOWN = 20
"""Seconds the server stays down: longer than a tool's heartbeat timeout."""


async def test_server_restart_with_runs_waiting_and_running(server, workers, ledger_path, report):
    client = await server.client()
    await workers.start("a")
    waiting = [
        await start(
            client, workers.task_queue, plan("approved_charge", {"amount": 1, "seconds": 0})
        )
        for _ in range(5)
    ]
    running = [
        await start(client, workers.task_queue, plan("charge", {"amount": 1, "seconds": 4}))
        for _ in range(3)
    ]
    await wait_until(
        lambda: len({a[0] for a in ledger.attempts(ledger_path)}) >= 3, 30, "tools to start"
    )
    await server.stop()
    await asyncio.sleep(DOWN)
    await server.start()
    back = time.monotonic()
    client = await server.client()
    handles = [client.get_workflow_handle(h.id, result_type=AgentResult) for h in waiting + running]

    async def all_done() -> bool:
        for handle in handles:
            await approve_pending(handle)
        return all([await is_final(h) for h in handles])

    await wait_until(all_done, 180, "every run to finish", interval=0.5)
    recovered = time.monotonic() - back
    for handle in handles:
        assert (await handle.result()).status is RunStatus.COMPLETED
        assert len(ledger.effects(ledger_path, handle.id)) == 1
        assert await task_failures(handle) == 0
    report.add(
        f"Temporal server down {DOWN} s (restarted, same database): 5 runs waiting, "
        "3 tools running",
        "all completed, each side effect once",
        f"all finished {recovered:.1f} s after the server was back",
    )
