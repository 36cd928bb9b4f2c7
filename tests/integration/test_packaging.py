"""The wheel installs one namespace, `durable_agents`, with the repository's folders
mapped into it, and works from there without the checkout."""

from __future__ import annotations

import asyncio
import shutil
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGED = ("durable_agents", "workflows", "activities", "client")
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]

CHECK = """
import sys
sys.path[:0] = [SITE, DEPS]
import durable_agents
from durable_agents import Agent, AgentClient, AgentsPlugin, tool
from durable_agents.workflows.agent_workflow import AgentWorkflow
from durable_agents.testing import ScriptedModelServer
assert durable_agents.__file__.startswith(SITE), durable_agents.__file__
assert AgentWorkflow.__module__ == "durable_agents.workflows.agent_workflow"
for name in ("workflows", "activities", "client", "examples", "worker"):
    try:
        __import__(name)
    except ImportError:
        continue
    raise SystemExit(f"a top-level {name!r} is importable")
print("ok")
"""


async def run(*args: str, cwd: Path) -> str:
    process = await asyncio.create_subprocess_exec(
        *args, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await asyncio.wait_for(process.communicate(), 300)
    assert process.returncode == 0, out.decode()
    return out.decode()


async def test_the_wheel_holds_one_namespace_and_works_on_its_own(tmp_path):
    source = tmp_path / "source"  # a copy: building writes build/ and *.egg-info
    source.mkdir()
    for name in ("pyproject.toml", "README.md", *PACKAGED):
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy
        copy(ROOT / name, source / name)
    wheel_args = ["wheel", str(source), "--no-deps", "-q", "-w", str(tmp_path)]
    await run(sys.executable, "-m", "pip", *wheel_args, cwd=tmp_path)
    [wheel] = tmp_path.glob("durable_agents-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"durable_agents", f"durable_agents-{VERSION}.dist-info"}
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
        assert f"durable_agents/{module}" in names, module
    site = tmp_path / "site"
    await run(
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-deps",
        "-q",
        "--target",
        str(site),
        str(wheel),
        cwd=tmp_path,
    )
    deps = sysconfig.get_paths()["purelib"]
    script = CHECK.replace("SITE", repr(str(site))).replace("DEPS", repr(deps))
    # -S: no site hooks, so the checkout's editable install cannot stand in for the wheel;
    # run outside the checkout, so its folders are not on the path either.
    assert (await run(sys.executable, "-S", "-c", script, cwd=tmp_path)).strip() == "ok"
