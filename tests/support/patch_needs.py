"""Which recorded histories still need each patch (`workflows.patches`), found by
replaying them (deploy/README.md, "Retiring a patch"):

- asked by: the histories whose run reached a branch on the patch;
- step 1 breaks: the histories that no longer replay once the patch is deprecated (its
  old branch deleted, `patches.DEPRECATED`): runs that took the old branch. While a run
  like them may be open, the patch stays.
- step 2 breaks: the histories that no longer replay once the id is deleted as well:
  runs that wrote its marker before it was deprecated.

`python -m tests.support.patch_needs` writes tests/histories/PATCHES.md; `--check`
exits 1 if it is not current. Replays without the sandbox, so the branches can be
switched from here (`patches.patched` is the one place workflow code asks).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from durable_agents.workflows import patches
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner

from durable_agents.gate_interceptor import GateInterceptor
from tests.support.histories import HISTORIES, recorded_id, replayed_workflows

TABLE = HISTORIES / "PATCHES.md"


@dataclass
class Needs:
    asked: list[str] = field(default_factory=list)
    step_1: list[str] = field(default_factory=list)
    step_2: list[str] = field(default_factory=list)


def patch_ids() -> list[str]:
    return sorted(v for k, v in vars(patches).items() if k.startswith("PATCH_"))


@contextmanager
def asking(answer: Callable[[str], bool]) -> Iterator[None]:
    """Workflow code's `patches.patched` answers with `answer` meanwhile."""
    kept = patches.patched
    patches.patched = answer
    try:
        yield
    finally:
        patches.patched = kept


@functools.cache
def quiet() -> Runtime:
    """A runtime that does not log the nondeterminism of every replay meant to fail."""
    errors = TelemetryFilter(core_level="ERROR", other_level="ERROR")
    return Runtime(telemetry=TelemetryConfig(logging=LoggingConfig(filter=errors)))


class Replays:
    def __init__(self) -> None:
        self._replayer = Replayer(
            interceptors=[GateInterceptor(None)],
            workflows=replayed_workflows(),
            data_converter=pydantic_data_converter,
            workflow_runner=UnsandboxedWorkflowRunner(),
            runtime=quiet(),
        )
        self.paths = sorted(HISTORIES.glob("*.json"))
        self._ask = patches.patched  # as workflow code asks (a deprecated patch: True)

    async def replays(self, path: Path) -> bool:
        history = WorkflowHistory.from_json(recorded_id(path), path.read_text())
        result = await self._replayer.replay_workflow(history, raise_on_replay_failure=False)
        return result.replay_failure is None

    async def asked(self) -> dict[str, dict[str, bool]]:
        """For each history, the patches its run asked and what they answered."""
        found: dict[str, dict[str, bool]] = {}
        for path in self.paths:
            answers: dict[str, bool] = {}

            def recording(patch_id: str, answers: dict[str, bool] = answers) -> bool:
                answers.setdefault(patch_id, self._ask(patch_id))
                return answers[patch_id]

            with asking(recording):
                assert await self.replays(path), f"{path.name} does not replay as it is"
            found[path.stem] = answers
        return found

    async def breaks(self, patch_id: str, names: list[str], *, deleted: bool) -> list[str]:
        """Of `names`, the histories that no longer replay with the patch deprecated
        (or, `deleted`, gone altogether: no marker asked or written)."""

        def retired(asked: str) -> bool:
            if asked != patch_id:
                return self._ask(asked)
            if not deleted:
                workflow.deprecate_patch(asked)
            return True

        broken = []
        with asking(retired):
            for name in names:
                if not await self.replays(HISTORIES / f"{name}.json"):
                    broken.append(name)
        return broken


async def needs() -> dict[str, Needs]:
    """Each patch's needs, by replay of every recorded history."""
    replays = Replays()
    asked = await replays.asked()
    table = {patch_id: Needs() for patch_id in patch_ids()}
    for name, answers in sorted(asked.items()):
        for patch_id in answers:
            table[patch_id].asked.append(name)
    for patch_id, need in table.items():
        old_branch = [n for n in need.asked if not asked[n][patch_id]]
        marked = [n for n in need.asked if asked[n][patch_id]]
        need.step_1 = await replays.breaks(patch_id, old_branch, deleted=False)
        need.step_2 = await replays.breaks(patch_id, marked, deleted=True)
    return table


def render(table: dict[str, Needs]) -> str:
    lines = [
        "# Which recorded histories need which patch",
        "",
        "Generated by `python -m tests.support.patch_needs` from a replay of every history",
        "here; `make test` checks it is current. The rule for retiring a patch is in",
        'deploy/README.md, "Retiring a patch": step 1 (deprecate: delete the old branch)',
        "breaks the histories in its column, step 2 (delete the id) those in its column.",
        "",
        "| patch | asked by | step 1 breaks | step 2 breaks |",
        "|---|---:|---:|---:|",
    ]
    for patch_id, need in table.items():
        lines.append(
            f"| `{patch_id}` | {len(need.asked)} | {len(need.step_1)} | {len(need.step_2)} |"
        )
    lines += ["", "## Still needed by runs that took the old branch (step 1 breaks)", ""]
    for patch_id, need in table.items():
        if need.step_1:
            lines.append(f"- `{patch_id}`: {', '.join(need.step_1)}")
    unneeded = [p for p, need in table.items() if not need.step_1]
    lines += [
        "",
        "## Deprecating would break no recorded history",
        "",
        ", ".join(f"`{p}`" for p in unneeded) or "(none)",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the table is stale")
    args = parser.parse_args(argv)
    text = render(asyncio.run(needs()))
    if args.check:
        current = TABLE.exists() and TABLE.read_text() == text
        if not current:
            print(f"{TABLE} is stale: run python -m tests.support.patch_needs", file=sys.stderr)
        return 0 if current else 1
    TABLE.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
