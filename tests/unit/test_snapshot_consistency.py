"""Snapshots whose parts contradict each other must not load, even with a recomputed
digest; a snapshot document as workflow input (`resume_from`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from durable_agents.workflows.snapshot import SnapshotError, dumps, loads, validate
from durable_agents.workflows.snapshot_input import SnapshotInput
from durable_agents.workflows.state import RunState
from pydantic import TypeAdapter, ValidationError

from tests.support.snapshot_golden import (
    KEY,
    case,
    edited,
    golden_state,
    golden_text,
    insert_item,
    move_item,
    set_at,
)


def _timeout_approval(doc: dict[str, Any]) -> None:
    doc["items"][7] |= {"via": "timeout", "decision": "approve"}


# Edits that keep the schema but make the items contradict each other: with a
# recomputed SHA-256 digest (anyone can compute one) they pass the integrity check.
MALLORY = {
    "type": "decision",
    "call_id": "c3",
    "decision": "reject",
    "approver": "mallory",
    "via": "signal",
    "at": "2026-03-01T09:01:32Z",
}
INCONSISTENT = [
    case(
        lambda: edited(set_at("items.1.at", "2026-03-01T09:00:01.250000")),
        "invalid snapshot at $.items[1].at: Input should have timezone info",
        "naive-reply-time",
    ),
    case(
        lambda: edited(set_at("created_at", "2026-03-01T09:00:00")),
        "invalid snapshot at $.created_at: Input should have timezone info",
        "naive-created-at",
    ),
    case(
        lambda: edited(set_at("refused_decisions.0.at", "2026-03-01T09:01:31")),
        "invalid snapshot at $.refused_decisions[0].at: Input should have timezone info",
        "naive-attempt-time",
    ),
    case(
        lambda: edited(set_at("items.7.call_id", "c9")),
        "invalid snapshot at $.items[7].call_id: decision for tool call 'c9', "
        "which no reply proposed",
        "decision-for-unknown-call",
    ),
    case(
        lambda: edited(set_at("items.3.call_id", "c1")),
        "invalid snapshot at $.items[3].call_id: decision for tool call 'c1', "
        "which needs no approval",
        "decision-for-call-without-approval",
    ),
    case(
        lambda: edited(insert_item(8, MALLORY)),
        "invalid snapshot at $.items[8].call_id: second decision for tool call 'c3' "
        "(already decided: approve by alice)",
        "second-decision-overriding-the-first",
    ),
    case(
        lambda: edited(move_item(3, 1)),
        "invalid snapshot at $.items[1].call_id: decision for tool call 'c2' comes before "
        "the reply that proposed it (items[2])",
        "decision-before-its-call",
    ),
    case(
        lambda: edited(set_at("items.7.call_id", "c2")),
        "invalid snapshot at $.items[7].call_id: decision for tool call 'c2' of an earlier "
        "turn (a decision follows the reply that proposed its call)",
        "decision-for-a-call-of-an-earlier-turn",
    ),
    case(
        lambda: edited(set_at("items.2.call_id", "c7")),
        "invalid snapshot at $.items[2].call_id: result for tool call 'c7', "
        "which no reply proposed",
        "result-for-unknown-call",
    ),
    case(
        lambda: edited(move_item(2, 1)),
        "invalid snapshot at $.items[1].call_id: result for tool call 'c1' comes before "
        "the reply that proposed it (items[2])",
        "result-before-its-call",
    ),
    case(
        lambda: edited(set_at("turn", 3)),
        "invalid snapshot at $.turn: turn is 3 but the items hold 2 model replies",
        "turn-not-matching-the-replies",
    ),
    case(
        lambda: edited(set_at("items.5.turn", 3)),
        "invalid snapshot at $.items[5].turn: reply of turn 3, expected 2",
        "reply-turns-out-of-sequence",
    ),
    case(
        lambda: edited(set_at("items.3.always", False)),
        "invalid snapshot at $.items[6].via: rule decision with no earlier `always` approve "
        "by alice on refund behind it",
        "rule-without-always-decision",
    ),
    case(
        lambda: edited(set_at("items.6.approver", "mallory")),
        "invalid snapshot at $.items[6].via: rule decision with no earlier `always` approve "
        "by mallory on refund behind it",
        "rule-of-another-approver",
    ),
    case(
        lambda: edited(_timeout_approval),
        "invalid snapshot at $.items[7].decision: a decision at the approval deadline can "
        "only reject",
        "approval-by-timeout",
    ),
    case(
        lambda: edited(set_at("usage.input_tokens", -5)),
        "invalid snapshot at $.usage.input_tokens: usage cannot be negative",
        "negative-usage",
    ),
    case(  # the AgentTotalTokens search attribute (Int) could not take it: the run would wedge
        lambda: edited(set_at("usage.total_tokens", 2**63)),
        "invalid snapshot at $.usage.total_tokens: more than 1e+15 is not a count a run reaches",
        "usage-past-int64",
    ),
]


@pytest.mark.parametrize(("make", "message"), INCONSISTENT)
def test_contradicting_items_are_refused_with_their_json_path(
    make: Callable[[], str], message: str
):
    text = make()
    with pytest.raises(SnapshotError) as raised:
        loads(text)
    assert str(raised.value) == message
    with pytest.raises(SnapshotError, match=f"^{re.escape(message)}$"):
        validate(text)


# --- as workflow input (`resume_from`) -------------------------------------------------

INPUT = TypeAdapter(SnapshotInput)


def test_an_exported_file_is_accepted_as_workflow_input_with_its_digest_checked():
    assert INPUT.validate_json(golden_text()) == golden_state()
    assert INPUT.validate_json(golden_text("paused")) == golden_state("paused")
    with pytest.raises(ValidationError) as raised:
        INPUT.validate_json(edited(set_at("items.3.decision", "reject"), resign=False))
    [error] = raised.value.errors()
    assert error["msg"] == "snapshot was modified after export (digest mismatch)"


def test_workflow_input_without_integrity_is_still_validated_strictly():
    content = json.loads(golden_text())
    del content["integrity"]
    assert INPUT.validate_python(content) == golden_state()
    with pytest.raises(ValidationError) as raised:
        INPUT.validate_python(content | {"turn": "2"})
    assert raised.value.errors()[0]["msg"] == (
        "invalid snapshot at $.turn: Input should be a valid integer"
    )


def test_a_signed_file_as_workflow_input_is_left_to_the_client_to_verify():
    """Workers never hold the signing key: agentctl and AgentClient verify before starting."""
    signed = dumps(golden_state(), key=KEY)
    assert INPUT.validate_json(signed) == golden_state()


def test_run_state_refuses_naive_timestamps_in_any_input():
    content = json.loads(golden_text())
    del content["integrity"]
    with pytest.raises(ValidationError, match="updated_at\n  Input should have timezone info"):
        RunState.model_validate_json(json.dumps(content | {"updated_at": "2026-03-01T09:01:35"}))
    built = golden_state().model_dump()
    assert RunState.model_validate(built) == golden_state()
    with pytest.raises(ValidationError, match="created_at\n  Input should have timezone info"):
        RunState.model_validate(built | {"created_at": datetime(2026, 3, 1, 9)})


def test_workflow_input_of_a_pre_release_version_is_refused_in_one_line():
    content = json.loads(golden_text())
    del content["integrity"]
    with pytest.raises(ValidationError) as raised:
        INPUT.validate_python(content | {"schema_version": "1.31"})
    assert raised.value.errors()[0]["msg"] == (
        "snapshot schema 1.31 was written by a pre-release build; this build reads 2.0"
    )
    with pytest.raises(ValidationError, match=r"Input should be '2\.0'"):
        RunState.model_validate(content | {"schema_version": "1.31"})
