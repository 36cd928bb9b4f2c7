"""Mistakes a newcomer makes say so at once: agentctl as a process, against the dev
server and a real worker (issue 43, "Mistakes say so at once")."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
import uuid

from durable_agents.client import ui_links
from durable_agents.client.agent_client import PENDING_QUERY

from durable_agents.testing import Call, Reply
from tests.support.cli_support import AGENTCTL, Ctl, agentctl, bound_to, wait_for_status
from tests.support.runs import temporal_cli

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="call_email")


async def test_start_on_a_queue_no_worker_polls_warns_on_stderr_and_exits_0(worker) -> None:
    typo = f"typo-{uuid.uuid4().hex[:8]}"
    connection = ("--address", worker.address, "--namespace", worker.namespace)
    began = time.monotonic()
    started = await agentctl(
        "start", "assistant", "hi", "--task-queue", typo, connection=connection
    )
    took = time.monotonic() - began
    assert started.code == 0, started.stderr
    run_id = started.stdout.strip()
    assert run_id.startswith("assistant-")  # stdout: only the id, as before
    [line] = started.stderr.strip().splitlines()
    assert line.startswith(f"agentctl: warning: no worker polls task queue '{typo}'"), line
    assert run_id in line and "--task-queue" in line
    assert took < 60, took  # the grace is 2 s; the rest is the interpreter's start (3 s idle)
    await worker.client.get_workflow_handle(run_id).terminate("test: no worker")


async def test_start_on_a_polled_queue_says_nothing_more(worker, model_server) -> None:
    model_server.script(Reply(content="hello"))
    ctl = bound_to(worker, process=True)
    started = await ctl("start", "assistant", "hi", "--wait")
    assert started.code == 0, started.stderr
    assert started.stderr == ""
    assert "hello" in started.stdout


async def run_waiting_for_approval(worker, model_server) -> tuple[Ctl, str]:
    """agentctl as a process, and a run it started that waits for an approval."""
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    ctl = bound_to(worker, process=True)
    run_id = (await ctl("start", "assistant", "mail a@b.c")).stdout.strip()
    await wait_for_status(ctl, run_id, "awaiting_approval")
    return ctl, run_id


async def test_status_and_state_show_the_last_refused_signal_with_its_reason(
    worker, model_server
) -> None:
    ctl, run_id = await run_waiting_for_approval(worker, model_server)
    quiet = json.loads((await ctl("status", run_id, "--json")).stdout)
    assert quiet["last_refused_signal"] is None
    said = await temporal_cli(
        worker, "workflow", "signal", "--workflow-id", run_id, "--name", "approve",
        "--input", '{"call_id": "call_nope", "approver": "go-service"}',
    )  # fmt: skip
    assert "succeeded" in said.lower()  # the sender is told nothing more

    status = json.loads((await ctl("status", run_id, "--json")).stdout)
    last = status["last_refused_signal"]
    assert (last["signal"], last["call_id"], last["approver"]) == (
        "approve",
        "call_nope",
        "go-service",
    )
    assert "call_nope" in last["refused_because"]
    assert status["pending_approvals"] == 1  # additive: the get_status fields stay
    human = (await ctl("status", run_id)).stdout.splitlines()
    assert human[-1].startswith("  last refused signal: approve (call call_nope, by go-service)")
    assert last["refused_because"].split()[0] in human[-1]
    state = (await ctl("state", run_id)).stdout.splitlines()
    assert state[-1] == human[-1]
    await ctl("approve", run_id, "call_email")
    await wait_for_status(ctl, run_id, "completed")


async def test_pending_all_links_to_the_ui_list_of_runs_waiting_for_a_decision(
    worker, model_server
) -> None:
    ctl, run_id = await run_waiting_for_approval(worker, model_server)
    listed = await ctl("pending", "--all", "--ui", "http://ui.example:8233/")
    assert listed.code == 0, listed.stderr
    link = listed.stdout.strip().splitlines()[-1].removeprefix("in the Temporal UI: ")
    page = urllib.parse.urlsplit(link)
    assert (page.scheme, page.netloc) == ("http", "ui.example:8233")
    assert page.path == f"/namespaces/{worker.namespace}/workflows"
    assert urllib.parse.parse_qs(page.query)["query"] == [PENDING_QUERY]
    as_json = (await ctl("pending", "--all", "--ui", "http://ui.example:8233", "--json")).json()
    assert as_json["ui_url"] == link and any(a["run_id"] == run_id for a in as_json["approvals"])
    unknown = await ctl("pending", "--all")  # not the dev server's default address: no guess
    assert "Temporal UI" not in unknown.stdout and run_id in unknown.stdout
    await ctl("approve", run_id, "call_email")
    await wait_for_status(ctl, run_id, "completed")


def test_the_ui_address_comes_from_the_option_the_environment_or_the_dev_default() -> None:
    env = {"AGENT_UI_URL": "https://ui.corp/"}
    assert ui_links.ui_address("http://given", address="a:1", env=env) == "http://given"
    assert ui_links.ui_address(None, address="a:1", env=env) == "https://ui.corp"
    assert ui_links.ui_address(None, address="localhost:7233", env={}) == "http://localhost:8233"
    assert ui_links.ui_address(None, address="temporal.corp:7233", env={}) is None


async def test_result_says_what_the_run_waits_for_before_it_waits(worker, model_server) -> None:
    ctl, run_id = await run_waiting_for_approval(worker, model_server)
    connection = ("--address", worker.address, "--namespace", worker.namespace)
    waiting = await asyncio.create_subprocess_exec(
        AGENTCTL, *connection, "result", run_id,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert waiting.stderr is not None
    line = (await asyncio.wait_for(waiting.stderr.readline(), timeout=60)).decode()
    assert line.startswith(f"agentctl: waiting for run {run_id} to end (awaiting_approval"), line
    assert f"1 call waits for a decision: agentctl pending {run_id}" in line
    assert line.rstrip().endswith("Ctrl-C stops the wait, not the run"), line

    approved = await ctl("approve", run_id, "call_email", "--as", "desk")
    assert approved.code == 0, approved.stderr
    stdout, rest = await asyncio.wait_for(waiting.communicate(), timeout=60)
    assert waiting.returncode == 0, rest
    assert "done" in stdout.decode()  # the result, once the approval let the run end


async def test_result_of_an_ended_run_prints_no_note(worker, model_server) -> None:
    model_server.script(Reply(content="hello"))
    ctl = bound_to(worker, process=True)
    run_id = (await ctl("start", "assistant", "hi", "--wait")).stdout.splitlines()[0]
    shown = await ctl("result", run_id)
    assert (shown.code, shown.stderr) == (0, "")
    assert "hello" in shown.stdout
