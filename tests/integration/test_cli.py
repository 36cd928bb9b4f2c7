"""agentctl: argument parsing and offline errors, then the real console script against a worker."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from durable_agents.client import PendingAcrossRuns, cli, render
from durable_agents.client.agent_client import PENDING_QUERY
from durable_agents.workflows import definitions

from durable_agents.testing import Call, Reply
from tests.support import agents
from tests.support.cli_support import (
    UNREACHABLE,
    WAIT_SECONDS,
    Ctl,
    agentctl,
    bound_to,
    error_lines,
    run_main,
    wait_for_status,
)

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="call_email")


# --- parsing and offline errors --------------------------------------------------------


def test_global_options_come_before_the_command_and_default_sensibly() -> None:
    args = cli.build_parser().parse_args(["--address", "h:1", "status", "r1"])
    assert (args.address, args.namespace, args.profile) == ("h:1", None, None)
    assert (args.task_queue, args.run_id, args.json) == ("agents", "r1", False)


def test_connection_options_are_also_accepted_after_the_command() -> None:
    args = cli.build_parser().parse_args(["--task-queue", "q1", "pending", "r1", "--json"])
    assert (args.task_queue, args.json) == ("q1", True)
    args = cli.build_parser().parse_args(["pending", "r1", "--task-queue", "q2"])
    assert args.task_queue == "q2"


def test_start_options_are_parsed() -> None:
    args = cli.build_parser().parse_args(
        [
            *("start", "assistant", "hello", "--context", '{"a": 1}', "--max-turns", "3"),
            *("--id", "run-1", "--wait", "--json"),
        ]
    )
    assert (args.agent, args.input, args.context) == ("assistant", "hello", '{"a": 1}')
    assert (args.max_turns, args.id, args.wait, args.json) == (3, "run-1", True, True)


def test_decision_options_are_parsed() -> None:
    args = cli.build_parser().parse_args(
        ["reject", "r1", "c1", "--as", "alice", "--reason", "no", "--always", "--wait"]
    )
    assert (args.run_id, args.call_id, args.approver) == ("r1", "c1", "alice")
    assert (args.reason, args.always, args.wait) == ("no", True, True)


def test_export_output_option_is_parsed() -> None:
    assert cli.build_parser().parse_args(["export", "r1", "-o", "f.json"]).output == "f.json"
    assert cli.build_parser().parse_args(["export", "r1"]).output is None


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["start", "assistant"],
        ["start", "a", "b", "--max-turns", "0"],
        ["approve", "r1", "c1", "--as", ""],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_main(argv) == 2
    assert "usage: agentctl" in capsys.readouterr().err


def test_bad_context_json_exits_1_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code = run_main(["--address", UNREACHABLE, "start", "assistant", "hi", "--context", "{bad"])
    [line] = error_lines(capsys.readouterr().err)
    assert code == 1
    assert "--context is not valid JSON" in line


def test_unreachable_server_exits_1_naming_the_address(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = run_main(["--address", UNREACHABLE, "status", "r1"])
    [line] = error_lines(capsys.readouterr().err)
    assert code == 1
    assert f"cannot connect to Temporal at {UNREACHABLE}" in line


def test_snapshot_options_are_parsed() -> None:
    args = cli.build_parser().parse_args(["fork", "f.json", "--at-turn", "2", "--input", "hi"])
    assert (args.file, args.at_turn, args.input, args.id) == ("f.json", 2, "hi", None)
    assert cli.build_parser().parse_args(["resume", "f.json", "--id", "r2"]).id == "r2"
    assert cli.build_parser().parse_args(["pending", "--all"]).all is True
    args = cli.build_parser().parse_args(["approve", "r1", "c1", "--args", '{"a": 1}'])
    assert args.arguments == '{"a": 1}'


@pytest.mark.parametrize(
    "argv",
    [
        ["pending"],
        ["pending", "r1", "--all"],
        ["fork", "f.json"],
        ["fork", "f.json", "--at-turn", "-1"],
        ["reject", "r1", "c1", "--args", "{}"],  # only an approval carries edited arguments
    ],
)
def test_snapshot_and_pending_usage_errors_exit_2(argv: list[str], capsys) -> None:
    assert run_main(argv) == 2
    assert "usage: agentctl" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{bad", "--args is not valid JSON: Expecting property name"),
        ("[1]", "--args must be a JSON object of the tool's arguments"),
    ],
)
def test_bad_edited_arguments_exit_1_before_connecting(value: str, message: str, capsys) -> None:
    code = run_main(["--address", UNREACHABLE, "approve", "r1", "c1", "--args", value])
    [line] = error_lines(capsys.readouterr().err)
    assert code == 1 and message in line


def test_approver_defaults_to_env_then_user_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cli.APPROVER_ENV, "ops-bot")
    assert cli.default_approver() == "ops-bot"
    monkeypatch.setenv(cli.APPROVER_ENV, "  ")
    monkeypatch.setattr(cli.getpass, "getuser", lambda: "alice")
    assert cli.default_approver() == "alice"

    def no_user() -> str:
        raise OSError("no user")

    monkeypatch.setattr(cli.getpass, "getuser", no_user)
    assert cli.default_approver() == "unknown"


# --- the real console script ---------------------------------------------------------


@pytest.fixture
def ctl(worker) -> Ctl:
    return bound_to(worker)


async def test_unreachable_server_from_the_console_script() -> None:
    outcome = await agentctl("--address", UNREACHABLE, "result", "r1")
    assert outcome.code == 1
    assert error_lines(outcome.stderr) == [
        f"agentctl: error: cannot connect to Temporal at {UNREACHABLE} "
        "(namespace 'default'): Connection refused"
    ]


async def test_start_pending_approve_result(ctl, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    started = await ctl("start", "assistant", "mail a@b.c", "--context", '{"u": 1}', "--json")
    run_id = started.json()["run_id"]

    status = await wait_for_status(ctl, run_id, "awaiting_approval")
    assert status["pending_approvals"] == 1
    human = await ctl("status", run_id)
    definition = definitions.digest(agents.assistant.spec())  # the worker's agent, as frozen
    assert status["definition"] == definition
    assert human.stdout.strip() == (
        f"{run_id} · awaiting_approval · turn 1 · 1 pending approval · 15 tokens · "
        f"definition {definition}"
    )
    [pending] = (await ctl("pending", run_id, "--json")).json()
    assert (pending["call_id"], pending["tool"]) == ("call_email", "send_email")
    table = (await ctl("pending", run_id)).stdout
    assert "CALL ID" in table and "call_email" in table and "send_email" in table

    approved = await ctl("approve", run_id, "call_email", "--as", "alice")
    assert approved.code == 0, approved.stderr
    assert approved.stdout.startswith("approved call_email by alice at ")
    result = (await ctl("result", run_id, "--json")).json()
    assert (result["status"], result["final_output"]) == ("completed", "done")


async def test_approve_wait_prints_the_recorded_decision(ctl, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    run_id = f"cli-{uuid.uuid4().hex[:8]}"
    assert (await ctl("start", "assistant", "mail", "--id", run_id)).stdout.strip() == run_id
    await wait_for_status(ctl, run_id, "awaiting_approval")

    decision = (
        await ctl(
            "reject", run_id, "call_email", "--as", "bob", "--reason", "no", "--wait", "--json"
        )
    ).json()

    assert (decision["decision"], decision["approver"], decision["reason"]) == (
        "reject",
        "bob",
        "no",
    )
    assert "completed" in (await ctl("result", run_id)).stdout


async def test_refused_decision_exits_1_with_one_line(ctl, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    run_id = (await ctl("start", "assistant", "mail", "--json")).json()["run_id"]
    await wait_for_status(ctl, run_id, "awaiting_approval")

    refused = await ctl("reject", run_id, "call_nope", "--wait")

    assert refused.code == 1
    [line] = error_lines(refused.stderr)
    assert "call_nope" in line and "refused" in line
    assert (await ctl("reject", run_id, "call_email", "--wait")).code == 0


async def test_signal_the_run_refuses_exits_1_with_the_runs_reason(ctl, model_server) -> None:
    again = Call("send_email", {"to": "a@b.c", "body": "again"}, "call_again")
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(tool_calls=(again,)))  # keeps waiting
    run_id = (await ctl("start", "assistant", "mail", "--json")).json()["run_id"]
    await wait_for_status(ctl, run_id, "awaiting_approval")

    unknown = await ctl("reject", run_id, "call_nope", "--as", "alice")
    assert unknown.code == 1
    assert error_lines(unknown.stderr) == [
        f"agentctl: error: decision on call 'call_nope' of run '{run_id}' refused: "
        f"no tool call call_nope in run {run_id}"
    ]
    blind = await ctl("approve", run_id, "call_nope", "--as", "alice")  # nothing it saw
    assert blind.code == 1
    assert error_lines(blind.stderr) == [
        "agentctl: error: approval of call call_nope refused here: it is not pending in "
        f"run {run_id}; waiting there: call_email (`agentctl pending {run_id}` shows them)"
    ]
    stale = await ctl("approve", run_id, "call_email", "--sha256", "0" * 16)
    assert stale.code == 1 and "its arguments are not the ones you saw" in stale.stderr
    refused = (await ctl("state", run_id, "--json")).json()["refused_decisions"]
    assert [r["call_id"] for r in refused] == ["call_nope"]  # neither approval was sent
    first = await ctl("reject", run_id, "call_email", "--as", "alice", "--request-id", "r-1")
    assert first.code == 1 and "--request-id goes with --wait" in first.stderr
    decided = await ctl("reject", run_id, "call_email", "--as", "alice", "--json")
    assert decided.code == 0
    assert (decided.json()["via"], decided.json()["sender"]) == ("signal", "agentctl")
    late = await ctl("approve", run_id, "call_email", "--as", "bob")
    assert late.code == 1
    assert error_lines(late.stderr)[0].endswith("already decided (reject by alice)")


async def test_pending_all_lists_waiting_runs_with_their_run_id(ctl, worker, model_server) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)))
    run_id = (await ctl("start", "assistant", "mail", "--json")).json()["run_id"]
    await wait_for_status(ctl, run_id, "awaiting_approval")
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    while run_id not in [w.id async for w in worker.client.list_workflows(PENDING_QUERY)]:
        assert asyncio.get_running_loop().time() < deadline, "visibility never listed the run"
        await asyncio.sleep(0.1)

    found = PendingAcrossRuns.model_validate((await ctl("pending", "--all", "--json")).json())

    [mine] = [a for a in found.approvals if a.run_id == run_id]
    assert (mine.call_id, mine.tool) == ("call_email", "send_email")
    assert run_id not in found.unanswered
    table = render.pending_across_runs(found).splitlines()  # what `pending --all` prints
    header = ["RUN", "ID", "CALL", "ID", "SHORT", "ID", "TOOL", "REQUESTED", "AT"]
    assert table[0].split() == [*header, "ARGUMENTS", "SHA256"]
    row = next(n for n, line in enumerate(table) if line.startswith(f"{run_id}  call_email"))
    assert table[row].split()[2:4] == [mine.short_id, "send_email"]
    assert table[row].split()[-1] == mine.arguments_sha256[:16] + "…"
    assert table[row + 1 : row + 3] == ["    to = a@b.c", "    body = hi"]
    await worker.client.get_workflow_handle(run_id).cancel()


async def test_unknown_run_id_exits_1_with_one_line(ctl) -> None:
    for command in (("status",), ("pending",), ("result",), ("export",)):
        outcome = await ctl(*command, "no-such-run")
        assert outcome.code == 1
        assert error_lines(outcome.stderr) == [
            "agentctl: error: no run with id 'no-such-run' in namespace 'default'"
        ]


async def test_an_approval_is_bound_to_the_digest_seen_and_to_the_run_named(ctl, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    run_id = (await ctl("start", "assistant", "mail", "--json")).json()["run_id"]
    await wait_for_status(ctl, run_id, "awaiting_approval")
    [shown] = (await ctl("pending", run_id, "--json")).json()
    seen = shown["arguments_sha256"][:16]
    made = await ctl("approve", run_id, "call_email", "--sha256", seen.upper(), "--json")
    assert made.code == 0 and made.json()["arguments_sha256"] == shown["arguments_sha256"]
    assert "completed" in (await ctl("result", run_id)).stdout


async def test_an_end_the_run_refuses_exits_1_with_its_reason(ctl, model_server):
    model_server.script(Reply(content="hi"), Reply(content="done"))
    run_id = (await ctl("start", "assistant", "hello", "--session", "--json")).json()["run_id"]
    await wait_for_status(ctl, run_id, "awaiting_input")
    long = await ctl("end", run_id, "--reason", "x" * 3_000)  # past what a run keeps
    assert long.code == 1 and "refused it" in error_lines(long.stderr)[0]
    assert (await ctl("end", run_id)).code == 0
    assert "completed" in (await ctl("result", run_id)).stdout


async def test_a_message_to_a_run_no_worker_serves_is_sent_unconfirmed(env, monkeypatch):
    # A deploy, a crash: the signal waits in the run's history; only the confirming
    # queries go unanswered.
    from durable_agents.client import agent_client
    from durable_agents.workflows import contract
    from durable_agents.workflows.payloads import AgentInput

    monkeypatch.setattr(agent_client, "CONFIRM_SECONDS", 0.5)
    queue = f"nobody-{uuid.uuid4().hex[:8]}"
    handle = await env.client.start_workflow(
        contract.WORKFLOW_TYPE,
        AgentInput(agent="assistant", input="hi", session=True),
        id=f"unserved-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
    )
    agents = agent_client.AgentClient(env.client, task_queue=queue)
    assert await agents.message(handle.id, "are you there?", confirm=True) is False
    events = [e async for e in handle.fetch_history_events()]
    assert sum(e.HasField("workflow_execution_signaled_event_attributes") for e in events) == 1
    await handle.terminate("done")
