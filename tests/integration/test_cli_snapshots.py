"""agentctl's snapshot commands: validate and schema offline, then export, resume and fork
against a real worker."""

from __future__ import annotations

import hashlib
import json
import uuid
from pathlib import Path

import pytest
from durable_agents.client import KEY_ENV
from durable_agents.workflows import snapshot
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.snapshot import json_schema
from durable_agents.workflows.state import SCHEMA_VERSION, RunState

from durable_agents.testing import Call, Reply
from tests.support import agents
from tests.support.cli_support import (
    UNREACHABLE,
    Ctl,
    agentctl,
    bound_to,
    error_lines,
    run_main,
    wait_for_status,
)
from tests.support.snapshot_golden import fixture_path

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="call_email")
FIXTURE = fixture_path("single")
"""A golden snapshot of this schema version."""


def resigned(doc: dict) -> dict:
    """`doc` with a fresh SHA-256 digest, as anyone editing a snapshot could compute."""
    content = {k: v for k, v in doc.items() if k != "integrity"}
    digest = hashlib.sha256(canonical_json(content)).hexdigest()
    return {**content, "integrity": {"algorithm": "sha256", "digest": digest}}


@pytest.fixture
def ctl(worker) -> Ctl:
    return bound_to(worker)


# --- offline ----------------------------------------------------------------------------


def test_validate_prints_the_verdict_without_a_server(capsys) -> None:
    assert run_main(["--address", UNREACHABLE, "validate", str(FIXTURE)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"valid, schema {SCHEMA_VERSION}, run support-7, 20 items, status output_invalid"
    )


def test_validate_refuses_a_pre_release_snapshot_in_one_line(tmp_path, capsys) -> None:
    old = tmp_path / "old.json"
    pre_release = json.loads(FIXTURE.read_text()) | {"schema_version": "1.31"}
    old.write_text(json.dumps(resigned(pre_release)))
    for command in (["validate"], ["resume", "--address", UNREACHABLE]):
        assert run_main([*command, str(old)]) == 1
        assert error_lines(capsys.readouterr().err) == [
            "agentctl: error: snapshot schema 1.31 was written by a pre-release build; "
            f"this build reads {SCHEMA_VERSION}"
        ]


def test_what_a_file_says_reaches_the_terminal_escaped(tmp_path, capsys) -> None:
    # A forged file's run id and an approver named with escape sequences: on a
    # terminal they could rewrite the line an operator reads ("valid", "approved").
    doc = json.loads(FIXTURE.read_text())
    doc["run_id"] = "r\x1b[2K\r\x1b[32mvalid, run ok\x1b[8m"
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(resigned(doc)))
    assert run_main(["validate", str(forged)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "run r\\u{1b}[2K\\u{d}\\u{1b}[32mvalid" in out
    assert run_main(["validate", "--json", str(forged)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and json.loads(out)["verdict"].startswith("valid")
    doc = json.loads(FIXTURE.read_text())
    decision = next(i for i in doc["items"] if i.get("type") == "decision")
    decision |= {"via": "rule", "approver": "eve\x1b[2K\u202e"}  # the error names them
    forged.write_text(json.dumps(resigned(doc)))
    assert run_main(["validate", str(forged)]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err and "\\u{1b}[2K\\u{202e}" in err


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("[" * 100_000 + "]" * 100_000, "snapshot is nested too deeply to read"),
        ('{"n": ' + "1" * 5000 + "}", "snapshot cannot be read: Exceeds the limit"),
    ],
    ids=["nested", "huge-integer"],
)
def test_a_file_json_cannot_read_is_a_clear_error(content, problem, tmp_path, capsys) -> None:
    hostile = tmp_path / "hostile.json"
    hostile.write_text(content)
    for command in (["validate"], ["resume", "--address", UNREACHABLE]):
        assert run_main([*command, str(hostile)]) == 1
        assert problem in capsys.readouterr().err
    assert run_main(["start", "--address", UNREACHABLE, "a", "x", "--context", content]) == 1
    assert "--context cannot be read" in capsys.readouterr().err


def test_output_that_cannot_be_written_is_a_clear_error(tmp_path, capsys) -> None:
    missing = str(tmp_path / "no-such-dir" / "out")
    assert run_main(["keygen", "--owner", "ann", "--key-id", "k", "-o", missing]) == 1
    assert f"cannot write key file {missing}" in capsys.readouterr().err
    assert run_main(["seal", str(FIXTURE), "-o", missing]) == 1
    assert f"cannot write {missing}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ('"approver": "alice"', "snapshot was modified after export (digest mismatch)"),
        ('"turn": 2,', "snapshot was modified after export (digest mismatch)"),
        ('"schema_version": "2.0"', "snapshot schema 9.0 is newer than this reader (2.x); upgrade"),
    ],
)
def test_validate_refuses_a_tampered_file(edit, message, tmp_path, capsys) -> None:
    replacement = {
        '"approver": "alice"': '"approver": "mallory"',
        '"turn": 2,': '"turn": 3,',
        '"schema_version": "2.0"': '"schema_version": "9.0"',
    }[edit]
    target = tmp_path / "tampered.json"
    target.write_text(FIXTURE.read_text().replace(edit, replacement, 1))

    assert run_main(["validate", str(target)]) == 1
    assert error_lines(capsys.readouterr().err) == [f"agentctl: error: {message}"]


def test_validate_names_the_json_path_of_a_schema_violation(tmp_path, capsys) -> None:
    doc = json.loads(FIXTURE.read_text())
    doc["items"][3]["decision"] = "maybe"
    target = tmp_path / "bad.json"
    target.write_text(json.dumps(resigned(doc)))

    assert run_main(["validate", str(target), "--json"]) == 1
    captured = capsys.readouterr()
    assert error_lines(captured.err) == [
        "agentctl: error: invalid snapshot at $.items[3].decision: "
        "Input should be 'approve', 'reject' or 'answer'"
    ]
    assert json.loads(captured.out) == {
        "valid": False,
        "path": "$.items[3].decision",
        "problem": "Input should be 'approve', 'reject' or 'answer'",
    }


def test_validate_with_a_signing_key_refuses_an_unsigned_file(monkeypatch, capsys) -> None:
    monkeypatch.setenv(KEY_ENV, "s3cret")
    assert run_main(["validate", str(FIXTURE)]) == 1
    assert "unsigned snapshot refused: a signing key is configured" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["resume"], ["fork", "--at-turn", "0"]])
