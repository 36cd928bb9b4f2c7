"""MCP tools in an agent (workflows.mcp_tools, durable_agents.mcp_connections), against
a real MCP server of the `mcp` package, over stdio and over streamable HTTP: the
tools listed once and kept in the run, the read-only one run at once, the
destructive one waiting for the documented `approve` signal, an error the model
reads, the server's credentials never in the history."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows import contract, decisions
from durable_agents.workflows.payloads import DecisionSignal, MessageSignal
from durable_agents.workflows.run_items import ToolResult
from durable_agents.workflows.state import RunStatus
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowHandle

from durable_agents.mcp_connections import MCPConnection
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.cli_support import bound_to, error_lines
from tests.support.histories import payloads_of
from tests.support.mcp_agents import backoffice, frontdesk, helpdesk
from tests.support.runs import (
    free_port,
    held,
    start,
    state_of,
    tool_results,
    wait_for_status,
)

ROOT = Path(__file__).resolve().parents[2]


def stdio(effects: Path) -> MCPConnection:
    return MCPConnection(
        command=(sys.executable, "-m", "tests.support.mcp_server"),
        env={"MCP_EFFECTS": str(effects), "PYTHONPATH": str(ROOT)},
    )


@pytest.fixture
def http_server(tmp_path):
    """The same server over streamable HTTP, in its own process."""
    port = free_port()
    effects = tmp_path / "effects-http.txt"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.mcp_server", "--http", str(port)],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "MCP_EFFECTS": str(effects), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60  # a Python process starting on a loaded machine
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp", effects
    process.terminate()
    process.wait(10)


SCRIPT = (
    Reply(
        tool_calls=(
            Call("tickets_lookup_ticket", {"ticket_id": "T1"}, "c1"),
            Call("tickets_delete_ticket", {"ticket_id": "T1", "reason": "duplicate"}, "c2"),
        )
    ),
    Reply(tool_calls=(Call("tickets_failing_tool", {}, "c3"),)),
    Reply(content="done"),
)


async def run_through(worker, model_server, effects: Path) -> WorkflowHandle:
    model_server.script(*SCRIPT)
    handle = await start(worker, "clean up T1", agent="helpdesk")
    view = await wait_for_status(handle, RunStatus.AWAITING_APPROVAL, timeout=30)
    assert view.pending_approvals == 1
    state = await state_of(handle)
    mcp_tools = {t.name: (t.mcp_server, t.mcp_tool, t.needs_approval) for t in state.agent.tools}
    assert mcp_tools == {
        "note": (None, None, False),
        "tickets_lookup_ticket": ("tickets", "lookup_ticket", False),  # read-only
        "tickets_delete_ticket": ("tickets", "delete_ticket", True),  # destructive
        "tickets_close_ticket": ("tickets", "close_ticket", True),  # not read-only
        "tickets_photo_ticket": ("tickets", "photo_ticket", False),  # read-only
        "tickets_failing_tool": ("tickets", "failing_tool", True),  # unannotated
    }
    assert tool_results(state)["c1"].content == "ticket T1: printer on fire, status open"
    assert not effects.exists()  # the destructive call waits
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="c2", approver="ann"))
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL, timeout=30)
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="c3", approver="ann"))
    result = await asyncio.wait_for(handle.result(), 30)
    assert result.status is RunStatus.COMPLETED
    assert effects.read_text() == "deleted T1: duplicate\n"  # exactly one effect
    results = tool_results(await state_of(handle))
    assert results["c2"].content == "ticket T1 deleted"
    assert results["c3"].content == (
        "Error: tool 'tickets_failing_tool' reported an error: Error executing tool "
        "failing_tool: the ticket system is read-only today"
    )
    assert model_server.requests[1]["tools"][0]["function"]["name"] == "note"
    sent = {t["function"]["name"] for t in model_server.requests[0]["tools"]}
    assert sent == set(mcp_tools)
    return handle


@pytest.mark.history("mcp_tools")
async def test_mcp_tools_over_stdio_with_an_approval(env, model_server, tmp_path, scenario):
    effects = tmp_path / "effects.txt"
    async with serving(
        env.client, model_server, extra_agents=[helpdesk], mcp_servers={"tickets": stdio(effects)}
    ) as worker:
        scenario.run(await run_through(worker, model_server, effects))


async def test_mcp_tools_over_streamable_http_with_an_approval(env, model_server, http_server):
    url, effects = http_server
    connection = MCPConnection(url=url, headers={"Authorization": "Bearer s3cret-token"})
    async with serving(
        env.client, model_server, extra_agents=[helpdesk], mcp_servers={"tickets": connection}
    ) as worker:
        await run_through(worker, model_server, effects)
        runs = [r async for r in worker.client.list_workflows("WorkflowType = 'AgentWorkflow'")]
        for run in runs[:3]:
            history = await worker.client.get_workflow_handle(run.id).fetch_history()
            assert b"s3cret-token" not in history.to_json().encode()


async def test_a_worker_that_cannot_reach_a_named_server_is_refused(env, model_server):
    from durable_agents.plugin import AgentsPluginError

    with pytest.raises(AgentsPluginError, match="use MCP servers tickets, which AGENT_MCP"):
        async with serving(env.client, model_server, extra_agents=[helpdesk], mcp_servers={}):
            pass


async def test_export_and_resume_on_a_worker_with_a_new_server_instance(
    env, model_server, tmp_path
):
    effects = tmp_path / "effects.txt"
    model_server.script(
        Reply(
            tool_calls=(Call("tickets_delete_ticket", {"ticket_id": "T9", "reason": "spam"}, "d1"),)
        ),
        Reply(content="deleted"),
    )
    async with serving(
        env.client, model_server, extra_agents=[helpdesk], mcp_servers={"tickets": stdio(effects)}
    ) as first:
        agents = AgentClient(first.client, task_queue=first.task_queue)
        source = await agents.start("helpdesk", "delete T9")
        await wait_for_status(
            first.client.get_workflow_handle(source.id), RunStatus.AWAITING_APPROVAL, timeout=30
        )
        exported = await agents.export(source.id)
        await first.client.get_workflow_handle(source.id).terminate("moved")
    async with serving(
        env.client, model_server, extra_agents=[helpdesk], mcp_servers={"tickets": stdio(effects)}
    ) as second:  # another worker, another server process
        agents = AgentClient(second.client, task_queue=second.task_queue)
        resumed = await agents.resume(exported)
        handle = second.client.get_workflow_handle(resumed.id)
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL, timeout=30)
        state = await state_of(handle)
        assert state.agent.tool("tickets_delete_ticket").mcp_tool == "delete_ticket"  # relisted
        await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="d1", approver="ann"))
        assert (await asyncio.wait_for(resumed.result(), 30)).status is RunStatus.COMPLETED
    assert effects.read_text() == "deleted T9: spam\n"


async def test_a_server_killed_mid_call_is_started_again_and_the_call_takes_effect_once(
    env, model_server, tmp_path
):
    """The stdio server dies (kill -9) after the call took effect and before it answered:
    the activity fails, is retried, the worker starts a new server process, and the call
    arrives with the same idempotency key in `_meta`, so the idempotent tool does nothing
    twice; the model reads the second attempt's answer."""
    effects, stall = tmp_path / "effects.txt", tmp_path / "stall.pid"
    connection = MCPConnection(
        command=(sys.executable, "-m", "tests.support.mcp_server"),
        env={"MCP_EFFECTS": str(effects), "MCP_STALL": str(stall), "PYTHONPATH": str(ROOT)},
    )
    model_server.script(
        Reply(tool_calls=(Call("tickets_close_ticket", {"ticket_id": "T5"}, "k1"),)),
        Reply(content="closed"),
    )
    async with serving(
        env.client, model_server, extra_agents=[helpdesk], mcp_servers={"tickets": connection}
    ) as worker:
        handle = await start(worker, "close T5", agent="helpdesk")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL, timeout=30)
        await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="k1", approver="ann"))
        deadline = time.monotonic() + 30
        while not (stall.exists() and stall.read_text()):
            assert time.monotonic() < deadline, "the server never took the call"
            await asyncio.sleep(0.05)
        first_server = int(stall.read_text())
        os.kill(first_server, signal.SIGKILL)
        result = await asyncio.wait_for(handle.result(), 60)
        assert result.status is RunStatus.COMPLETED
        state = await state_of(handle)
    key = f"{state.run_id}:k1"
    assert effects.read_text() == f"closed T5 key={key}\n"  # one effect, two attempts
    assert tool_results(state)["k1"].content == f"ticket T5 closed (already, key {key})"


