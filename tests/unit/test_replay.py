"""Recorded histories must replay on the current workflow code (determinism)."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.support.histories import HISTORIES as RECORDED
from tests.support.histories import recorded_id, replayed_workflows

HISTORIES = sorted(RECORDED.glob("*.json"))


def test_histories_are_recorded():
    assert len(HISTORIES) >= 7, "tests/histories lost its recorded histories"


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.stem)
async def test_recorded_history_replays_without_nondeterminism(path: Path):
    history = WorkflowHistory.from_json(recorded_id(path), path.read_text())
    replayer = Replayer(workflows=replayed_workflows(), data_converter=pydantic_data_converter)
    result = await replayer.replay_workflow(history, raise_on_replay_failure=True)
    assert result.replay_failure is None
