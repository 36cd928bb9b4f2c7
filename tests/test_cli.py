"""agentctl: argument parsing and offline errors, then the real console script against a worker."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from client import cli
from examples.scripted_openai import Call, Reply
from workflows.state import RunState

AGENTCTL = str(Path(sys.executable).with_name("agentctl"))
UNREACHABLE = "127.0.0.1:1"
WAIT_SECONDS = 10.0
EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="call_email")


def run_main(argv: list[str]) -> int:
    """`cli.main` in its own thread: its `asyncio.run` must not touch the tests' event loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(cli.main, argv).result()


def error_lines(stderr: str) -> list[str]:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected exactly one line on stderr, got: {stderr!r}"
    assert lines[0].startswith("agentctl: error: "), lines[0]
    return lines


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


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str

    def json(self) -> object:
        assert self.code == 0, self.stderr
        return json.loads(self.stdout)


async def agentctl(*args: str, connection: tuple[str, ...] = ()) -> Outcome:
    """Run the installed console script without blocking the event loop (the worker runs on it)."""
    process = await asyncio.create_subprocess_exec(
        AGENTCTL,
        *connection,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode is not None
    return Outcome(process.returncode, stdout.decode(), stderr.decode())


@pytest.fixture
def ctl(worker):
    """`agentctl` bound to the test's worker (its server address and task queue)."""
    connection = (
        "--address",
        worker.address,
        "--namespace",
        worker.namespace,
        "--task-queue",
        worker.task_queue,
    )

    async def run(*args: str) -> Outcome:
        return await agentctl(*args, connection=connection)

    return run


async def wait_for_status(ctl, run_id: str, status: str) -> dict:
    """Poll `agentctl status --json` until `status` (bounded)."""
    deadline = asyncio.get_running_loop().time() + WAIT_SECONDS
    last: Outcome | None = None
    while asyncio.get_running_loop().time() < deadline:
        last = await ctl("status", run_id, "--json")
        if last.code == 0 and json.loads(last.stdout)["status"] == status:
            return json.loads(last.stdout)
        await asyncio.sleep(0.1)
    raise AssertionError(f"run {run_id} did not reach {status}: {last}")


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
    assert (
        human.stdout.strip()
        == f"{run_id} · awaiting_approval · turn 1 · 1 pending approval · 15 tokens"
    )
    [pending] = (await ctl("pending", run_id, "--json")).json()
    assert (pending["call_id"], pending["tool"]) == ("call_email", "send_email")
    table = (await ctl("pending", run_id)).stdout
    assert "CALL ID" in table and "call_email" in table and "send_email" in table

    approved = await ctl("approve", run_id, "call_email", "--as", "alice")
    assert approved.code == 0, approved.stderr
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

    refused = await ctl("approve", run_id, "call_nope", "--wait")

    assert refused.code == 1
    [line] = error_lines(refused.stderr)
    assert "call_nope" in line and "refused" in line
    assert (await ctl("reject", run_id, "call_email", "--wait")).code == 0


async def test_export_to_file_equals_state_json(ctl, model_server, tmp_path: Path) -> None:
    model_server.script(Reply(content="hello"))
    run_id = (await ctl("start", "assistant", "hi", "--wait", "--json")).json()["run_id"]
    target = tmp_path / "run.json"

    exported = await ctl("export", run_id, "-o", str(target))
    state = await ctl("state", run_id, "--json")

    assert exported.code == 0, exported.stderr
    assert target.read_text().strip() == state.stdout.strip()
    assert RunState.model_validate_json(target.read_text()).final_output == "hello"
    assert (await ctl("export", run_id)).stdout.strip() == state.stdout.strip()


async def test_unknown_run_id_exits_1_with_one_line(ctl) -> None:
    for command in (("status",), ("pending",), ("result",), ("export",)):
        outcome = await ctl(*command, "no-such-run")
        assert outcome.code == 1
        assert error_lines(outcome.stderr) == [
            "agentctl: error: no run with id 'no-such-run' in namespace 'default'"
        ]
