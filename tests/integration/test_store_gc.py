"""Payload-store retention against the real dev server, a real worker and a directory
store of the test's own: `store gc` between every step of a long session (with
continue-as-new) removes nothing the run needs (it completes, replays and resumes),
removes orphans and what a deleted run alone used, keeps young blobs, and reports."""

from __future__ import annotations

import asyncio
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.state import RunStatus
from temporalio.client import Client
from temporalio.worker import Replayer

from durable_agents import AgentClient
from durable_agents.dataplane.codec import data_converter
from durable_agents.dataplane.payload_store import PayloadStoreError, external_storage
from durable_agents.dataplane.store_gc import collect_garbage, references
from durable_agents.gate_interceptor import GateInterceptor
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.cli_support import agentctl, in_process
from tests.support.ops_support import fresh_namespace
from tests.support.runs import wait_for_status

BIG = 40_000
"""Characters of each tool output: every one goes to the store."""


async def store_client(env, store: Path) -> Client:
    """A client (and so a worker) on a namespace of its own, storing payloads in `store`."""
    bare = await fresh_namespace(env)
    await AgentClient(bare).setup_search_attributes()
    storage = external_storage({"AGENT_PAYLOAD_STORE": str(store)})
    return await Client.connect(
        env.client.service_client.config.target_host,
        namespace=bare.namespace,
        data_converter=data_converter(None, storage),
    )


async def run_storing_a_blob(worker) -> str:
    """A finished run whose tool output went to the store (the model is scripted to call
    `blob` once); its id."""
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    run = await agents.start("assistant", "one")
    async with asyncio.timeout(30):
        await run.result()
    return run.id


def blobs(store: Path) -> set[str]:
    return {p.name for p in store.glob("*/*") if not p.name.startswith(".")}


async def test_gc_between_every_step_loses_nothing_a_run_needs(env, model_server, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    client = await store_client(env, store)
    exchanges = 4
    for n in range(exchanges):
        model_server.script(
            Reply(tool_calls=(Call("blob", {"size": BIG + n}, f"b{n}"),)), Reply(f"read {n}")
        )
    model_server.script(Reply("resumed and done"))
    async with serving(client, model_server) as worker:
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        run = await agents.start("concierge", "read", session=True)  # a new run every 2 calls
        handle = worker.client.get_workflow_handle(run.id, result_type=AgentResult)
        for n in range(1, exchanges + 1):
            await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
            report = await collect_garbage(
                worker.client, store, older_than=timedelta(0), force=True
            )
            assert report.runs_scanned >= 1 and report.kept_blobs > 0
            assert report.missing_manifests == []
            if n < exchanges:
                await agents.message(run.id, f"more {n}")
        snapshot_text = await agents.export(run.id)
        await agents.end_session(run.id)
        async with asyncio.timeout(30):
            assert (await handle.result()).status is RunStatus.COMPLETED
        report = await collect_garbage(worker.client, store, older_than=timedelta(0), force=True)
        assert report.missing_manifests == report.missing_chunks == [] and report.kept_blobs > 0
        # Every workflow run of the chain replays from its history and the store.
        executions = [e async for e in worker.client.list_workflows(f'WorkflowId = "{run.id}"')]
        assert len(executions) >= 2  # it continued as new
        replayer = Replayer(
            interceptors=[GateInterceptor(None)],
            workflows=[AgentWorkflow],
            data_converter=client.data_converter,
        )
        for execution in executions:
            history = await worker.client.get_workflow_handle(
                run.id, run_id=execution.run_id
            ).fetch_history()
            await replayer.replay_workflow(history)
        resumed = await agents.resume(snapshot_text)
        await wait_for_status(
            worker.client.get_workflow_handle(resumed.id), RunStatus.AWAITING_INPUT, timeout=30
        )
        state = await agents.state(resumed.id)
        assert [len(r.content) for r in state.items if r.type == "tool_result"] == [
            BIG + n for n in range(exchanges)
        ]
        await agents.cancel(resumed.id)


async def test_orphans_go_young_blobs_stay_and_a_dry_run_removes_nothing(
    env, model_server, tmp_path
):
    store = tmp_path / "store"
    for name, age in (("a" * 64, 3 * 86_400), ("b" * 64, 60)):
        path = store / name[:2] / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"orphan")
        os.utime(path, (time.time() - age, time.time() - age))
    client = await store_client(env, store)
    with pytest.raises(PayloadStoreError, match="no run of namespace"):
        await collect_garbage(client, store)  # no run here uses the store: refused
    with pytest.raises(PayloadStoreError, match="could remove payloads a worker stored"):
        await collect_garbage(client, store, older_than=timedelta(minutes=5))
    dry = await collect_garbage(
        client, store, older_than=timedelta(days=1), dry_run=True, force=True
    )
    assert (dry.removed_blobs, dry.young_blobs) == (1, 1) and blobs(store) == {"a" * 64, "b" * 64}
    done = await collect_garbage(client, store, older_than=timedelta(days=1), force=True)
    assert (done.removed_blobs, done.removed_bytes) == (1, 6) and blobs(store) == {"b" * 64}


