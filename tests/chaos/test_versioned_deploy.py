"""Worker Versioning with two real `worker.py` processes of one deployment, builds A and
B, on a real dev server, set current with the `temporal worker deployment` commands:
runs started on A and waiting for an approval when B becomes current stay pinned to A
(the task that takes the decision runs on A), then continue as new onto B and finish
there, the tool run once; a new run runs on B; a rollback to A sends new runs to A."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

from durable_agents.workflows.state import RunStatus

from durable_agents.worker import temporal_binary
from tests.chaos import ledger
from tests.chaos.conftest import plan
from tests.chaos.runs import approve_pending, start, status


async def temporal(address: str, *args: str) -> tuple[int, str]:
    """The `temporal` CLI's exit code and output (stdout, then stderr)."""
    process = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *args,
        "--address",
        address,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode() + err.decode()


async def set_current(address: str, deployment: str, build: str) -> float:
    """deploy/README.md's `set-current-version` (retried until the version is known to
    the server: its workers have polled); when it took effect."""
    deadline = time.monotonic() + 30
    while True:
        code, said = await temporal(
            address,
            *("worker", "deployment", "set-current-version", "--deployment-name", deployment),
            *("--build-id", build, "--yes"),
        )
        if code == 0:
            took_effect = time.monotonic()
            await asyncio.sleep(PROPAGATION)
            return took_effect
        assert time.monotonic() < deadline, said
        await asyncio.sleep(0.5)


PROPAGATION = 3.0
"""Seconds for a new current build to reach the task queue (new runs go to it then)."""


async def builds(handle) -> list[list[str]]:
    """For each workflow run of the chain, oldest first: the build of each completed
    workflow task."""
    found: list[list[str]] = []
    client, run_id = handle._client, handle.first_execution_run_id
    while run_id:  # the chain of continue-as-new, from each history's last event
        one = client.get_workflow_handle(handle.id, run_id=run_id)
        events = json.loads((await one.fetch_history()).to_json())["events"]
        run_id = (
            events[-1]
            .get("workflowExecutionContinuedAsNewEventAttributes", {})
            .get("newExecutionRunId")
        )
        found.append(
            [
                e["workflowTaskCompletedEventAttributes"]
                .get("deploymentVersion", {})
                .get("buildId", "")
                for e in events
                if e["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_COMPLETED"
            ]
        )
    return found


async def waiting_for_approval(handle) -> None:
    async def asked() -> bool:
        view = await status(handle)
        return view is not None and view.status is RunStatus.AWAITING_APPROVAL

    async with asyncio.timeout(30):
        while not await asked():
            await asyncio.sleep(0.1)


async def test_pinned_runs_stay_new_runs_and_switches_go_to_the_current_build(
    client, server, workers, ledger_path, report
):
    deployment = f"agents-{uuid.uuid4().hex[:6]}"
    await workers.start("a", "--deployment", deployment, "--build-id", "A")
    await set_current(server.address, deployment, "A")
    charge = plan("approved_charge", {"amount": 5, "seconds": 0})
    pinned = await start(client, workers.task_queue, charge)
    moving = await start(client, workers.task_queue, charge, agent="chaos_long")
    for handle in (pinned, moving):
        await waiting_for_approval(handle)

    await workers.start("b", "--deployment", deployment, "--build-id", "B")
    current_b = await set_current(server.address, deployment, "B")
    fresh = await start(client, workers.task_queue, plan("charge", {"amount": 1, "seconds": 0}))
    assert (await asyncio.wait_for(fresh.result(), 30)).status is RunStatus.COMPLETED
    for handle in (pinned, moving):
        assert await approve_pending(handle) == 1
    assert (await asyncio.wait_for(pinned.result(), 30)).status is RunStatus.COMPLETED
    pinned_done = time.monotonic()
    assert (await asyncio.wait_for(moving.result(), 30)).status is RunStatus.COMPLETED
    moved_done = time.monotonic()

    for handle in (pinned, moving):
        chain = await builds(handle)
        # Pinned: every task of the runs that began on A ran on A (the decision too);
        # the switch, then, to the current build, where the run ends.
        assert len(chain) >= 2 and set(chain[0]) == {"A"} and set(chain[-1]) == {"B"}, chain
        assert set(chain[-2]) == {"A"}, chain
        assert len(ledger.effects(ledger_path, handle.id)) == 1  # the tool ran once
    assert {b for run in await builds(fresh) for b in run} == {"B"}

    # deploy/README.md's step 4, as written: the version, and its runs by the attribute.
    code, said = await temporal(
        server.address,
        *("worker", "deployment", "describe-version", "--deployment-name", deployment),
        *("--build-id", "A"),
    )
    assert code == 0, said
    query = f'TemporalWorkerDeploymentVersion="{deployment}:A" AND ExecutionStatus="Running"'
    async with asyncio.timeout(20):  # visibility: a moment behind
        while True:
            code, said = await temporal(server.address, "workflow", "count", "--query", query)
            assert code == 0, said
            if said.strip().endswith(": 0") or said.strip() == "Total: 0":
                break
            await asyncio.sleep(0.5)
    everything = f'TemporalWorkerDeploymentVersion="{deployment}:A"'
    code, said = await temporal(server.address, "workflow", "count", "--query", everything)
    assert code == 0 and not said.strip().endswith(": 0"), said  # the attribute is as written

    await set_current(server.address, deployment, "A")  # a rollback
    again = await start(client, workers.task_queue, plan("charge", {"amount": 1, "seconds": 0}))
    assert (await asyncio.wait_for(again.result(), 30)).status is RunStatus.COMPLETED
    assert {b for run in await builds(again) for b in run} == {"A"}
    report.add(
        "Worker Versioning: builds A and B, B made current while runs wait for approval",
        "tasks of the waiting runs stayed on A, then moved to B at the decision; new runs "
        "on B; rollback to A",
        f"B current → the waiting runs finished on B: {pinned_done - current_b:.1f} s and "
        f"{moved_done - current_b:.1f} s (approved right after a new run on B completed)",
    )