async def test_agentctl_tools_lists_an_agents_tools_and_rules_as_a_run_would_get_them(
    env, model_server, tmp_path
):
    """`agentctl tools AGENT` asks a worker that serves the agent (standalone activities:
    no run starts), MCP tools included, each with its approval rule."""
    async with serving(
        env.client,
        model_server,
        extra_agents=[helpdesk],
        mcp_servers={"tickets": stdio(tmp_path / "effects.txt")},
    ) as worker:
        ctl = bound_to(worker)
        shown = await ctl("tools", "helpdesk")
        assert shown.code == 0, shown.stderr
        header, *lines = shown.stdout.splitlines()
        assert re.fullmatch(r"helpdesk · 6 tools · definition [0-9a-f]{12}", header)
        assert lines == [
            "  note · @tool · no approval",
            "  tickets_lookup_ticket · MCP tickets/lookup_ticket · no approval",
            "  tickets_delete_ticket · MCP tickets/delete_ticket · approval",
            "  tickets_close_ticket · MCP tickets/close_ticket · approval",
            "  tickets_photo_ticket · MCP tickets/photo_ticket · no approval",
            "  tickets_failing_tool · MCP tickets/failing_tool · approval",
        ]
        listed = (await ctl("tools", "helpdesk", "--json")).json()
        assert isinstance(listed, list)
        delete = next(t for t in listed if t["name"] == "tickets_delete_ticket")
        assert delete["parameters"]["required"] == ["ticket_id", "reason"]
        assert (delete["mcp_server"], delete["needs_approval"]) == ("tickets", True)
        # an agent of the registry without MCP servers, with a policy
        spender = await AgentClient(worker.client, task_queue=worker.task_queue).tools("assistant")
        assert {t.name for t in spender.tools} >= {"add", "send_email"}
        # hostile or unknown names: refused with what is served, nothing started
        for name in ("nobody", "../helpdesk", "x" * 5_000, "helpdesk\n"):
            refused = await ctl("tools", name)
            assert refused.code == 1
            assert f"serves agent {name!r}" in error_lines(refused.stderr)[0]
        runs = [r async for r in worker.client.list_workflows("WorkflowType = 'AgentWorkflow'")]
        assert not [r for r in runs if r.task_queue == worker.task_queue]  # nothing started


