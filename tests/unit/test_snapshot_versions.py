"""Snapshot versions: a golden fixture and a committed JSON schema per released version,
minor versions only adding optional fields, and migrations."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from durable_agents.workflows import guardrails, handoffs, loop
from durable_agents.workflows.migrations import MIGRATIONS
from durable_agents.workflows.payloads import GuardrailVerdict
from durable_agents.workflows.snapshot import dumps, json_schema, loads, migrate, validate
from durable_agents.workflows.state import (
    SCHEMA_VERSION,
    AssistantMessage,
    Decision,
    RunOrigin,
    RunStatus,
)

from schemas import generate
from tests.support.snapshot_golden import (
    RELEASED,
    at,
    fixture_path,
    golden_state,
    golden_text,
    sign,
)

# --- golden fixtures and schemas, one per released version ---------------------------


def test_every_released_version_has_a_committed_schema_and_golden_fixture():
    assert RELEASED == generate.released_versions() and RELEASED[-1] == SCHEMA_VERSION
    for version in RELEASED:
        assert fixture_path(version).exists(), f"no golden fixture for {version}"
        assert generate.schema_path(version).exists(), f"no committed schema for {version}"
        assert json.loads(golden_text(version))["schema_version"] == version
    assert generate.release_problems() == []


@pytest.mark.parametrize("version", RELEASED)
def test_golden_fixture_loads_as_the_state_it_was_made_from(version: str):
    """On a version bump, make `golden_state(v)` what v migrates to; never touch a fixture."""
    assert loads(golden_text(version)) == golden_state(version)


@pytest.mark.parametrize("version", RELEASED)
def test_golden_fixture_is_valid_against_its_committed_json_schema(version: str):
    schema = json.loads(generate.schema_path(version).read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(json.loads(golden_text(version)))
    edited = json.loads(golden_text(version)) | {"turn": "2"}
    with pytest.raises(jsonschema.ValidationError, match="'2' is not of type 'integer'"):
        validator.validate(edited)


@pytest.mark.parametrize("version", RELEASED)
def test_golden_fixture_resumes_where_it_failed(version: str):
    state = loop.resume(
        loads(golden_text(version)), run_id="support-8", workflow_run="wr-8", now=at(100)
    )
    assert state.status == RunStatus.RUNNING and state.error is None
    assert state.origin == RunOrigin(run_id="support-7", turn=2, mode="resume")
    step = loop.next_step(state)
    if state.paused is not None:  # 1.12: it resumes paused, and goes on once unpaused
        assert isinstance(step, loop.AwaitResume)
        assert loop.unpause(state, now=at(100)) is None
        step = loop.next_step(state)
    # 1.7+: the message the resume adds is checked first; 1.21+: so is the request the
    # agent answering since the handoff took over
    checks = 2 if handoffs.latest(state) is not None else 1
    for _ in range(checks if state.agent.input_guardrails else 0):
        assert isinstance(step, loop.CheckGuardrails) and step.kind == "input"
        verdicts = [GuardrailVerdict(name="g", tripped=False)]
        guardrails.record(state, "input", verdicts, now=at(100), item=step.item)
        step = loop.next_step(state)
    assert isinstance(step, loop.CallModel) and step.request.turn == 3


def test_golden_fixture_covers_every_item_type_and_decision_record():
    state = loads(golden_text())
    assert {i.type for i in state.items} == {
        "user_message",
        "assistant_message",
        "tool_result",
        "decision",
        "guardrail_check",
        "budget_request",
        "compaction",
        "handoff",
    }
    made = [i for i in state.items if isinstance(i, Decision)]
    assert {d.via for d in made} == {"update", "rule", "signal", "timeout"}
    assert any(d.arguments for d in made) and any(d.always for d in made)
    assert state.held_decisions and state.refused_decisions[0].refused_because
    policy = state.agent.tool("refund").approval  # type: ignore[union-attr]
    assert policy.when and policy.approvers and policy.timeout
    calls = [c for i in state.items if isinstance(i, AssistantMessage) for c in i.tool_calls]
    assert any(c.idempotency_key for c in calls)  # new in 1.1


@pytest.mark.parametrize("version", RELEASED)
def test_golden_fixture_is_written_back_as_the_newest_version(version: str):
    rewritten = dumps(loads(golden_text(version)))
    assert json.loads(rewritten)["schema_version"] == SCHEMA_VERSION
    if version == SCHEMA_VERSION:
        assert rewritten == golden_text(version)


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


def test_released_minor_versions_only_add_optional_fields():
    old, new = (json.loads(generate.schema_path(v).read_text()) for v in ("1.0", "1.1"))
    assert generate.non_additive_changes(old, new) == []


def test_a_minor_version_that_does_more_than_add_optional_fields_is_caught():
    old = json_schema()
    new = json.loads(json.dumps(old))
    new["$id"], new["properties"]["schema_version"]["const"] = "urn:x:1.2", "1.2"
    usage = new["$defs"]["Usage"]["properties"]
    new["$defs"]["ToolCall"]["properties"]["note"] = {"type": "string", "default": ""}
    assert generate.non_additive_changes(old, new) == []  # optional field, new version: fine
    usage["input_tokens"]["minimum"] = 0
    new["properties"]["priority"] = {"type": "integer"}
    new["required"].append("priority")
    del new["$defs"]["ToolResult"]["properties"]["is_error"]
    new["$defs"]["RunOrigin"]["properties"]["turn"]["type"] = "string"
    assert generate.non_additive_changes(old, new) == [
        "/$defs/RunOrigin/properties/turn/type: changed",
        "/$defs/ToolResult/properties/is_error: removed",
        "/$defs/Usage/properties/input_tokens/minimum: added",
        "/required: changed",
    ]


def test_generate_check_fails_when_a_released_version_lacks_its_schema(monkeypatch, capsys):
    monkeypatch.setitem(MIGRATIONS, "0.9", lambda d: {**d, "schema_version": "1.0"})
    assert generate.main(["--check"]) == 1
    assert "runstate-0.9.schema.json is missing" in capsys.readouterr().err


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
    doc = json.loads(golden_text("1.0"))
    del doc["integrity"]
    doc["conversation"] = doc.pop("items")
    doc["parent_run"] = doc.pop("origin")["run_id"]
    return sign(doc | {"schema_version": "0.8"})


def test_older_snapshots_migrate_step_by_step_and_are_written_as_the_newest(monkeypatch):
    monkeypatch.setitem(MIGRATIONS, "0.8", _from_0_8)
    monkeypatch.setitem(MIGRATIONS, "0.9", _from_0_9)
    text = json.dumps(_old_0_8())
    assert loads(text) == golden_state("1.0")  # 0.8 -> 0.9 -> 1.0 -> ... -> the newest
    migrated = f"valid, schema 0.8 (migrated to {SCHEMA_VERSION}), run support-7"
    assert validate(text).startswith(migrated)
    assert dumps(loads(text)) == dumps(golden_state("1.0"))


def test_migrate_is_pure_and_takes_its_table_as_a_parameter():
    old = _old_0_8()
    before = json.dumps(old)
    steps = {
        "0.8": _from_0_8,
        "0.9": _from_0_9,
        "1.0": MIGRATIONS["1.0"],
        "1.1": MIGRATIONS["1.1"],
        "1.2": MIGRATIONS["1.2"],
        "1.3": MIGRATIONS["1.3"],
        "1.4": MIGRATIONS["1.4"],
        "1.5": MIGRATIONS["1.5"],
        "1.6": MIGRATIONS["1.6"],
        "1.7": MIGRATIONS["1.7"],
        "1.8": MIGRATIONS["1.8"],
        "1.9": MIGRATIONS["1.9"],
        "1.10": MIGRATIONS["1.10"],
        "1.11": MIGRATIONS["1.11"],
        "1.12": MIGRATIONS["1.12"],
        "1.13": MIGRATIONS["1.13"],
        "1.14": MIGRATIONS["1.14"],
        "1.15": MIGRATIONS["1.15"],
        "1.16": MIGRATIONS["1.16"],
        "1.17": MIGRATIONS["1.17"],
        "1.18": MIGRATIONS["1.18"],
        "1.19": MIGRATIONS["1.19"],
        "1.20": MIGRATIONS["1.20"],
        "1.21": MIGRATIONS["1.21"],
        "1.22": MIGRATIONS["1.22"],
        "1.23": MIGRATIONS["1.23"],
        "1.24": MIGRATIONS["1.24"],
        "1.25": MIGRATIONS["1.25"],
        "1.26": MIGRATIONS["1.26"],
        "1.27": MIGRATIONS["1.27"],
        "1.28": MIGRATIONS["1.28"],
        "1.29": MIGRATIONS["1.29"],
        "1.30": MIGRATIONS["1.30"],
    }
    migrated = migrate(old, migrations=steps)
    assert migrated["schema_version"] == SCHEMA_VERSION and "origin" in migrated
    assert json.dumps(old) == before


def test_a_step_that_edits_its_argument_in_place_does_not_reach_the_caller():
    def careless(doc: dict[str, Any]) -> dict[str, Any]:
        doc["items"][0]["content"] = "changed by the step"
        doc["agent"]["tools"].clear()
        doc["schema_version"] = "1.1"
        return doc

    original = json.loads(golden_text("1.0"))
    del original["integrity"]
    before = json.dumps(original)
    migrated = migrate(original, migrations={**MIGRATIONS, "1.0": careless})
    assert json.dumps(original) == before
    assert migrated["items"][0]["content"] == "changed by the step"


def test_a_migration_that_does_not_move_forward_is_a_bug():
    with pytest.raises(RuntimeError, match=r"the migration from 0\.9 produced version '0\.9'"):
        migrate({"schema_version": "0.9"}, migrations={"0.9": lambda d: dict(d)})


def test_a_later_migration_reaches_the_states_of_sub_runs_too():
    from durable_agents.workflows.state import SCHEMA_VERSION as CURRENT

    doc = json.loads(golden_text(CURRENT))
    del doc["integrity"]
    old = dict(doc, schema_version="1.23")
    old["sub_runs"] = [
        {**sub, "state": {**sub["state"], "schema_version": "1.23"}} for sub in doc["sub_runs"]
    ]
    seen: list[str] = []

    def step(data: dict[str, Any]) -> dict[str, Any]:
        seen.append(data["run_id"])
        return {**data, "schema_version": CURRENT}

    migrated = migrate(old, migrations={**MIGRATIONS, "1.23": step})
    assert seen == [doc["run_id"], doc["sub_runs"][0]["state"]["run_id"]]
    assert migrated["sub_runs"][0]["state"]["schema_version"] == CURRENT
    assert old["sub_runs"][0]["state"]["schema_version"] == "1.23"  # the input is untouched
