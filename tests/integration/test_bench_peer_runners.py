"""bench.peers end to end on a real dev server: each kind's runner in its own process,
two tool turns. The framework peers run only where `make peer-venvs` installed them
(`make bench` does; `make test` does not, to stay fast: there they skip, saying so);
ours and the hand-written loop always."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

import pytest

from bench import common, peers


@pytest.mark.parametrize("kind", peers.KINDS, ids=lambda k: k.runner.removesuffix(".py"))
async def test_every_kind_runs_two_tool_turns_and_is_measured(env, kind: peers.Kind) -> None:
    if (why := peers.unavailable(kind)) is not None:
        pytest.skip(f"{kind.name}: {why}")
    server = common.dev_server_pid()
    assert server is not None
    found = await peers.run_kind(env.client, kind, 2, 300, server)
    assert found.completed == "completed", found.completed
    assert found.wall_ms > 0 and found.cpu_ms > 0 and found.history_bytes > 0
    assert found.server_cpu_ms is not None


PROBE = Path(__file__).resolve().parents[1] / "support" / "activation_imports.py"


@pytest.mark.parametrize(
    "kind", [k for k in peers.KINDS if k.venv is not None], ids=lambda k: k.venv
)
async def test_a_framework_peer_imports_nothing_inside_a_workflow_activation(
    env, kind: peers.Kind, tmp_path, monkeypatch
) -> None:
    """The SDK's deadlock detector gives an activation 2 s: a peer whose first run imports
    its model's modules there (Pydantic AI's did, about 570) fails its first workflow task
    on a loaded machine. The runner imports them before its worker starts; this checks the
    cause (nothing imported on an activation thread), not a time."""
    if (why := peers.unavailable(kind)) is not None:
        pytest.skip(f"{kind.name}: {why}")
    found = tmp_path / "imported.txt"
    monkeypatch.setenv("ACTIVATION_IMPORTS_RUNNER", str(peers.RUNNERS / kind.runner))
    monkeypatch.setenv("ACTIVATION_IMPORTS_OUT", str(found))
    probed = dataclasses.replace(kind, runner=str(PROBE))  # runs the runner, watching it
    outcome = await peers.run_kind(env.client, probed, 2, 300, None)
    assert outcome.completed == "completed", outcome.completed
    imported = found.read_text().split() if found.exists() else []
    assert imported == [], f"{len(imported)} modules imported in activations: {imported[:20]}"


async def test_a_run_that_ends_early_is_not_timed_as_n_turns(env, monkeypatch) -> None:
    """The model answers "finished" after one turn: the run is reported wrong."""
    real = peers.respond

    def early(request: dict):
        reply = real(request)
        return (
            peers.Reply(content="finished")
            if reply.tool_calls and any(m.get("role") == "tool" for m in request["messages"])
            else reply
        )

    monkeypatch.setattr(peers, "respond", early)
    found = await peers.run_kind(env.client, peers.HAND, 3, 100, None)
    assert found.completed == "**wrong**: 1 tool turns in its history, not 3"


async def test_a_broken_or_hung_runner_is_reported_and_killed(env, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(peers, "RUNNERS", tmp_path)
    (tmp_path / "broken.py").write_text("import sys\nprint('boom | x')\nsys.exit(3)\n")
    broken = peers.Kind("broken", "broken.py", None, "t")
    found = await peers.run_kind(env.client, broken, 1, 10, None)
    assert found.completed.startswith("**runner broke** (exit 3)") and "boom" in found.completed
    pid_file = tmp_path / "child.pid"
    (tmp_path / "hung.py").write_text(
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([{sys.executable!r}, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(600)\n"
    )
    monkeypatch.setattr(peers, "RUNNER_TIMEOUT_S", 3.0)
    found = await peers.run_kind(env.client, peers.Kind("hung", "hung.py", None, "t"), 1, 10, None)
    assert found.completed.startswith("**hung**")
    child = int(pid_file.read_text())
    for _ in range(50):  # killed with its process group
        if not _alive(child):
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the hung runner's child was left running")


def _alive(pid: int) -> bool:
    """Running (a killed process nobody reaped yet is a zombie: not running)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