async def test_agentctl_tools_says_which_mcp_server_did_not_answer(env, model_server):
    """A server that cannot be reached: one clear line naming it, after one attempt."""
    gone = MCPConnection(url=f"http://127.0.0.1:{free_port()}/mcp")
    async with serving(
        env.client, model_server, extra_agents=[helpdesk], mcp_servers={"tickets": gone}
    ) as worker:
        refused = await bound_to(worker)("tools", "helpdesk")
    assert refused.code != 0
    lines = error_lines(refused.stderr)
    assert lines[0].startswith("agentctl: error: MCP server 'tickets' did not answer: "), lines


async def test_a_session_lists_its_mcp_tools_again_for_a_new_message_and_on_request(
    env, model_server, tmp_path
):
    """The server's tools change under a session: the next message has them listed
    again before the model answers it (added and removed recorded; the model is sent
    the new list), and `agentctl refresh-tools` asks for a listing, done before the
    next model call, by whom recorded. Nothing is listed mid-exchange."""
    catalog = tmp_path / "catalog.txt"
    catalog.write_text("lookup_ticket\ndelete_ticket\n")
    connection = MCPConnection(
        command=(sys.executable, "-m", "tests.support.mcp_server"),
        env={"MCP_CATALOG": str(catalog), "PYTHONPATH": str(ROOT)},
    )
    model_server.script(
        Reply(tool_calls=(Call("tickets_lookup_ticket", {"ticket_id": "T1"}, "a1"),)),
        Reply(content="looked"),
        Reply(content="second"),
        Reply(content="third"),
        Reply(content="plain"),
    )
    async with serving(
        env.client, model_server, extra_agents=[helpdesk], mcp_servers={"tickets": connection}
    ) as worker:
        handle = await start(worker, "look T1", agent="helpdesk", session=True)
        await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
        assert (await state_of(handle)).tool_listings == []  # listed at start only
        catalog.write_text("lookup_ticket\nclose_ticket\n")
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="again"))
        await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
        state = await state_of(handle)
        [listing] = state.tool_listings
        assert (listing.reason, listing.turn, listing.by) == ("session_message", 2, None)
        assert (listing.added, listing.removed) == (
            ["tickets_close_ticket"],
            ["tickets_delete_ticket"],
        )
        assert {t.name for t in state.agent.tools} == {
            "note", "tickets_lookup_ticket", "tickets_close_ticket"
        }  # fmt: skip
        sent = [{t["function"]["name"] for t in r["tools"]} for r in model_server.requests]
        assert "tickets_delete_ticket" in sent[1] and "tickets_close_ticket" not in sent[1]
        assert "tickets_close_ticket" in sent[2] and "tickets_delete_ticket" not in sent[2]
        # on request: recorded now, done before the next model call
        catalog.write_text("lookup_ticket\n")
        ctl = bound_to(worker)
        asked = await ctl("refresh-tools", handle.id, "--as", "ann")
        assert asked.code == 0, asked.stderr
        assert asked.stdout.strip() == (
            f"run {handle.id} lists its MCP tools again before its next model call"
        )
        assert (await state_of(handle)).tools_refresh.by == "ann"
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content="third"))
        await wait_for_status(handle, RunStatus.AWAITING_INPUT, timeout=30)
        state = await state_of(handle)
        assert state.tools_refresh is None
        last = state.tool_listings[-1]
        assert (last.reason, last.by, last.removed) == (
            "requested",
            "ann",
            ["tickets_close_ticket"],
        )
        assert len(state.tool_listings) == 2  # the request and the message: one listing
        shown = await ctl("state", handle.id)
        assert "MCP tools listed again before turn 4: removed tickets_close_ticket" in shown.stdout
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        assert (
            "**MCP tools listed again** before turn 4 (asked by `ann`): removed "
            "`tickets_close_ticket`" in metadata.current_details
        )
        # hostile or useless requests are refused and recorded with the reason; none
        # is taken as a request
        for payload in ({"by": 5}, {"who": "x"}, "now", {"by": "x" * 201}):
            await handle.signal(contract.SIGNAL_REFRESH_TOOLS, payload)
        state = await state_of(handle)
        refused = [r for r in state.refused_signals if r.signal == "refresh_tools"]
        assert len(refused) == 4 and state.tools_refresh is None
        assert "by" in refused[0].refused_because and "who" in refused[1].refused_because
        await handle.signal(contract.SIGNAL_END_SESSION, {})
        await asyncio.wait_for(handle.result(), 30)
        ended = await ctl("refresh-tools", handle.id)
        assert error_lines(ended.stderr)[0].endswith("has already ended"), ended.stderr
        plain = await start(worker, "hi", agent="assistant", session=True)
        await wait_for_status(plain, RunStatus.AWAITING_INPUT, timeout=30)
        no_mcp = await ctl("refresh-tools", plain.id)
        assert error_lines(no_mcp.stderr)[0] == (
            f"agentctl: error: run {plain.id!r} refused it: agent assistant has no MCP servers"
        )
        await plain.terminate("done")


