"""kill -9 of a worker while a tool or a model call runs: another worker takes the
call over within seconds (heartbeats), the run completes, each keyed side effect
happens once."""

from __future__ import annotations

import asyncio
import random
import time

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.workflows.state import RunStatus
from temporalio.worker import Replayer

from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.worker import STICKY_TIMEOUT
from tests.chaos import ledger
from tests.chaos.conftest import plan
from tests.chaos.harness import summary, wait_until
from tests.chaos.runs import (
    approve,
    approve_pending,
    diagnosis,
    is_final,
    retry_causes,
    start,
    status,
    task_failures,
)

FAILOVER_TARGET = 10.0
"""Seconds from kill -9 to the call's next attempt on another worker (the issue's goal)."""


async def _tool_failover(
    client, workers, ledger_path, tool: str, timeout: float
) -> tuple[float, list[str]]:
    """Kill the worker running `tool`; seconds until another worker retried it, and what
    ended the killed attempt for the server (`runs.retry_causes`)."""
    await workers.start("a")
    await workers.start("b")
    handle = await start(client, workers.task_queue, plan(tool, {"amount": 5, "seconds": 4}))
    [(key, _, victim, _)] = await wait_until(
        lambda: ledger.attempts(ledger_path, handle.id), 30, "the tool's first attempt"
    )
    killed_at = await next(w for w in workers.started if w.pid == victim).kill()
    retried = await wait_until(
        lambda: [a for a in ledger.attempts(ledger_path, handle.id) if a[2] != victim],
        timeout,
        "the tool's retry on the other worker",
    )
    result = await handle.result()
    assert result.status is RunStatus.COMPLETED
    assert [e[0] for e in ledger.effects(ledger_path, handle.id)] == [key]  # applied once
    assert await task_failures(handle) == 0
    return retried[0][3] - killed_at, await retry_causes(handle, contract.ACTIVITY_RUN_TOOL)


async def test_tool_fails_over_within_seconds_after_kill_9(client, workers, ledger_path, report):
    failover, causes = await _tool_failover(client, workers, ledger_path, "charge", 30)
    # Within seconds by cause, not by a clock a loaded machine stretches: the missed
    # heartbeat (5 s) ended the killed attempt, not its start-to-close timeout (minutes).
    assert causes == ["TIMEOUT_TYPE_HEARTBEAT"], causes
    report.add(
        "kill -9 mid-tool, 2 workers (heartbeat timeout 5 s)",
        "completed, side effect once",
        f"retried on the other worker {failover:.1f} s after the kill",
    )


@pytest.mark.chaos_slow
async def test_tool_without_heartbeats_waits_for_its_start_to_close(
    client, workers, ledger_path, report
):
    failover, causes = await _tool_failover(client, workers, ledger_path, "charge_silently", 120)
    assert causes == ["TIMEOUT_TYPE_START_TO_CLOSE"], causes  # what heartbeats fixed
    assert failover > FAILOVER_TARGET  # only the 60 s timeout told
    report.add(
        "kill -9 mid-tool, no heartbeat timeout (before this change)",
        "completed, side effect once",
        f"retried {failover:.1f} s after the kill (its 60 s start-to-close timeout)",
    )


@pytest.mark.chaos_slow  # make test keeps the tool's failover after kill -9
async def test_model_call_fails_over_within_seconds_after_kill_9(client, workers, endpoint, report):
    a, b = await workers.start("a"), await workers.start("b")
    text = plan("charge", {"amount": 1, "seconds": 0}, model_delay=3)
    handle = await start(client, workers.task_queue, text)
    await wait_until(lambda: endpoint.routes, 30, "the first model request")
    first_route = endpoint.routes[0]
    victim, survivor = (a, b) if first_route == "/a" else (b, a)
    killed_at = await victim.kill()
    await wait_until(
        lambda: f"/{survivor.name}" in endpoint.routes, 30, "the model call on the other worker"
    )
    failover = time.time() - killed_at
    assert (await handle.result()).status is RunStatus.COMPLETED
    # in seconds by cause: the missed heartbeat ended the killed attempt (not a clock)
    assert await retry_causes(handle, contract.ACTIVITY_CALL_MODEL) == ["TIMEOUT_TYPE_HEARTBEAT"]
    report.add(
        "kill -9 mid model call, 2 workers",
        "completed",
        f"model request re-sent by the other worker {failover:.1f} s after the kill "
        "(answers take 3 s)",
    )


