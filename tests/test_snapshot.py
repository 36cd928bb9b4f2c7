"""Snapshots without Temporal: round trip, golden fixture, schema, writing, migrations."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import generate
from tests.snapshot_golden import KEY, at, golden_state, golden_text, sign
from workflows import loop
from workflows.canonical import canonical_json
from workflows.migrations import MIGRATIONS
from workflows.snapshot import SnapshotError, dumps, json_schema, loads, migrate, validate
from workflows.state import (
    SCHEMA_VERSION,
    AgentSpec,
    ApprovalCondition,
    ApprovalPolicy,
    AssistantMessage,
    Decision,
    DecisionAttempt,
    ErrorInfo,
    RunOrigin,
    RunState,
    RunStatus,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserMessage,
)

# --- round trip ---------------------------------------------------------------------

TEXT = st.text(max_size=12)
NAME = st.text(min_size=1, max_size=8)
TIMES = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]),
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**53, max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
DECISIONS = st.sampled_from(["approve", "reject"])
ARGUMENTS = st.none() | st.dictionaries(TEXT, JSON, max_size=3)
CALLS = st.builds(ToolCall, call_id=NAME, tool=TEXT, arguments=TEXT, needs_approval=st.booleans())
ITEMS = st.one_of(
    st.builds(UserMessage, content=TEXT),
    st.builds(
        AssistantMessage,
        turn=st.integers(1, 99),
        content=st.none() | TEXT,
        tool_calls=st.lists(CALLS, max_size=3),
        at=TIMES,
    ),
    st.builds(ToolResult, call_id=NAME, content=TEXT, is_error=st.booleans()),
    st.builds(
        Decision,
        call_id=NAME,
        decision=DECISIONS,
        approver=NAME,
        reason=st.none() | TEXT,
        always=st.booleans(),
        via=st.sampled_from(["signal", "update", "rule", "timeout"]),
        arguments=ARGUMENTS,
        at=TIMES,
    ),
)
ATTEMPTS = st.builds(
    DecisionAttempt,
    call_id=TEXT,
    decision=DECISIONS,
    approver=TEXT,
    reason=st.none() | TEXT,
    always=st.booleans(),
    arguments=ARGUMENTS,
    at=TIMES,
    refused_because=st.none() | TEXT,
)
DURATIONS = st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=400))
POLICIES = st.builds(
    ApprovalPolicy,
    when=st.lists(
        st.builds(
            ApprovalCondition,
            field=NAME,
            op=st.sampled_from(["==", "!=", ">", ">=", "<", "<=", "in", "not_in"]),
            value=JSON,
        ),
        max_size=2,
    ),
    approvers=st.none() | st.lists(NAME, max_size=3),
    timeout=st.none() | DURATIONS,
    on_timeout=st.sampled_from(["reject", "fail"]),
)
TOOLS = st.builds(
    ToolSpec,
    name=NAME,
    description=TEXT,
    parameters=st.dictionaries(TEXT, JSON, max_size=3),
    needs_approval=st.booleans(),
    approval=POLICIES,
    timeout_seconds=st.floats(min_value=0.001, max_value=1e6),
)
STATES = st.builds(
    RunState,
    run_id=NAME,
    agent=st.builds(
        AgentSpec,
        name=NAME,
        instructions=TEXT,
        model=NAME,
        tools=st.lists(TOOLS, max_size=2),
        session_idle_timeout=st.none() | DURATIONS,
    ),
    status=st.sampled_from(RunStatus),
    turn=st.integers(0, 500),
    max_turns=st.integers(1, 500),
    context=JSON,
    items=st.lists(ITEMS, max_size=8),
    final_output=st.none() | TEXT,
    error=st.none()
    | st.builds(
        ErrorInfo, type=NAME, message=TEXT, details=st.dictionaries(TEXT, JSON, max_size=2)
    ),
    usage=st.builds(
        Usage,
        model_calls=st.integers(0, 10**6),
        input_tokens=st.integers(0, 10**9),
        output_tokens=st.integers(0, 10**9),
        total_tokens=st.integers(0, 10**9),
    ),
    origin=st.none()
    | st.builds(
        RunOrigin, run_id=NAME, turn=st.integers(0, 99), mode=st.sampled_from(["resume", "fork"])
    ),
    session=st.booleans(),
    queued_messages=st.lists(TEXT, max_size=2),
    end_reason=st.none() | TEXT,
    workflow_runs=st.lists(NAME, max_size=2),
    held_decisions=st.lists(ATTEMPTS, max_size=2),
    refused_decisions=st.lists(ATTEMPTS, max_size=2),
    created_at=TIMES,
    updated_at=TIMES,
)


@settings(max_examples=150, deadline=None)
@given(state=STATES, key=st.sampled_from([None, KEY]))
def test_export_import_export_is_identical(state: RunState, key: bytes | None):
    text = dumps(state, key=key)
    loaded = loads(text, key=key)
    assert loaded == state
    assert dumps(loaded, key=key) == text


def test_schema_version_comes_first_and_integrity_last():
    doc = json.loads(dumps(golden_state()))
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == SCHEMA_VERSION
    assert list(doc)[-1] == "integrity"


def test_reformatting_and_reordering_keys_keeps_the_digest_valid():
    doc = json.loads(golden_text())
    reordered = dict(reversed(list(doc.items())))
    assert loads(json.dumps(reordered, separators=(",", ":"))) == golden_state()


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        # RFC 8785, section 3.2.2 / appendix examples.
        (
            {
                "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
                "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
                "literals": [None, True, False],
            },
            '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
            '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
        ),
        ({"\U0001f600": 1, "\ufb33": 2, "a": 3}, '{"a":3,"😀":1,"דּ":2}'),  # UTF-16 order
        (
            [60.0, -0.0, 1e21, 1e20, 1e-7, 1e-6, -1.5],
            "[60,0,1e+21,100000000000000000000,1e-7,0.000001,-1.5]",
        ),
        (2**80, "1208925819614629174706176"),
    ],
)
def test_canonical_json_follows_rfc_8785(value: Any, canonical: str):
    assert canonical_json(value) == canonical.encode("utf-8")


# --- golden fixture and schema --------------------------------------------------------


def test_golden_fixture_loads_as_the_state_it_was_made_from():
    """On a version bump, make `golden_state` what 1.0 migrates to; never touch the fixture."""
    assert loads(golden_text()) == golden_state()


def test_golden_fixture_covers_every_item_type_and_decision_record():
    state = loads(golden_text())
    assert {i.type for i in state.items} == {
        "user_message",
        "assistant_message",
        "tool_result",
        "decision",
    }
    made = [i for i in state.items if isinstance(i, Decision)]
    assert {d.via for d in made} == {"update", "rule", "signal"}
    assert any(d.arguments for d in made) and any(d.always for d in made)
    assert state.held_decisions and state.refused_decisions[0].refused_because
    policy = state.agent.tool("refund").approval  # type: ignore[union-attr]
    assert policy.when and policy.approvers and policy.timeout


def test_golden_fixture_is_written_back_as_the_newest_version():
    rewritten = dumps(loads(golden_text()))
    assert json.loads(rewritten)["schema_version"] == SCHEMA_VERSION
    if SCHEMA_VERSION == "1.0":  # while 1.0 is the newest, byte for byte
        assert rewritten == golden_text()


def test_golden_fixture_resumes_where_it_failed():
    state = loop.resume(loads(golden_text()), run_id="support-8", workflow_run="wr-8", now=at(100))
    assert state.status == RunStatus.RUNNING and state.error is None
    assert state.origin == RunOrigin(run_id="support-7", turn=2, mode="resume")
    step = loop.next_step(state)
    assert isinstance(step, loop.CallModel) and step.request.turn == 3


def test_golden_fixture_has_exactly_the_fields_of_the_schema():
    schema, doc = json_schema(), json.loads(golden_text())
    assert set(doc) == set(schema["properties"])
    assert set(schema["required"]) <= set(doc)


def test_committed_schema_matches_the_model():
    committed = json.loads(generate.schema_path().read_text(encoding="utf-8"))
    assert generate.substance(committed) == generate.substance(json_schema()), generate.DRIFT
    assert committed == json_schema(), "schema docs changed: run python -m schemas.generate"


def test_json_schema_is_deterministic_and_requires_integrity():
    assert json.dumps(json_schema()) == json.dumps(json_schema())
    assert "integrity" in json_schema()["required"]


def test_generate_refuses_to_overwrite_a_released_schema_that_changed(tmp_path, capsys):
    path = tmp_path / "runstate.schema.json"
    schema = json_schema()
    schema["properties"]["turn"]["minimum"] = 1
    path.write_text(generate.render(schema), encoding="utf-8")
    assert generate.main([], path=path) == 1
    assert generate.DRIFT in capsys.readouterr().err
    assert json.loads(path.read_text(encoding="utf-8")) == schema


def test_generate_refreshes_documentation_only(tmp_path):
    path = tmp_path / "runstate.schema.json"
    schema = json_schema()
    schema["description"] = "old words"
    path.write_text(generate.render(schema), encoding="utf-8")
    assert generate.main(["--check"], path=path) == 1
    assert generate.main([], path=path) == 0
    assert generate.main(["--check"], path=path) == 0


# --- writing --------------------------------------------------------------------------


def test_an_invalid_state_is_refused_on_write():
    state = golden_state()
    state.items[3].decision = "maybe"  # type: ignore[union-attr]  # no validation on assignment
    with pytest.raises(SnapshotError) as raised:
        dumps(state)
    assert str(raised.value) == (
        "invalid snapshot at $.items[3].decision: Input should be 'approve' or 'reject'"
    )


def test_non_json_context_is_refused_on_write():
    state = golden_state().model_copy(update={"context": {"x": float("inf")}})
    with pytest.raises(SnapshotError, match="state is not JSON"):
        dumps(state)


# --- validate -------------------------------------------------------------------------


def test_validate_gives_a_one_line_verdict():
    assert validate(golden_text()) == "valid, schema 1.0, run support-7, 10 items, status failed"
    assert validate(dumps(golden_state(), key=KEY), key=KEY).startswith("valid, schema 1.0")


# --- migrations -----------------------------------------------------------------------


def _from_0_8(doc: dict[str, Any]) -> dict[str, Any]:
    """Fake 0.8 -> 0.9: the items were called `conversation`."""
    new = {k: v for k, v in doc.items() if k != "conversation"}
    return new | {"schema_version": "0.9", "items": doc["conversation"]}


def _from_0_9(doc: dict[str, Any]) -> dict[str, Any]:
    """Fake 0.9 -> 1.0: `parent_run` became `origin`."""
    new = {k: v for k, v in doc.items() if k != "parent_run"}
    parent = doc["parent_run"]
    origin = None if parent is None else {"run_id": parent, "turn": 0, "mode": "resume"}
    return new | {"schema_version": "1.0", "origin": origin}


def _old_0_8() -> dict[str, Any]:
    doc = json.loads(golden_text())
    del doc["integrity"]
    doc["conversation"] = doc.pop("items")
    doc["parent_run"] = doc.pop("origin")["run_id"]
    return sign(doc | {"schema_version": "0.8"})


def test_older_snapshots_migrate_step_by_step_and_are_written_as_the_newest(monkeypatch):
    monkeypatch.setitem(MIGRATIONS, "0.8", _from_0_8)
    monkeypatch.setitem(MIGRATIONS, "0.9", _from_0_9)
    text = json.dumps(_old_0_8())
    assert loads(text) == golden_state()
    assert validate(text).startswith("valid, schema 0.8 (migrated to 1.0), run support-7")
    assert dumps(loads(text)) == golden_text()


def test_migrate_is_pure_and_takes_its_table_as_a_parameter():
    old = _old_0_8()
    before = json.dumps(old)
    migrated = migrate(old, migrations={"0.8": _from_0_8, "0.9": _from_0_9})
    assert migrated["schema_version"] == "1.0" and "origin" in migrated
    assert json.dumps(old) == before


def test_a_migration_that_does_not_move_forward_is_a_bug():
    with pytest.raises(RuntimeError, match=r"the migration from 0\.9 produced version '0\.9'"):
        migrate({"schema_version": "0.9"}, migrations={"0.9": lambda d: dict(d)})