@pytest.mark.parametrize("send", [True, False])
async def test_an_mcp_tools_image_is_kept_in_the_run_and_sent_to_a_model_that_reads_images(
    env, model_server, tmp_path, send
):
    """The image block of an MCP result is kept whole in the run's tool result; the
    model is sent it (Chat Completions: a user message after the tool message, naming
    the call) only when the agent says it reads images, else a line describing it. With
    the payload store, history holds references, not the image."""
    from temporalio.client import Client

    from durable_agents.dataplane.codec import data_converter
    from durable_agents.dataplane.payload_store import external_storage
    from tests.support.mcp_server import PHOTO

    seer = dataclasses.replace(helpdesk, name="seer", send_tool_images=send)
    model_server.script(
        Reply(tool_calls=(Call("tickets_photo_ticket", {"ticket_id": "T3"}, "p1"),)),
        Reply(content="a printer on fire"),
    )
    target = env.client.service_client.config.target_host
    converter = data_converter(None, external_storage())
    client = await Client.connect(target, namespace=env.client.namespace, data_converter=converter)
    async with serving(
        client, model_server, extra_agents=[seer], mcp_servers={"tickets": stdio(tmp_path / "e")}
    ) as worker:
        handle = await start(worker, "show T3", agent="seer")
        assert (await asyncio.wait_for(handle.result(), 30)).status is RunStatus.COMPLETED
        state = await state_of(handle)
        history = (await handle.fetch_history()).to_json()
    photo = base64.b64encode(PHOTO).decode()
    [result] = [i for i in state.items if isinstance(i, ToolResult)]
    assert result.content == f"photo of T3\n[image image/png, {len(PHOTO):,} bytes: image 1]"
    assert [(a.mime_type, a.data) for a in result.attachments] == [("image/png", photo)]
    payloads = payloads_of(json.loads(history))
    stored = [p for p in payloads if b"ExternalStorageReference" in p["type"]]
    assert stored, "the image's payloads are not in the store"
    assert not any(photo[:200].encode() in p["data"] for p in payloads)  # only references
    sent = model_server.requests[1]["messages"]
    told = {"role": "tool", "tool_call_id": "p1", "content": result.content}
    if send:
        assert sent[-2] == told and sent[-1]["role"] == "user"
        assert sent[-1]["content"][1:] == [
            {"type": "text", "text": "Image 1, from call p1:"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{photo}"}},
        ]
    else:
        assert sent[-1] == told
        assert photo[:200] not in json.dumps(model_server.requests[1])


async def test_a_handoff_back_keeps_the_approval_a_server_tried_to_take_away(
    env, model_server, tmp_path
):
    """While the run is with another agent, the server marks `delete_ticket` read-only:
    handed back, the front desk's call to it still waits for a person (guarded-returns)."""
    catalog = tmp_path / "catalog.txt"
    catalog.write_text("lookup_ticket\ndelete_ticket\n")
    connection = MCPConnection(
        command=(sys.executable, "-m", "tests.support.mcp_server"),
        env={"MCP_CATALOG": str(catalog), "PYTHONPATH": str(ROOT)},
    )
    delete = Call("tickets_delete_ticket", {"ticket_id": "T1", "reason": "dup"}, "d1")
    model_server.script(Reply(tool_calls=(Call("transfer_to_backoffice", {}, "h1"),)))
    back = held(  # backoffice hands back only once the catalog has changed
        model_server,
        Reply(tool_calls=(Call("transfer_to_frontdesk", {}, "h2"),)),
        Reply(tool_calls=(delete, Call("tickets_lookup_ticket", {"ticket_id": "T1"}, "l1"))),
        Reply(content="done"),
    )
    async with serving(
        env.client,
        model_server,
        extra_agents=[frontdesk, backoffice],
        mcp_servers={"tickets": connection},
    ) as worker:
        handle = await start(worker, "delete T1", agent="frontdesk")
        deadline = time.monotonic() + 30
        while (await handle.query(contract.QUERY_GET_STATUS, result_type=dict))[
            "current_agent"
        ] != ("backoffice"):
            assert time.monotonic() < deadline, "the run did not hand over to backoffice"
            await asyncio.sleep(0.1)
        catalog.write_text("lookup_ticket\ndelete_ticket:read-only\n")  # while it is away
        back.set()
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL, timeout=30)
        state = await state_of(handle)
        assert state.agent.name == "frontdesk"
        assert [c.call_id for c in decisions.pending_calls(state)] == ["d1"]
        assert [(m.agent, m.asked) for m in state.mcp_tools_left] == [
            ("frontdesk", ["tickets_delete_ticket"])
        ]
        assert "l1" in tool_results(state)  # read-only before, and still: it ran
        await handle.signal(
            contract.SIGNAL_REJECT, DecisionSignal(call_id="d1", approver="ann", reason="no")
        )
        assert (await handle.result()).final_output == "done"


async def test_a_servers_own_output_schema_cannot_hold_the_workers_event_loop():
    # The MCP SDK checked a result against the schema the same server listed, on the
    # event loop: a's and a "!" against ^(a+)+$, twice as long for each a (25: seconds;
    # 40: hours, every run on the worker held). Taken as sent now: the loop keeps ticking.
    # 30 a's would hold it for minutes: a gap of 5 s tells that from a loaded machine's
    # scheduling (a 1 s bound over 25 a's could be either).
    connection = MCPConnection(
        command=(sys.executable, "-m", "tests.support.raw_mcp_server"),
        env={"PYTHONPATH": str(ROOT), "REDOS_N": "30"},
    )
    gaps: list[float] = []

    async def tick() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.05)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(tick())
    try:
        async with connection.client() as client:
            await client.list_tools()
            result = await client.call_tool("lookup", {})
            await asyncio.sleep(0.2)
    finally:
        ticking.cancel()
    assert [block.text for block in result.content] == ["looked up"]
    assert result.structured_content == {"s": "a" * 30 + "!"}
    assert max(gaps) < 5.0, f"the event loop was held {max(gaps):.1f} s"
