"""Scenario histories recorded from the tests themselves (`make record-histories`).

A test that drives a capability which changes what a run writes is a scenario:
marked `@pytest.mark.history("NAME")`, it asks for the `scenario` fixture
(tests/conftest.py) and tells it which runs are the scenario's:
`scenario.run(handle)` for its run, `scenario.run(handle, child="c1")` for another
run it caused (an agent called as a tool, a webhook delivery). In record mode
(`RECORD_HISTORIES=FOLDER`), once the test has passed, every run it named is
written into FOLDER: `NAME.json` (`NAME.runN.json` for run N of a chain that
continued as new, `NAME__c1.json` for a child), with the workflow id each replays
under in FOLDER's `ids.jsonl` (a decision is bound to its run's id, so a history
replays only under its own). Nothing is ever overwritten: a scenario with a file
in FOLDER already is skipped, not run; one whose test began but left no file
(failed, or skipped itself) fails the record run by name. Outside record mode the
fixture only checks that the test named a run."""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.client import Client, WorkflowHandle, WorkflowHistory

FOLDER_ENV = "RECORD_HISTORIES"
"""The environment variable naming the folder a record run writes (unset: no recording)."""
MARKER = "history"
"""The pytest marker naming a test's scenario: `@pytest.mark.history("approvals")`."""
IDS = "ids.jsonl"
"""Per release folder: one `{"file", "workflow_id"}` line per history written there."""

_NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
"""A scenario's name or a child's part: a file name's stem, `__` left to children."""


def folder() -> Path | None:
    """The folder record mode writes into, or None outside record mode."""
    named = os.environ.get(FOLDER_ENV, "")
    return Path(named) if named else None


def checked_name(name: object, *, what: str = "a history name") -> str:
    """`name` if it can be a file name's stem of a scenario (lower case, digits, `_`)."""
    if not isinstance(name, str) or len(name) > 64 or not _NAME.fullmatch(name):
        raise ValueError(f"{what} must match {_NAME.pattern} (64 characters at most), not {name!r}")
    return name


def scenario_name(marker_args: tuple) -> str:
    """The scenario name a `history` marker gives (exactly one argument)."""
    if len(marker_args) != 1:
        raise ValueError(
            f'@pytest.mark.history takes one name, as history("approvals"), not {marker_args!r}'
        )
    return checked_name(marker_args[0])


def recorded_already(target: Path, name: str) -> list[Path]:
    """The files of scenario `name` that `target` holds (any: it is not recorded again)."""
    if not target.is_dir():
        return []
    return sorted(
        p
        for p in target.iterdir()
        if p.name.split(".")[0].split("__")[0] == name and p.suffix == ".json"
    )


@dataclass
class HistoryRecorder:
    """The runs a scenario test names (`run`), written by `save` in record mode."""

    name: str | None
    """The test's scenario (None: the test is not marked, nothing is kept)."""
    client: Client
    """Where the runs are read from unless `run` is given another client."""
    runs: list[tuple[str, Client, str]] = field(default_factory=list)
    """(child part, client, workflow id) of each run named, in order."""

    def run(
        self,
        handle: WorkflowHandle | WorkflowHistory,
        *,
        child: str = "",
        client: Client | None = None,
    ) -> None:
        """The workflow of `handle` (or of a history fetched from it) is part of the
        scenario, every run of its continue-as-new chain: its own files if `child` is
        empty, else `NAME__CHILD...` (a child run, a webhook delivery). `client`: the
        server it ran on (default: the session's)."""
        if isinstance(handle, WorkflowHandle):
            workflow_id = handle.id
        elif isinstance(handle, WorkflowHistory):
            workflow_id = handle.workflow_id
        else:
            raise TypeError(f"scenario.run takes a WorkflowHandle, not {type(handle).__name__}")
        if child:
            checked_name(child, what="a child part")
        if any(part == child for part, _, _ in self.runs):
            raise ValueError(f"scenario.run: {child or 'the root'} is named twice")
        self.runs.append((child, client or self.client, workflow_id))

    async def save(self, target: Path) -> list[Path]:
        """Write every named run's histories into `target`, and their ids to its
        `ids.jsonl`; refuses (FileExistsError, nothing written) if any file exists."""
        if self.name is None:
            raise ValueError("scenario.save: the test has no @pytest.mark.history name")
        if not self.runs:
            raise ValueError(f"scenario {self.name!r} named no run (scenario.run(handle))")
        files: dict[Path, tuple[str, WorkflowHistory]] = {}
        for part, client, workflow_id in self.runs:
            chain = await runs_of(client, workflow_id)
            stem = f"{self.name}__{part}" if part else self.name
            for number, history in enumerate(chain, start=1):
                file = f"{stem}.json" if len(chain) == 1 else f"{stem}.run{number}.json"
                files[target / file] = (workflow_id, history)
        existing = [p for p in files if p.exists()]
        if existing:
            raise FileExistsError(f"recorded histories are never overwritten: {existing}")
        if any(target.glob("*.json")) and not (target / IDS).exists():
            raise FileExistsError(
                f"{target} holds histories recorded before this hook (as 1.0's): a release's "
                "folder is never added to; record the next release's (pyproject's version)"
            )
        target.mkdir(parents=True, exist_ok=True)
        with open(target / IDS, "a") as ids:
            fcntl.flock(ids, fcntl.LOCK_EX)  # record runs write side by side (pytest -n)
            for path, (workflow_id, history) in files.items():
                with open(path, "x") as out:
                    out.write(history.to_json())
                ids.write(json.dumps({"file": path.name, "workflow_id": workflow_id}) + "\n")
        return list(files)


async def runs_of(client: Client, workflow_id: str) -> list[WorkflowHistory]:
    """The histories of every run of `workflow_id`'s latest chain, oldest first (each
    run's start event names the run it continued)."""
    histories = [await client.get_workflow_handle(workflow_id).fetch_history()]
    while True:
        started = histories[0].events[0].workflow_execution_started_event_attributes
        if not started.continued_execution_run_id:
            return histories
        before = client.get_workflow_handle(workflow_id, run_id=started.continued_execution_run_id)
        histories.insert(0, await before.fetch_history())


def unrecorded(target: Path, names: set[str]) -> list[str]:
    """The scenarios of `names` that `target` holds no history of, sorted."""
    return sorted(name for name in names if not recorded_already(target, name))


def stored_ids(release: Path) -> dict[str, str] | None:
    """File name → workflow id, from `release`'s `ids.jsonl` (None: the folder has none,
    as 1.0's, recorded before this hook, whose ids follow its recorder's naming)."""
    path = release / IDS
    if not path.exists():
        return None
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {line["file"]: line["workflow_id"] for line in lines}


def check_marked(items: list) -> None:
    """Collection-time checks of the scenario markers: one name each, valid, used
    once, and the test asks for the `scenario` fixture (else nothing could be named)."""
    seen: dict[str, str] = {}
    for item in items:
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            continue
        name = scenario_name(marker.args)
        if "scenario" not in getattr(item, "fixturenames", ()):
            raise ValueError(
                f"{item.nodeid} is marked history({name!r}) but takes no `scenario` fixture"
            )
        if name in seen:
            raise ValueError(f"history({name!r}) marks both {seen[name]} and {item.nodeid}")
        seen[name] = item.nodeid