@pytest.mark.chaos_slow
async def test_random_kills_across_twenty_runs(client, workers, ledger_path, report):
    """Seeded: runs with slow tools and approvals; a worker is killed every few seconds
    at whatever it is doing (model call, tool, waiting, handler) and replaced."""
    rng = random.Random(20261125)
    await workers.start("w0")
    await workers.start("w1")
    handles = []
    for n in range(20):
        tool = "approved_charge" if n % 3 == 0 else "charge"
        args = {"amount": n, "seconds": rng.uniform(0.5, 3)}
        text = plan(tool, args, model_delay=rng.uniform(0, 1.5))
        agent = "chaos_long" if n % 2 else "chaos"  # continues as new after each model call
        handles.append(await start(client, workers.task_queue, text, f"kill{n}", agent))
    kills: list[tuple[int, float]] = []
    spare = 2
    for _ in range(6):
        deadline = time.monotonic() + rng.uniform(2, 5)
        while time.monotonic() < deadline:
            for handle in handles:
                await approve_pending(handle)
            await wait_for_a_moment()
        alive = [w for w in workers.started if w.process and w.process.returncode is None]
        victim = rng.choice(alive)
        kills.append((victim.pid, await victim.kill()))
        await workers.start(f"w{spare}")
        spare += 1

    async def all_final() -> bool:
        for handle in handles:
            await approve_pending(handle)
        return all([await is_final(h) for h in handles])

    try:
        await wait_until(all_final, 240, "every run to finish", interval=0.5)
    except AssertionError as timed_out:
        open_runs = [await diagnosis(h) for h in handles if not await is_final(h)]
        raise AssertionError(f"{timed_out}; still open:\n" + "\n".join(open_runs)) from None
    recoveries = _recoveries(ledger_path, kills)
    for handle in handles:
        assert (await handle.result()).status is RunStatus.COMPLETED
        assert len(ledger.effects(ledger_path, handle.id)) == 1, handle.id
        assert await task_failures(handle) == 0
    report.add(
        "kill -9 at random points, 20 runs (half continuing as new each turn), 6 kills "
        "(seed 20261125)",
        "all completed; each side effect once; no workflow-task failure",
        f"interrupted tool calls retried elsewhere: {summary(recoveries)}",
    )


async def wait_for_a_moment() -> None:
    await asyncio.sleep(0.3)


def _recoveries(ledger_path, kills: list[tuple[int, float]]) -> list[float]:
    """Per tool attempt a kill cut short: seconds until the next attempt of its key."""
    attempts = ledger.attempts(ledger_path)
    applied = {(key, pid) for key, _, pid, _ in ledger.effects(ledger_path)}
    found = []
    for pid, killed_at in kills:
        for key, _, attempt_pid, at in attempts:
            if attempt_pid != pid or (key, pid) in applied or at > killed_at:
                continue
            later = [a for a in attempts if a[0] == key and a[3] > killed_at]
            if later:
                found.append(later[0][3] - killed_at)
    return found