async def test_what_no_run_refers_to_goes_and_agentctl_reports_it(
    env, model_server, tmp_path, monkeypatch
):
    store = tmp_path / "store"
    store.mkdir()
    client = await store_client(env, store)
    model_server.script(Reply(tool_calls=(Call("blob", {"size": BIG}, "b1"),)), Reply("one"))
    async with serving(client, model_server) as worker:
        run_id = await run_storing_a_blob(worker)
        used = set()
        async for event in worker.client.get_workflow_handle(run_id).fetch_history_events():
            used.update(references(event))
        assert used and used <= blobs(store)  # its tool output went to the store
        monkeypatch.setenv("AGENT_PAYLOAD_STORE", str(store))
        own = ("--address", worker.address, "--namespace", worker.namespace)
        kept = await agentctl(
            "store", "gc", "--older-than", "0s", "--force", "--json", connection=own
        )
        assert kept.code == 0, kept.stderr
        assert kept.json()["removed_blobs"] == 0 and used <= blobs(store)
    # Seen from a namespace with no runs, nothing in the store is needed: a dry run
    # says so and removes nothing; the real one removes it all.
    other = await fresh_namespace(env)
    elsewhere = ("--address", worker.address, "--namespace", other.namespace)
    refused = await agentctl("store", "gc", "--dry-run", connection=elsewhere)
    assert refused.code != 0 and "the wrong namespace, or a store another" in refused.stderr
    shown = await agentctl(
        "store", "gc", "--older-than", "0s", "--force", "--dry-run", connection=elsewhere
    )
    assert shown.code == 0, shown.stderr
    assert "would remove" in shown.stdout and "0 runs read" in shown.stdout
    assert used <= blobs(store)
    done = await agentctl(
        "store", "gc", "--older-than", "0s", "--force", "--json", connection=elsewhere
    )
    assert done.code == 0 and done.json()["removed_blobs"] >= len(used)
    assert not blobs(store)
    after = await collect_garbage(client, store, older_than=timedelta(0), force=True)
    assert set(after.missing_manifests) == used  # the run's own namespace sees the loss
    refused = await agentctl("store", "gc", "--older-than=-1h", connection=elsewhere)
    assert refused.code != 0 and "invalid duration" in refused.stderr
    monkeypatch.setenv("AGENT_PAYLOAD_STORE", "s3://")  # (an S3 store: test_payload_store_s3)
    s3 = await agentctl("store", "gc", connection=elsewhere)
    assert s3.code != 0 and "needs a bucket name" in s3.stderr


async def test_a_scheduled_collection_runs_on_the_workers_and_reports(env, model_server, tmp_path):
    """`agentctl store gc --schedule 1d`: a Temporal Schedule starts `AgentStoreGC` on the
    task queue's workers, which collect their own store: what a run uses stays, an
    old orphan goes, the report is the workflow's result. `--unschedule` deletes it."""
    store = tmp_path / "store"
    orphan = "c" * 64
    (store / orphan[:2]).mkdir(parents=True)
    (store / orphan[:2] / orphan).write_bytes(b"orphan")
    os.utime(store / orphan[:2] / orphan, (time.time() - 3 * 86_400,) * 2)
    client = await store_client(env, store)
    model_server.script(Reply(tool_calls=(Call("blob", {"size": BIG}, "b1"),)), Reply("one"))
    async with serving(client, model_server) as worker:
        await run_storing_a_blob(worker)
        own = (
            "--address", worker.address, "--namespace", worker.namespace,
            "--task-queue", worker.task_queue,
        )  # fmt: skip
        for refused, why in (
            (("--schedule", "1m"), "collect at most every 0:10:00"),
            (("--schedule", "1d", "--older-than", "30m"), "keeps at least 1h of blobs"),
            (("--schedule", "1d", "--force"), "never forced"),
            (("--schedule", "1d", "--unschedule"), "not allowed with argument"),
        ):
            said = await in_process("store", "gc", *refused, connection=own)  # no process:
            assert said.code != 0 and why in said.stderr, said.stderr  # the same cli.main
        try:
            made = await agentctl("store", "gc", "--schedule", "1d", connection=own)
            assert made.code == 0, made.stderr
            assert made.stdout.startswith("schedule durable-agents-store-gc: a collection every 1d")
            async with asyncio.timeout(60):  # the first collection starts at once
                while not (
                    found := [
                        r
                        async for r in worker.client.list_workflows("WorkflowType = 'AgentStoreGC'")
                    ]
                ):
                    await asyncio.sleep(0.2)
                report = await worker.client.get_workflow_handle(found[0].id).result()
            assert report["removed_blobs"] == 1 and report["kept_blobs"] > 0
            assert orphan not in blobs(store) and report["runs_scanned"] >= 1
            schedule = worker.client.get_schedule_handle("durable-agents-store-gc")
            await schedule.pause(note="by the test")
            changed = await agentctl("store", "gc", "--schedule", "2d", connection=own)
            assert changed.code == 0, changed.stderr
            described = (await schedule.describe()).schedule
            assert described.spec.intervals[0].every == timedelta(days=2)
            assert described.state.paused and described.state.note == "by the test"  # kept
            wrong = await in_process("store", "gc", "--unschedule", "--dry-run", connection=own)
            assert wrong.code != 0 and "--unschedule takes no other option" in wrong.stderr
        finally:
            gone = await agentctl("store", "gc", "--unschedule", connection=own)
        assert gone.stdout.strip() == "schedule durable-agents-store-gc deleted"
        again = await agentctl("store", "gc", "--unschedule", connection=own)
        assert again.stdout.strip() == "schedule durable-agents-store-gc was not there"
