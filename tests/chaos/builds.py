"""Another build of this code, for deploy tests: a copy of the source tree with a change
to the agent loop that breaks replay, as a careless release would (no `patched`), and
a check that it does break the replay of a history the current build made."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

from tests.chaos.harness import ROOT

UNGUARDED = "await workflow.sleep(timedelta(milliseconds=1))  # build B: unguarded"
ANCHOR = "        await self._events.announce(state)\n        if loop.may_continue_as_new(step)"


def replay_breaking_build(where: Path) -> Path:
    """A source tree at `where` whose `worker.py` runs this code with one change: a
    timer before every step of the loop, not behind `workflow.patched`. Its packages
    sit under `durable_agents/`, so they are found before this checkout's."""
    shutil.copy(ROOT / "worker.py", where / "worker.py")
    package = where / "durable_agents"
    shutil.copytree(ROOT / "durable_agents", package, ignore=shutil.ignore_patterns("__pycache__"))
    for part in ("workflows", "activities", "client"):
        shutil.copytree(ROOT / part, package / part, ignore=shutil.ignore_patterns("__pycache__"))
    (where / "tests").symlink_to(ROOT / "tests")
    loop_code = package / "workflows" / "agent_workflow.py"
    text = loop_code.read_text()
    assert text.count(ANCHOR) == 1, "the loop changed: move build B's change"
    changed = ANCHOR.replace(
        "        await self._events.announce(state)\n",
        f"        await self._events.announce(state)\n        {UNGUARDED}\n",
    )
    loop_code.write_text(text.replace(ANCHOR, changed))
    return where


REPLAY = """
import asyncio, os, sys
from durable_agents.gate_interceptor import GateInterceptor
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from durable_agents.workflows.agent_workflow import AgentWorkflow
import durable_agents.workflows.agent_workflow as code

async def main():
    history = WorkflowHistory.from_json(sys.argv[1], open(sys.argv[2]).read())
    replayer = Replayer(
        interceptors=[GateInterceptor(None)],
        workflows=[AgentWorkflow],
        data_converter=pydantic_data_converter,
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    print(code.__file__)
    print("fails" if result.replay_failure is not None else "replays")
    print(result.replay_failure, flush=True)

asyncio.run(main())
os._exit(0)  # the verdict is out: skip the interpreter's teardown of the SDK's runtime
"""


async def replays_on(build: Path, workflow_id: str, history_json: Path) -> tuple[bool, str]:
    """Whether `build`'s code replays the history without nondeterminism, and what it
    said (the file of its loop first, so a test sees which build ran)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        REPLAY,
        workflow_id,
        str(history_json),
        cwd=build,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await process.communicate()
    said = out.decode()
    assert process.returncode == 0, f"exit {process.returncode}: {said}"
    return "\nreplays\n" in said, said