@pytest.mark.chaos_slow
async def test_a_run_cached_on_a_dead_worker_moves_after_the_sticky_timeout(
    client, workers, ledger_path, report
):
    a = await workers.start("a")
    handle = await start(
        client, workers.task_queue, plan("approved_charge", {"amount": 1, "seconds": 0})
    )
    [pending] = await wait_until(lambda: _pending(handle), 30, "the approval")
    await workers.start("b")
    killed_at = await a.kill()  # the run is cached on a, which polls its sticky queue no more
    await approve(handle, pending["call_id"])
    [attempt] = await wait_until(
        lambda: ledger.attempts(ledger_path, handle.id), 30, "the approved tool to run on b"
    )
    moved = attempt[3] - killed_at
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert moved < STICKY_TIMEOUT.total_seconds() + 5
    report.add(
        "run cached on a worker killed while it waits for approval; approved right after",
        "completed on the other worker",
        f"the approved tool ran {moved:.1f} s after the kill "
        f"(sticky queue timeout {STICKY_TIMEOUT.total_seconds():g} s; Temporal's default 10 s)",
    )


async def _pending(handle) -> list:
    try:
        return await handle.query("get_pending_approvals")
    except Exception:
        return []


@pytest.mark.chaos_slow  # 21 s; `make chaos`: kill -9 failover of a tool stays in `make test`
async def test_kill_9_while_a_child_run_works_leaves_one_child_and_one_result(
    client, workers, ledger_path, report
):
    """An agent called as a tool runs as a child run; a worker killed while the child's
    tool runs: the child is never started twice, its side effect happens once, and the
    caller gets its result once."""
    await workers.start("a")
    await workers.start("b")
    inner = plan("charge", {"amount": 5, "seconds": 4})
    handle = await start(
        client, workers.task_queue, plan("delegate", {"input": inner}), agent="chaos_lead"
    )
    [(key, _, victim, _)] = await wait_until(
        lambda: ledger.attempts(ledger_path, f"{handle.id}/"), 30, "the child's tool"
    )
    await next(w for w in workers.started if w.pid == victim).kill()
    result = await handle.result()
    assert result.status is RunStatus.COMPLETED
    assert [e[0] for e in ledger.effects(ledger_path, f"{handle.id}/")] == [key]  # once
    history = await handle.fetch_history()
    started = [
        e
        for e in history.events
        if e.HasField("start_child_workflow_execution_initiated_event_attributes")
    ]
    assert len(started) == 1  # one child, whatever the kill hit
    child_id = started[0].start_child_workflow_execution_initiated_event_attributes.workflow_id
    assert key.startswith(f"{child_id}:")
    state = await client.get_workflow_handle(handle.id).query("get_state")
    results = [i for i in state["items"] if i["type"] == "tool_result"]
    assert len(results) == 1 and results[0]["content"].startswith("done: charged")
    assert await task_failures(handle) == 0
    report.add(
        "kill -9 while a child run's tool works (agent as tool), 2 workers",
        "completed, one child, side effect once",
        "the caller got the child's result once",
    )


@pytest.mark.chaos_slow
async def test_a_crash_mid_tool_with_queries_racing_the_new_worker_leaves_a_replayable_run(
    client, workers, ledger_path
):
    """#42's defect: a one-attempt tool whose worker is killed mid-call, a new worker,
    `get_status` every 0.3 s meanwhile. The run completes, and its history must replay
    (before the fix, a search-attribute upsert placed by the clock made every later
    query fail with a nondeterminism error)."""
    await workers.start("a")
    handle = await start(
        client, workers.task_queue, plan("charge_once", {"amount": 1, "seconds": 12})
    )
    [(_, _, victim, _)] = await wait_until(
        lambda: ledger.attempts(ledger_path, handle.id), 30, "the tool's first attempt"
    )
    await next(w for w in workers.started if w.pid == victim).kill()
    polling = True

    async def poll() -> None:
        while polling:
            await status(handle)
            await asyncio.sleep(0.3)

    poller = asyncio.create_task(poll())
    try:
        await workers.start("b")
        result = await asyncio.wait_for(handle.result(), 120)
    finally:
        polling = False
        await poller
    assert result.status is RunStatus.COMPLETED
    history = await handle.fetch_history()
    replayer = Replayer(
        interceptors=[GateInterceptor(None)],
        workflows=[AgentWorkflow],
        data_converter=client.data_converter,
    )
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None, replayed.replay_failure
    assert await task_failures(handle) == 0
