"""Recorded histories must replay on the current workflow code (determinism)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from durable_agents.gate_interceptor import GateInterceptor
from tests.support.histories import HISTORIES as RECORDED
from tests.support.histories import (
    RESULT_IN_NEXT_TASK,
    after_local_tool,
    patch_markers,
    recorded_id,
    replayed_workflows,
)

HISTORIES = sorted(RECORDED.glob("*.json"))


def test_histories_are_recorded():
    assert len(HISTORIES) >= 12, "tests/histories lost its recorded histories"


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_recorded_history_replays_without_nondeterminism(path: Path):
    history = WorkflowHistory.from_json(recorded_id(path), path.read_text())
    replayer = Replayer(
        interceptors=[GateInterceptor(None)],
        workflows=replayed_workflows(),
        data_converter=pydantic_data_converter,
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None


def test_the_query_race_history_holds_the_race():
    """Its replay covers the case only if the local tool's result reached the run a
    task after its marker (the task completed early to answer a query)."""
    events = json.loads((RECORDED / "query_race.json").read_text())["events"]
    assert after_local_tool(events) == RESULT_IN_NEXT_TASK


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
def test_no_recorded_run_writes_a_patch_marker(path: Path):
    """No patch is owed before release 1.0 (workflows/patches.py): a marker in a
    history of the current build means a `workflow.patched` crept back in."""
    assert patch_markers(json.loads(path.read_text())["events"]) == []
