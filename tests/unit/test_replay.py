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
    payloads_of,
    recorded_id,
    replayed_workflows,
)

HISTORIES = sorted(RECORDED.glob("*.json"))


def test_histories_are_recorded():
    assert len(HISTORIES) >= 7, "tests/histories lost its recorded histories"


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


@pytest.mark.parametrize("name", ["patches_at_start_v52", "query_race_v53"])
def test_the_query_race_histories_hold_the_race(name: str):
    """Their replay covers the case only if the local tool's result reached the run a
    task after its marker (the task completed early to answer a query)."""
    events = json.loads((RECORDED / f"{name}.json").read_text())["events"]
    assert after_local_tool(events) == RESULT_IN_NEXT_TASK
    assert [patch for patch, _ in patch_markers(events)] == ["patches-asked-at-start"]


def test_the_patch_level_2_histories_hold_what_they_exist_for():
    """v54: a report listing a call whose arguments are no JSON object (refused since
    checked-tree-signals); v55: a forged check dropped, so the guardrail ran; v56: a
    call whose arguments hold a lone surrogate answered, never run (checked-replies)."""
    reports = json.loads((RECORDED / "checked_reports_v54.json").read_text())["events"]
    signals = [
        e["workflowExecutionSignaledEventAttributes"]
        for e in reports
        if "workflowExecutionSignaledEventAttributes" in e
    ]
    sent = [json.loads(p["data"]) for s in signals for p in payloads_of(s.get("input", {}))]
    assert any(e["arguments"] == "not json" for r in sent for e in r.get("pending", []))
    checked = json.loads((RECORDED / "forged_check_v55.json").read_text())["events"]
    scheduled = [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in checked
        if "activityTaskScheduledEventAttributes" in e
    ]
    assert "run_guardrail" in scheduled
    replied = json.loads((RECORDED / "checked_replies_v56.json").read_text())["events"]
    activities = [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in replied
        if "activityTaskScheduledEventAttributes" in e
    ]
    assert activities == ["describe_agent", "call_model", "call_model"]  # the add never ran
    for events in (reports, checked, replied):
        assert [patch for patch, _ in patch_markers(events)] == ["patch-level-2"]
