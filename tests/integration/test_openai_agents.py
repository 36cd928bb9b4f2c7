"""Runs moved between the OpenAI Agents SDK and durable runs, both ways, with the real
`openai-agents` package, a dev server, a worker and the scripted model server:
`agentctl import-openai` and `agentctl export --format openai-agents`."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from agents import Runner
from agents import RunState as SDKRunState
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows.run_items import AssistantMessage
from durable_agents.workflows.state import RunStatus
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.testing import Call, Reply
from tests.support import agents, openai_agents_states
from tests.support.cli_support import bound_to
from tests.support.openai_agents_states import SDK_CALLS, fixture, sdk_agent, written
from tests.support.runs import temporal_cli, tool_results, wait_for_status


async def test_the_package_still_writes_the_committed_fixtures():
    """The fixtures are the package's own output, not imitations: it writes them again."""
    now = await written()
    assert sorted(now) == sorted(openai_agents_states.SCENARIOS)
    for name, text in now.items():
        assert text + "\n" == fixture(name), f"{name}: regenerate with the module's command"


async def test_an_interrupted_sdk_run_goes_on_here_and_the_call_runs_once(
    worker, model_server, tmp_path
):
    SDK_CALLS.clear()
    model_server.script(openai_agents_states.EMAIL_AND_ADD)
    result = await Runner.run(sdk_agent(model_server), "Add 2 and 3, then email a@b.c")
    assert [i.call_id for i in result.interruptions] == ["call_mail"]
    assert SDK_CALLS == [("add", {"a": 2, "b": 3})]  # the SDK ran add, and stopped
    source = tmp_path / "sdk-state.json"
    source.write_text(result.to_state().to_string())

    ctl = bound_to(worker)
    run_id = f"imported-{uuid.uuid4().hex[:8]}"
    started = await ctl("import-openai", str(source), "--agent", "assistant", "--id", run_id)
    assert started.code == 0 and started.stdout.strip() == run_id, started.stderr
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = worker.client.get_workflow_handle(run_id)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    [pending] = await client.pending(run_id)
    assert (pending.call_id, pending.tool) == ("call_mail", "send_email")
    assert json.loads(pending.arguments) == {"to": "a@b.c", "body": "hello"}

    model_server.script(Reply(content="Sent, and 2 + 3 = 5."))
    payload = json.dumps({"call_id": "call_mail", "approver": "ops"})
    await temporal_cli(
        worker, "workflow", "signal", "--workflow-id", run_id, "--name", "approve",
        "--input", payload,
    )  # fmt: skip
    done = await client.result(run_id)
    assert done.status is RunStatus.COMPLETED and done.final_output == "Sent, and 2 + 3 = 5."
    assert [(name, args) for name, args, _ in agents.CALLS] == [
        ("send_email", {"to": "a@b.c", "body": "hello"})
    ]  # once; add is not run again
    state = await client.state(run_id)
    assert state.imported is not None and state.imported.schema_version == "1.21"
    assert tool_results(state)["call_add"].content == "5"
    messages = model_server.requests[-1]["messages"]  # what the model saw here
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"} == {
        "call_add": "5",
        "call_mail": "sent to a@b.c",
    }