def test_resume_and_fork_check_the_file_before_connecting(command, tmp_path, capsys) -> None:
    target = tmp_path / "run.json"
    target.write_text(FIXTURE.read_text().replace('"gold"', '"platinum"'))
    assert run_main(["--address", UNREACHABLE, command[0], str(target), *command[1:]]) == 1
    assert error_lines(capsys.readouterr().err) == [
        "agentctl: error: snapshot was modified after export (digest mismatch)"
    ]


def test_fork_refusal_needs_no_server(capsys) -> None:
    assert run_main(["--address", UNREACHABLE, "fork", str(FIXTURE), "--at-turn", "9"]) == 1
    assert error_lines(capsys.readouterr().err) == [
        "agentctl: error: cannot fork run support-7 at turn 9: it has turns 0 to 2"
    ]


def test_schema_prints_the_snapshot_json_schema_without_a_server(capsys) -> None:
    assert run_main(["--address", UNREACHABLE, "schema"]) == 0
    assert json.loads(capsys.readouterr().out) == json_schema()


# --- against a worker --------------------------------------------------------------------


async def test_export_to_file_is_the_state_with_its_digest(ctl, model_server, tmp_path) -> None:
    model_server.script(Reply(content="hello"))
    run_id = (await ctl("start", "assistant", "hi", "--wait", "--json")).json()["run_id"]
    target = tmp_path / "run.json"

    exported = await ctl("export", run_id, "-o", str(target))
    state = await ctl("state", run_id, "--json")

    assert exported.code == 0, exported.stderr
    assert snapshot.loads(target.read_text()) == RunState.model_validate_json(state.stdout)
    assert snapshot.loads(target.read_text()).final_output == "hello"
    assert (await ctl("export", run_id)).stdout == target.read_text()


async def test_export_validate_resume_and_approve_with_edited_arguments(
    ctl, worker, model_server, tmp_path: Path
) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    source = (await ctl("start", "assistant", "mail", "--json")).json()["run_id"]
    await wait_for_status(ctl, source, "awaiting_approval")
    target = tmp_path / "run.json"
    assert (await ctl("export", source, "-o", str(target))).code == 0
    await worker.client.get_workflow_handle(source).cancel()

    verdict = await agentctl("validate", str(target))  # offline: no connection options
    assert verdict.stdout.strip() == (
        f"valid, schema {SCHEMA_VERSION}, run {source}, 2 items, status awaiting_approval"
    )
    new_id = f"resumed-{uuid.uuid4().hex[:8]}"
    resumed = (await ctl("resume", str(target), "--id", new_id, "--json")).json()
    assert resumed["run_id"] == new_id
    await wait_for_status(ctl, new_id, "awaiting_approval")
    edit = '{"to": "a@b.c", "body": "edited"}'
    assert (await ctl("approve", new_id, "call_email", "--args", edit)).code == 0

    assert (await ctl("result", new_id, "--json")).json()["final_output"] == "sent"
    assert [c[:2] for c in agents.CALLS] == [("send_email", json.loads(edit))]
    state = (await ctl("state", new_id, "--json")).json()
    assert state["origin"] == {"run_id": source, "turn": 1, "mode": "resume", "verified_by": None}


async def test_fork_at_turn_zero_with_new_input(ctl, model_server, tmp_path: Path) -> None:
    model_server.script(Reply(content="hello"), Reply(content="bonjour"))
    source = (await ctl("start", "assistant", "hi", "--wait", "--json")).json()["run_id"]
    target = tmp_path / "run.json"
    target.write_text((await ctl("export", source)).stdout)

    forked = await ctl("fork", str(target), "--at-turn", "0", "--input", "in French")

    assert forked.code == 0, forked.stderr
    result = (await ctl("result", forked.stdout.strip(), "--json")).json()
    assert result["final_output"] == "bonjour"
    state = (await ctl("state", forked.stdout.strip(), "--json")).json()
    assert state["origin"] == {"run_id": source, "turn": 0, "mode": "fork", "verified_by": None}
    assert [i["content"] for i in state["items"][:2]] == ["hi", "in French"]


