"""Worker Versioning with two real `worker.py` processes of one deployment, builds A and
B, on a real dev server, set current with the `temporal worker deployment` commands.
Build B is another source tree whose loop changed without a patch (`tests.chaos.builds`):
it cannot replay A's runs, which is what pinning is for. Runs started on A and waiting
for an approval when B becomes current stay pinned to A (the task that takes the
decision runs on A), then continue as new onto B and finish there, the tool run once;
a new run runs on B; a rollback to A sends new runs to A."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import time
import uuid

import pytest
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentInput, AgentResult
from durable_agents.workflows.state import RunStatus

from durable_agents.worker import temporal_binary
from tests.chaos import builds, ledger
from tests.chaos.conftest import plan
from tests.chaos.harness import ROOT
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


async def set_current(
    address: str, deployment: str, build: str, *, propagation: float | None = None
) -> float:
    """deploy/README.md's `set-current-version` (retried until the version is known to
    the server: its workers have polled); when it took effect. Then waits `propagation`
    seconds (default `PROPAGATION`) for the change to reach the task queue: 0 where only
    one build's workers poll, whose tasks run on that build whenever the change arrives."""
    deadline = time.monotonic() + 30
    while True:
        code, said = await temporal(
            address,
            *("worker", "deployment", "set-current-version", "--deployment-name", deployment),
            *("--build-id", build, "--yes"),
        )
        if code == 0:
            took_effect = time.monotonic()
            await asyncio.sleep(PROPAGATION if propagation is None else propagation)
            return took_effect
        assert time.monotonic() < deadline, said
        await asyncio.sleep(0.5)


PROPAGATION = 3.0
"""Seconds for a new current build to reach the task queue (new runs go to it then)."""


def rollout_commands(deployment: str) -> list[list[str]]:
    """The `temporal` commands of deploy/README.md's rollout, as written, for
    `deployment` (the README's is `durable-agents`)."""
    text = (ROOT / "deploy" / "README.md").read_text()
    body = text.split("## Rolling out a new build (Worker Versioning)\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", body, re.S)
    assert block is not None
    lines = [line for line in block.group(1).splitlines() if line.startswith("temporal ")]
    return [
        [deployment if w == "durable-agents" else w.replace("durable-agents:", f"{deployment}:")
         for w in shlex.split(line)[1:]]
        for line in lines
    ]  # fmt: skip


async def task_builds(handle) -> list[list[str]]:
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
    await waiting_for(handle, RunStatus.AWAITING_APPROVAL)


async def waiting_for(handle, wanted: RunStatus) -> None:
    async def asked() -> bool:
        view = await status(handle)
        return view is not None and view.status is wanted

    async with asyncio.timeout(30):
        while not await asked():
            await asyncio.sleep(0.1)


async def test_a_runs_tasks_run_on_the_current_build_and_the_readme_finds_them(
    client, server, workers
):
    """The fast slice of the scenario below, kept in `make test`: `worker.py --deployment
    --build-id` joins a Worker Deployment, made current as deploy/README.md says, and a
    run's every workflow task runs on that build; the README's rollout commands are the
    five the scenario runs, and its `describe` and `workflow count` lines, as written,
    find the version and its run."""
    deployment = f"agents-{uuid.uuid4().hex[:6]}"
    await workers.start("a", "--deployment", deployment, "--build-id", "A")
    await set_current(server.address, deployment, "A", propagation=0)
    run = await start(client, workers.task_queue, plan("charge", {"amount": 1, "seconds": 0}))
    assert (await asyncio.wait_for(run.result(), 30)).status is RunStatus.COMPLETED
    assert {b for tasks in await task_builds(run) for b in tasks} == {"A"}
    steps = rollout_commands(deployment)
    assert [c[:3] for c in steps] == ROLLOUT
    code, said = await temporal(server.address, *steps[0])
    assert code == 0 and re.search(rf"{deployment}\s+A\s", said), said
    everything = f'TemporalWorkerDeploymentVersion="{deployment}:A"'
    async with asyncio.timeout(20):  # visibility: a moment behind
        while True:
            code, said = await temporal(server.address, "workflow", "count", "--query", everything)
            assert code == 0, said
            if not said.strip().endswith(": 0"):
                break
            await asyncio.sleep(0.5)


ROLLOUT = [
    ["worker", "deployment", "describe"],
    ["worker", "deployment", "set-current-version"],
    ["worker", "deployment", "describe-version"],
    ["workflow", "count", "--query"],
    ["worker", "deployment", "set-current-version"],
]
"""The first words of deploy/README.md's rollout commands, in order."""


