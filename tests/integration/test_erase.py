"""Erasure on request (`agentctl erase RUN_ID`) against the real dev server, a worker and
a directory store of the test's own: an ended run's executions (all of a chain of
continue-as-new) and the blobs only it used go; another run's blobs, and a blob
re-used after the run ended, stay; a running run, an unknown one and an erase
without `--yes` are refused; a dry run removes nothing."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.state import RunStatus
from temporalio.service import RPCError

from durable_agents import AgentClient
from durable_agents.dataplane.erase import erase
from durable_agents.dataplane.store_gc import blob_path, references
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_store_gc import BIG, blobs, store_client
from tests.support.cli_support import agentctl, error_lines
from tests.support.runs import wait_for_status


async def used_by(client, run_id: str) -> set[str]:
    found: set[str] = set()
    async for execution in client.list_workflows(f"WorkflowId = '{run_id}'"):
        handle = client.get_workflow_handle(run_id, run_id=execution.run_id)
        async for event in handle.fetch_history_events():
            found.update(references(event))
    return found


async def test_erase_removes_a_run_and_only_its_blobs(env, model_server, tmp_path, monkeypatch):
    store = tmp_path / "store"
    store.mkdir()
    client = await store_client(env, store)
    for n in range(3):  # the forgotten run: concierge continues as new every 2 calls
        model_server.script(Reply(tool_calls=(Call("blob", {"size": BIG + n}, f"b{n}"),)))
    model_server.script(Reply("read them"))
    model_server.script(Reply(tool_calls=(Call("blob", {"size": BIG + 7}, "k1"),)), Reply("kept"))
    async with serving(client, model_server) as worker:
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        forgotten = await agents.start("concierge", "read three")
        await forgotten.result()
        kept = await agents.start("assistant", "read one")
        await kept.result()
        waiting = await agents.start("assistant", "wait", session=True)
        handle = worker.client.get_workflow_handle(waiting.id, result_type=AgentResult)
        model_server.script(Reply("hello"))
        await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
        executions = [
            e async for e in worker.client.list_workflows(f"WorkflowId = '{forgotten.id}'")
        ]
        assert len(executions) >= 2  # a chain of continue-as-new
        theirs, others = await used_by(client, forgotten.id), await used_by(client, kept.id)
        assert theirs and others and theirs <= blobs(store) and others <= blobs(store)
        # As if it ended two hours ago (blobs touched within the last hour are kept: a
        # run not listed yet may have re-used them); one something touched since stays.
        hours_ago = time.time() - 7200
        for digest in blobs(store):
            os.utime(blob_path(store, digest), (hours_ago, hours_ago))
        touched = sorted(theirs)[0]
        now = time.time() + 5
        os.utime(blob_path(store, touched), (now, now))

        monkeypatch.setenv("AGENT_PAYLOAD_STORE", str(store))
        own = ("--address", worker.address, "--namespace", worker.namespace)
        unconfirmed = await agentctl("erase", forgotten.id, connection=own)
        assert unconfirmed.code == 1 and "--yes" in error_lines(unconfirmed.stderr)[0]
        running = await agentctl("erase", waiting.id, "--yes", connection=own)
        assert running.code == 1 and "still running" in running.stderr
        unknown = await agentctl("erase", "no-such-run", "--yes", connection=own)
        assert unknown.code == 1 and "no run with id 'no-such-run'" in unknown.stderr
        before = blobs(store)
        preview = await agentctl("erase", forgotten.id, "--dry-run", "--json", connection=own)
        assert preview.code == 0, preview.stderr
        assert preview.json()["removed_blobs"] > 0 and blobs(store) == before
        done = await agentctl("erase", forgotten.id, "--yes", connection=own)
        assert done.code == 0, done.stderr
        assert f"asked Temporal to delete {len(executions)} execution(s)" in done.stdout
        assert "1 written or re-used after the run ended or within the last hour" in done.stdout
        left = blobs(store)
        assert left & theirs == {touched}
        assert others <= left  # the other run's blobs stay: it still reads
        state = await agents.state(kept.id)
        assert state.final_output == "kept"
        await agents.end_session(waiting.id)
        async with asyncio.timeout(30):
            await handle.result()


@pytest.mark.soak  # the dev server deletes in the background, ~30 s later: `make soak`
async def test_erased_executions_are_gone_from_the_server(env, model_server, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    client = await store_client(env, store)
    model_server.script(Reply(tool_calls=(Call("blob", {"size": BIG}, "b1"),)), Reply("one"))
    async with serving(client, model_server) as worker:
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        run = await agents.start("concierge", "read")
        await run.result()
        chain = f"WorkflowId = '{run.id}'"
        executions = [e async for e in worker.client.list_workflows(chain)]
        report = await erase(worker.client, run.id, store)
        assert len(report.executions) == len(executions) and report.errors == []
        for execution in executions:
            gone = worker.client.get_workflow_handle(run.id, run_id=execution.run_id)
            async with asyncio.timeout(90):
                while True:
                    try:
                        await gone.describe()
                    except RPCError as err:
                        assert "not found" in err.message.lower()
                        break
                    await asyncio.sleep(1)


async def test_all_of_session_erases_the_runs_resumed_or_forked_from_it(
    env, model_server, tmp_path
):
    store = tmp_path / "store"
    store.mkdir()
    client = await store_client(env, store)
    model_server.script(
        Reply(tool_calls=(Call("blob", {"size": BIG}, "b1"),)),
        Reply("first"),
        Reply("forked"),
        Reply("forked again"),
        Reply(tool_calls=(Call("blob", {"size": BIG + 3}, "o1"),)),
        Reply("other"),
    )
    async with serving(client, model_server) as worker:
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        original = await agents.start("assistant", "read")
        await original.result()
        fork = await agents.fork(await agents.state(original.id), at_turn=2, input="again")
        await fork.result()
        fork_of_fork = await agents.fork(await agents.state(fork.id), at_turn=3, input="more")
        await fork_of_fork.result()
        other = await agents.start("assistant", "unrelated")
        await other.result()
        hours_ago = time.time() - 7200
        for digest in blobs(store):
            os.utime(blob_path(store, digest), (hours_ago, hours_ago))
        alone = await erase(worker.client, original.id, store, dry_run=True)
        assert alone.runs == [original.id]  # the forks keep their own copy of the talk
        report = await erase(worker.client, original.id, store, with_copies=True)
        assert report.runs == [original.id, fork.id, fork_of_fork.id]
        assert report.errors == [] and report.removed_blobs > alone.removed_blobs
        erased = [e.partition("/")[0] for e in report.executions]
        assert erased == [fork_of_fork.id, fork.id, original.id]  # copies first
        assert (await agents.state(other.id)).final_output == "other"  # the other run reads