async def test_resume_cancel_source_ends_the_source_and_only_the_source(
    ctl, worker, model_server, tmp_path: Path
) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)))
    source = (await ctl("start", "assistant", "mail", "--json")).json()["run_id"]
    await wait_for_status(ctl, source, "awaiting_approval")
    target = tmp_path / "run.json"
    assert (await ctl("export", source, "-o", str(target))).code == 0

    new_id = f"resumed-{uuid.uuid4().hex[:8]}"
    moved = await ctl("resume", str(target), "--id", new_id, "--cancel-source")
    assert moved.code == 0, moved.stderr
    assert moved.stdout.strip() == new_id
    assert moved.stderr.strip() == f"cancelled the source run {source}"
    await wait_for_status(ctl, source, "cancelled")
    await wait_for_status(ctl, new_id, "awaiting_approval")

    again = f"resumed-{uuid.uuid4().hex[:8]}"  # the source has ended: nothing to do
    twice = await ctl("resume", str(target), "--id", again, "--cancel-source")
    assert twice.code == 0, twice.stderr
    assert twice.stderr.strip() == f"the source run {source} has already ended (canceled)"

    # The source's id reused by a continuation: --cancel-source leaves that run alone.
    assert (await ctl("resume", str(target), "--id", source)).code == 0
    await wait_for_status(ctl, source, "awaiting_approval")
    third = f"resumed-{uuid.uuid4().hex[:8]}"
    refused = await ctl("resume", str(target), "--id", third, "--cancel-source", "--json")
    assert refused.code == 1
    assert json.loads(refused.stdout)["run_id"] == third  # started: said on stdout all the same
    assert "a run with that id here is another one, left alone" in refused.stderr
    assert f"agentctl cancel {source}" in refused.stderr
    await wait_for_status(ctl, source, "awaiting_approval")  # still waiting, not cancelled
    for run in (new_id, again, source, third):
        await worker.client.get_workflow_handle(run).terminate("done")


async def test_seal_shows_the_edit_seals_it_and_the_seal_approves_nothing(
    ctl, worker, model_server, tmp_path: Path
) -> None:
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    source = (await ctl("start", "assistant", "mail", "--json")).json()["run_id"]
    await wait_for_status(ctl, source, "awaiting_approval")
    original = tmp_path / "run.json"
    assert (await ctl("export", source, "-o", str(original))).code == 0
    await worker.client.get_workflow_handle(source).terminate("exported")

    # An edit made on purpose, and one an attacker would like: an approval nobody gave.
    document = json.loads(original.read_text())
    document["context"] = {"ticket": "OPS-7"}
    at = document["items"][-1]["at"]
    document["items"].append(
        {"type": "decision", "call_id": "call_email", "decision": "approve",
         "approver": "mallory", "via": "signal", "at": at}
    )  # fmt: skip
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    refused = await agentctl("validate", str(edited))
    assert refused.code == 1 and "digest" in refused.stderr  # tampering stays refused

    sealed = tmp_path / "sealed.json"
    out = await agentctl("seal", str(edited), "-o", str(sealed), "--against", str(original))
    assert out.code == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == "its integrity block does not match its content (edited since it was sealed)"
    assert lines[1] == f"differs from {original}:"
    assert '  changed $.context: null → {"ticket": "OPS-7"}' in lines
    assert any(line.startswith('  added   $.items[2]: {"type": "decision"') for line in lines)
    assert "its decisions grant nothing" in lines[-2] and lines[-1] == f"wrote {sealed}"
    assert (await agentctl("validate", str(sealed))).code == 0

    new_id = f"sealed-{uuid.uuid4().hex[:8]}"
    assert (await ctl("resume", str(sealed), "--id", new_id)).code == 0
    await wait_for_status(ctl, new_id, "awaiting_approval")  # mallory's approval: asked again
    state = (await ctl("state", new_id, "--json")).json()
    assert state["context"] == {"ticket": "OPS-7"}
    assert [r["approver"] for r in state["refused_decisions"]] == ["mallory"]
    assert agents.CALLS == []  # nothing ran
    await worker.client.get_workflow_handle(new_id).terminate("done")


async def test_seal_refuses_content_that_is_not_a_snapshot(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    for text, problem in [
        ("[1]", "a snapshot is a JSON object"),
        ("{nope", "not valid JSON"),
        ('{"schema_version": "2.0", "turn": "3"}', "invalid snapshot at $"),
    ]:
        bad.write_text(text)
        out = await agentctl("seal", str(bad), "-o", str(tmp_path / "out.json"))
        assert out.code == 1 and problem in out.stderr, (text, out.stderr)
        assert not (tmp_path / "out.json").exists()
