"""agentctl list / watch / cancel / setup, run as a user runs them (the console script)."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import threading
import uuid

from durable_agents.client import AgentClient, cli_ops

from durable_agents.testing import Call, Reply
from tests.support import agents
from tests.support.cli_support import (
    agentctl,
    bound_to,
    error_lines,
    in_process,
    wait_for_status,
)
from tests.support.ops_support import eventually, fresh_namespace
from tests.support.runs import held

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="e1")


def new_id() -> str:
    return f"cli-ops-{uuid.uuid4().hex[:8]}"


async def start_waiting_run(ctl, model_server) -> str:
    model_server.script(Reply(tool_calls=(EMAIL,)))
    rid = new_id()
    assert (await ctl("start", "assistant", "mail a@b.c", "--id", rid)).code == 0
    await wait_for_status(ctl, rid, "awaiting_approval")
    return rid


async def test_list_shows_a_table_and_json_filtered_by_status(worker, model_server):
    ctl = bound_to(worker)
    waiting = await start_waiting_run(ctl, model_server)
    mine = f'TaskQueue = "{worker.task_queue}"'

    async def listed():
        return await ctl("list", "--status", "awaiting_approval", "--query", mine, "--json")

    found = await eventually(listed, lambda out: out.code == 0 and out.json() != [])
    [row] = found.json()
    assert (row["run_id"], row["agent"], row["status"]) == (
        waiting,
        "assistant",
        "awaiting_approval",
    )
    assert (row["turn"], row["pending_approvals"]) == (1, 1)

    table = await ctl("list", "--query", mine)
    assert table.code == 0, table.stderr
    header, line = table.stdout.strip().splitlines()
    assert header.split() == ["RUN", "ID", "AGENT", "STATUS", "TURN", "PENDING", "STARTED"]
    assert line.split()[:5] == [waiting, "assistant", "awaiting_approval", "1", "1"]
    none = await ctl("list", "--status", "failed", "--query", mine)
    assert (none.code, none.stdout.strip()) == (0, "no runs")
    await ctl("cancel", waiting)


async def test_list_refuses_an_unknown_status_and_a_bad_query(worker):
    ctl = bound_to(worker)
    usage = await ctl("list", "--status", "sleeping")
    assert usage.code == 2
    assert "invalid choice: 'sleeping'" in usage.stderr
    bad = await ctl("list", "--query", "Nope = 1")
    assert bad.code == 1
    [line] = error_lines(bad.stderr)
    assert "invalid visibility query" in line


class Printed(io.StringIO):
    """A command's output, setting `seen` once `words` are printed."""

    def __init__(self, words: str, seen: threading.Event) -> None:
        super().__init__()
        self.words, self.seen = words, seen

    def write(self, text: str) -> int:
        written = super().write(text)
        if self.words in self.getvalue():
            self.seen.set()
        return written


async def test_watch_prints_changes_then_what_the_run_needs(worker, model_server):
    ctl = bound_to(worker)
    # The model answers only once the watch has printed the run running (it was a 10 s
    # delay to outlast agentctl's start on a loaded machine: order, not a margin).
    release = held(
        model_server, Reply(tool_calls=(Call("add", {"a": 1, "b": 2}),)), Reply(tool_calls=(EMAIL,))
    )
    rid = new_id()
    assert (await ctl("start", "assistant", "add then mail", "--id", rid)).code == 0
    connection = (
        *("--address", worker.address, "--namespace", worker.namespace),
        *("--task-queue", worker.task_queue),
    )
    printed = Printed(f"{rid} · running · turn ", release)
    try:
        watch = ("watch", rid, "--interval", "0.2")
        watched = await in_process(*watch, connection=connection, out=printed)
    finally:
        release.set()
    assert watched.code == 0, watched.stderr
    lines = watched.stdout.strip().splitlines()
    assert f"{rid} · running · turn " in lines[0]
    assert lines[0].startswith("[") and "s] " in lines[0]
    needs = lines.index(f"run {rid} needs a decision:")
    header = ["CALL", "ID", "SHORT", "ID", "TOOL", "REQUESTED", "AT", "ARGUMENTS", "SHA256"]
    assert lines[needs + 1].split() == header
    call, short, tool = lines[needs + 2].split()[:3]
    assert (call, tool) == ("e1", "send_email") and 1 <= len(short) <= 8
    assert lines[-1] == (
        f"decide with: agentctl approve {rid} CALL_ID  |  agentctl reject {rid} CALL_ID --reason R"
    )
    approved = await ctl("approve", rid, "e1")
    assert approved.code == 0, approved.stderr
    model_server.script(Reply(content="sent"))
    ended = await ctl("watch", rid)
    assert ended.code == 0, ended.stderr
    assert ended.stdout.strip().splitlines()[-1].startswith(f"run {rid} ended: completed · turn 3")