async def test_a_waiting_durable_run_is_finished_by_the_sdk(worker, model_server, tmp_path):
    model_server.script(
        Reply(
            content="Working on it.",
            tool_calls=(
                Call("add", {"a": 1, "b": 2}, call_id="call_1"),
                Call("send_email", {"to": "a@b.c", "body": "one"}, call_id="call_2"),
                Call("send_email", {"to": "x@y.z", "body": "two"}, call_id="call_3"),
            ),
        )
    )
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    run_id = (await client.start("assistant", "Do three things")).id
    handle = worker.client.get_workflow_handle(run_id)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await client.approve(run_id, "call_2", approver="ops")
    for _ in range(100):  # call_2 runs here; call_3 still waits
        if "call_2" in tool_results(await client.state(run_id)):
            break
        await asyncio.sleep(0.1)
    ctl = bound_to(worker)
    target = tmp_path / "for-the-sdk.json"
    shown = await ctl("export", run_id, "--format", "openai-agents", "-o", str(target))
    assert shown.code == 0, shown.stderr

    SDK_CALLS.clear()
    agent = sdk_agent(model_server)
    state = await SDKRunState.from_string(agent, target.read_text())
    [waiting] = state.get_interruptions()
    assert (waiting.call_id, waiting.name, json.loads(waiting.arguments)) == (
        "call_3",
        "send_email",
        {"to": "x@y.z", "body": "two"},
    )
    state.approve(waiting)
    model_server.script(Reply(content="All three done."))
    result = await Runner.run(agent, state)
    assert result.final_output == "All three done."
    assert SDK_CALLS == [("send_email", {"to": "x@y.z", "body": "two"})]  # only what waited
    messages = model_server.requests[-1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "tool"]
    assert sorted(m["tool_call_id"] for m in messages if m["role"] == "tool") == [
        "call_1",
        "call_2",
        "call_3",
    ]
    assert messages[2]["content"] == "Working on it."


async def test_export_of_a_run_that_waits_for_nothing_is_refused(worker, model_server):
    model_server.script(Reply(content="Hello."))
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    run_id = (await client.start("assistant", "hi")).id
    await client.result(run_id)
    shown = await bound_to(worker)("export", run_id, "--format", "openai-agents")
    assert shown.code == 1 and shown.stdout == ""
    assert "has ended (completed): only a run waiting for approval converts" in shown.stderr


def _edited(name: str, **changes) -> str:
    document = json.loads(fixture(name))
    document.update(changes)
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "agent", "expected"),
    [
        (fixture("interrupted-chat"), "ghost", "ghost"),
        (
            _edited("interrupted-chat", **{"$schemaVersion": "1.22"}),
            "assistant",
            "'1.22' is unknown",
        ),
        (fixture("hosted-tool"), "assistant", "web_search_call: a hosted tool"),
        ('{"$schemaVersion": "1.21", "current_turn": ', "assistant", "not JSON"),
        (fixture("finished"), "assistant", "the SDK run has ended"),
    ],
    ids=["unknown-agent", "unknown-version", "hosted-tool", "malformed", "finished"],
)
async def test_a_refused_import_starts_no_run(worker, tmp_path, text, agent, expected):
    source = tmp_path / "state.json"
    source.write_text(text)
    run_id = f"refused-{uuid.uuid4().hex[:8]}"
    shown = await bound_to(worker)("import-openai", str(source), "--agent", agent, "--id", run_id)
    assert shown.code == 1 and shown.stdout == "", shown.stdout
    assert expected in shown.stderr
    with pytest.raises(RPCError) as missing:
        await worker.client.get_workflow_handle(run_id).describe()
    assert missing.value.status is RPCStatusCode.NOT_FOUND


async def test_lossy_import_records_what_it_dropped(worker, model_server, tmp_path):
    source = tmp_path / "state.json"
    source.write_text(fixture("hosted-tool"))
    shown = await bound_to(worker)(
        "import-openai", str(source), "--agent", "assistant", "--lossy", "--json"
    )
    run_id = shown.json()["run_id"]
    assert "dropped $.original_input[1]: web_search_call" in shown.stderr
    client = AgentClient(worker.client, task_queue=worker.task_queue)
    await wait_for_status(worker.client.get_workflow_handle(run_id), RunStatus.AWAITING_APPROVAL)
    state = await client.state(run_id)
    assert [d.where for d in state.imported.dropped] == ["$.original_input[1]"]
    replies = [i for i in state.items if isinstance(i, AssistantMessage)]
    assert [c.call_id for c in replies[-1].tool_calls] == ["call_w"]
    shown = await bound_to(worker)("state", run_id)
    assert shown.code == 0, shown.stderr
    assert shown.stdout.splitlines()[1] == (
        "imported from an OpenAI Agents SDK run state 1.21 (its agent assistant, turn 1) · "
        "0 decisions it recorded, none applied · 1 items dropped"
    )