@pytest.mark.chaos_slow  # 24-32 s (two builds, three propagation waits); its slice above
async def test_pinned_runs_stay_new_runs_and_switches_go_to_the_current_build(
    client, server, workers, ledger_path, report, tmp_path
):
    build_b = builds.replay_breaking_build(tmp_path)
    deployment = f"agents-{uuid.uuid4().hex[:6]}"
    await workers.start("a", "--deployment", deployment, "--build-id", "A")
    await set_current(server.address, deployment, "A")
    charge = plan("approved_charge", {"amount": 5, "seconds": 0})
    pinned = await start(client, workers.task_queue, charge)
    moving = await start(client, workers.task_queue, charge, agent="chaos_long")
    session = await client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="chaos", input="hello", session=True),
        id=f"session-{uuid.uuid4().hex[:8]}",
        task_queue=workers.task_queue,
        result_type=AgentResult,
    )
    for handle in (pinned, moving):
        await waiting_for_approval(handle)
    await waiting_for(session, RunStatus.AWAITING_INPUT)

    # B's change breaks the replay of a run A started: only pinning keeps them apart.
    saved = tmp_path / "pinned.json"
    saved.write_text((await pinned.fetch_history()).to_json())
    on_a, _ = await builds.replays_on(ROOT, pinned.id, saved)
    on_b, said = await builds.replays_on(build_b, pinned.id, saved)
    assert on_a and not on_b and str(build_b) in said and "Nondeterminism" in said, said

    await workers.start("b", "--deployment", deployment, "--build-id", "B", root=build_b)
    current_b = await set_current(server.address, deployment, "B")
    fresh = await start(client, workers.task_queue, plan("charge", {"amount": 1, "seconds": 0}))
    assert (await asyncio.wait_for(fresh.result(), 30)).status is RunStatus.COMPLETED
    decided = time.monotonic()
    for handle in (pinned, moving):
        assert await approve_pending(handle) == 1
    assert (await asyncio.wait_for(pinned.result(), 30)).status is RunStatus.COMPLETED
    pinned_done = time.monotonic()
    assert (await asyncio.wait_for(moving.result(), 30)).status is RunStatus.COMPLETED
    moved_done = time.monotonic()
    # A session waiting for a message on A moves to B when the message comes.
    messaged = time.monotonic()
    await session.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "again"})
    async with asyncio.timeout(30):
        while (await status(session)).turn < 2:  # type: ignore[union-attr]
            await asyncio.sleep(0.05)
    session_moved = time.monotonic()
    await session.signal(contract.SIGNAL_END_SESSION)
    assert (await asyncio.wait_for(session.result(), 30)).status is RunStatus.COMPLETED
    chain = await task_builds(session)
    assert set(chain[0]) == {"A"} and set(chain[-1]) == {"B"}, chain

    for handle in (pinned, moving):
        chain = await task_builds(handle)
        # Pinned: every task of the runs that began on A ran on A (the decision too);
        # the switch, then, to the current build, where the run ends.
        assert len(chain) >= 2 and set(chain[0]) == {"A"} and set(chain[-1]) == {"B"}, chain
        assert set(chain[-2]) == {"A"}, chain
        assert len(ledger.effects(ledger_path, handle.id)) == 1  # the tool ran once
    assert {b for run in await task_builds(fresh) for b in run} == {"B"}

    # deploy/README.md's steps 2 and 4, as written: both versions, A draining, its runs.
    steps = rollout_commands(deployment)
    assert [c[:3] for c in steps] == ROLLOUT
    code, said = await temporal(server.address, *steps[0])
    assert code == 0 and all(re.search(rf"{deployment}\s+{b}\s", said) for b in "AB"), said
    code, said = await temporal(server.address, *steps[2])
    assert code == 0 and "drain" in said, said
    async with asyncio.timeout(20):  # visibility: a moment behind
        while True:
            code, said = await temporal(server.address, *steps[3])
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
    assert {b for run in await task_builds(again) for b in run} == {"A"}
    report.add(
        "Worker Versioning: builds A and B, B made current while runs wait for approval",
        "tasks of the waiting runs stayed on A, then moved to B at the decision; new runs "
        "on B; rollback to A",
        f"B current → first new run done on B {decided - current_b:.1f} s; decision → "
        f"pinned run finished on B {pinned_done - decided:.2f} s, the continuing one "
        f"{moved_done - decided:.2f} s; a session waiting on A: message → answered on B "
        f"{session_moved - messaged:.2f} s (B's loop is the replay-breaking one: A's runs "
        "never ran on it)",
    )