async def test_watch_json_prints_one_event_per_line(worker, model_server):
    ctl = bound_to(worker)
    rid = await start_waiting_run(ctl, model_server)
    watched = await ctl("watch", rid, "--json")
    [last] = [json.loads(line) for line in watched.stdout.strip().splitlines()]
    assert (last["done"], last["view"]["status"]) == (True, "awaiting_approval")
    assert [p["call_id"] for p in last["pending"]] == ["e1"]
    await ctl("cancel", rid)


async def test_watch_gives_up_after_its_timeout(worker, model_server):
    ctl = bound_to(worker)
    release = held(model_server, Reply(content="slow"))  # answers once the watch gave up
    rid = new_id()
    assert (await ctl("start", "assistant", "hi", "--id", rid)).code == 0
    watched = await ctl("watch", rid, "--timeout", "0.5")
    release.set()
    assert watched.code == 1
    [line] = error_lines(watched.stderr)
    assert line == f"agentctl: error: run '{rid}' still running after 0.5s (--timeout)"
    await worker.client.get_workflow_handle(rid).terminate("watched long enough")


async def test_watch_of_a_terminated_run_says_how_it_ended(worker, model_server):
    ctl = bound_to(worker)
    rid = await start_waiting_run(ctl, model_server)
    await worker.client.get_workflow_handle(rid).terminate("operator gave up")

    watched = await ctl("watch", rid)
    assert watched.code == 0, watched.stderr
    assert watched.stdout.strip().splitlines() == [
        f"run {rid} ended: terminated (last status awaiting_approval · turn 1)"
    ]
    as_json = await ctl("watch", rid, "--json")
    [last] = [json.loads(line) for line in as_json.stdout.strip().splitlines()]
    assert (last["done"], last["closed"], last["pending"]) == (True, "terminated", [])


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_watch_on_a_terminal_redraws_one_line_with_a_spinner(worker, model_server):
    release = held(model_server, Reply(tool_calls=(EMAIL,)))  # until two frames are drawn
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    rid = (await client.start("assistant", "mail", run_id=new_id())).id
    args = argparse.Namespace(
        run_id=rid, json=False, interval=0.1, timeout=60.0, follow=False, after=None
    )
    screen = Terminal()
    watching = asyncio.create_task(cli_ops.watch(args, client, out=screen))

    async def frames() -> str:
        return screen.getvalue()

    try:
        await eventually(frames, lambda drawn: cli_ops.SPINNER[1] in drawn)
    finally:
        release.set()
    outcome = await watching
    drawn = screen.getvalue()
    assert drawn.startswith(f"\r\033[K{cli_ops.SPINNER[0]} [")
    assert f"\r\033[K{cli_ops.SPINNER[1]} [" in drawn
    assert drawn.count("\n") == 1  # every poll redraws the same line; the last one ends it
    assert drawn.endswith(f"{rid} · awaiting_approval · turn 1 · 1 pending approval · 15 tokens\n")
    assert outcome.startswith(f"run {rid} needs a decision:")
    await client.cancel(rid)


async def test_cancel_ends_a_waiting_run_cancelled_and_runs_no_tool(worker, model_server):
    ctl = bound_to(worker)
    rid = await start_waiting_run(ctl, model_server)
    cancelled = await ctl("cancel", rid, "--wait")
    assert cancelled.code == 0, cancelled.stderr
    assert (
        cancelled.stdout.strip() == f"{rid} · cancelled · turn 1 · 0 pending approvals · 15 tokens"
    )
    assert agents.CALLS == []
    again = await ctl("cancel", rid, "--json")
    assert again.code == 1
    assert error_lines(again.stderr) == [
        f"agentctl: error: run '{rid}' has already ended (cancelled)"
    ]


async def test_setup_registers_the_attributes_and_is_idempotent(env):
    namespace = (await fresh_namespace(env)).namespace
    connection = ("--address", env.client.service_client.config.target_host)
    first = await agentctl("setup", "--namespace", namespace, connection=connection)
    assert first.code == 0, first.stderr
    assert first.stdout.splitlines() == [
        f"namespace {namespace}: search attributes ready",
        "  created AgentName",
        "  created AgentStatus",
        "  created AgentPendingApprovals",
        "  created AgentTurn",
        "  created AgentTotalTokens",
        "  created AgentTotalCost",
    ]
    again = await agentctl("setup", "--namespace", namespace, "--json", connection=connection)
    assert again.json() == {
        "namespace": namespace,
        "created": [],
        "existing": [
            "AgentName",
            "AgentStatus",
            "AgentPendingApprovals",
            "AgentTurn",
            "AgentTotalTokens",
            "AgentTotalCost",
        ],
    }
