"""Snapshot versions: the one schema version and its golden fixtures (one per shape an
export writes), the committed JSON Schema, and the migration machinery (an empty chain
until a release), proved with steps registered by the tests only."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from durable_agents.workflows import guardrails, handoffs, loop, snapshot, state
from durable_agents.workflows.check_payloads import GuardrailVerdict
from durable_agents.workflows.migrations import MIGRATIONS
from durable_agents.workflows.run_items import AssistantMessage, Decision
from durable_agents.workflows.snapshot import (
    SnapshotError,
    dumps,
    json_schema,
    loads,
    migrate,
    validate,
)
from durable_agents.workflows.state import SCHEMA_VERSION, RunOrigin, RunStatus

from schemas import generate
from tests.support import snapshot_golden
from tests.support.snapshot_golden import (
    FIXTURES,
    SHAPES,
    at,
    fixture_path,
    golden_state,
    golden_text,
    rewritten,
    sign,
)

# --- the version ----------------------------------------------------------------------


def test_release_1_0_shipped_one_schema_version_and_no_migration():
    """2.0 is release 1.0's version: frozen from now on (its schema and golden fixtures),
    and nothing before it is read."""
    assert SCHEMA_VERSION == "2.0" and MIGRATIONS == {} and state.SCHEMA_RELEASED
    assert generate.released_versions() == [SCHEMA_VERSION]
    assert sorted(p.name for p in generate.SCHEMA_DIR.glob("runstate-*.schema.json")) == [
        f"runstate-{SCHEMA_VERSION}.schema.json"
    ]


# --- golden fixtures, one per shape ---------------------------------------------------


def test_every_shape_has_its_fixture_and_no_other_runstate_fixture_is_kept():
    committed = sorted(p.name for p in FIXTURES.glob("runstate-*.json"))
    assert committed == sorted(fixture_path(shape).name for shape in SHAPES)


@pytest.mark.parametrize("shape", SHAPES)
def test_golden_fixture_loads_and_is_written_back_exactly(shape: str):
    text = golden_text(shape)
    assert json.loads(text)["schema_version"] == SCHEMA_VERSION
    assert dumps(loads(text)) == text, "run python -m tests.support.snapshot_golden"
    assert rewritten(text) == text


def test_a_fixture_behind_the_model_is_rewritten_as_this_build_writes_it():
    doc = json.loads(golden_text("single"))
    del doc["session"]  # as before the field was added: it gets its default
    stale = json.dumps(sign(doc), indent=2)
    assert stale != golden_text("single")
    assert rewritten(stale) == golden_text("single")


def test_the_fixtures_are_not_rewritten_once_the_version_is_released(monkeypatch, capsys):
    monkeypatch.setattr(snapshot_golden, "SCHEMA_RELEASED", True)
    assert snapshot_golden.main() == 1
    assert "is released: its fixtures never change" in capsys.readouterr().err


@pytest.mark.parametrize("shape", SHAPES)
def test_golden_fixture_is_valid_against_the_committed_json_schema(shape: str):
    schema = json.loads(generate.schema_path().read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(json.loads(golden_text(shape)))
    edited = json.loads(golden_text(shape)) | {"turn": "2"}
    with pytest.raises(jsonschema.ValidationError, match="'2' is not of type 'integer'"):
        validator.validate(edited)


def test_the_shapes_are_a_single_run_a_tree_and_a_paused_run():
    single, tree, paused = (golden_state(shape) for shape in ("single", "tree", "paused"))
    assert not single.sub_runs and not single.sub_approvals and single.depth == 0
    assert [s.call_id for s in tree.sub_runs] == ["c9"] and tree.sub_approvals
    assert tree.sub_runs[0].state.run_id == "support-7/c9"
    assert paused.status == RunStatus.PAUSED and paused.paused is not None
    assert paused.paused.by == "oncall" and not paused.sub_runs


@pytest.mark.parametrize("shape", ["single", "tree"])
def test_golden_fixture_resumes_where_it_failed(shape: str):
    state = loop.resume(
        loads(golden_text(shape)), run_id="support-8", workflow_run="wr-8", now=at(100)
    )
    assert state.status == RunStatus.RUNNING and state.error is None
    assert state.origin == RunOrigin(run_id="support-7", turn=2, mode="resume")
    step = loop.next_step(state)
    assert isinstance(step, loop.AwaitResume)  # it resumes paused, and goes on once unpaused
    assert loop.unpause(state, now=at(100)) is None
    step = loop.next_step(state)
    # the message the resume adds is checked first, and so is the request of the agent
    # answering since the handoff took over
    assert handoffs.latest(state) is not None and state.agent.input_guardrails
    for _ in range(2):
        assert isinstance(step, loop.CheckGuardrails) and step.kind == "input"
        verdicts = [GuardrailVerdict(name="g", tripped=False)]
        guardrails.record(state, "input", verdicts, now=at(100), item=step.item)
        step = loop.next_step(state)
    assert isinstance(step, loop.CallModel) and step.request.turn == 3


def test_the_paused_fixture_resumes_paused_and_waits_for_its_decision():
    source = golden_state("paused")
    state = loop.resume(source, run_id="assistant-2", workflow_run="wr-2", now=at(100))
    assert isinstance(loop.next_step(state), loop.AwaitResume)
    assert loop.unpause(state, now=at(100)) is None
    assert loop.next_step(state) == loop.AwaitDecisions(("call_email",))


def test_golden_fixture_covers_every_item_type_and_decision_record():
    state = loads(golden_text("single"))
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
    assert any(c.idempotency_key for c in calls)


def test_golden_fixture_has_exactly_the_fields_of_the_schema():
    schema, doc = json_schema(), json.loads(golden_text())
    assert set(doc) == set(schema["properties"])
    assert set(schema["required"]) <= set(doc)


# --- the committed JSON Schema ----------------------------------------------------------


def test_committed_schema_matches_the_model():
    committed = json.loads(generate.schema_path().read_text(encoding="utf-8"))
    assert committed == json_schema(), "run python -m schemas.generate"
    assert committed["$id"] == f"urn:durable-agents:runstate:{SCHEMA_VERSION}"


def test_json_schema_is_deterministic_and_requires_integrity():
    assert json.dumps(json_schema()) == json.dumps(json_schema())
    assert "integrity" in json_schema()["required"]


def test_a_minor_version_that_does_more_than_add_optional_fields_is_caught():
    old = json_schema()
    new = json.loads(json.dumps(old))
    new["$id"], new["properties"]["schema_version"]["const"] = "urn:x:2.1", "2.1"
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
    monkeypatch.setitem(MIGRATIONS, "1.99", lambda d: {**d, "schema_version": "2.0"})
    assert generate.main(["--check"]) == 1
    assert "runstate-1.99.schema.json is missing" in capsys.readouterr().err


def test_generate_check_fails_on_a_schema_of_no_version(monkeypatch, tmp_path):
    monkeypatch.setattr(generate, "SCHEMA_DIR", tmp_path)
    generate.schema_path().write_text(generate.render(json_schema()), encoding="utf-8")
    assert generate.release_problems() == []
    (tmp_path / "runstate-1.31.schema.json").write_text("{}", encoding="utf-8")
    assert generate.release_problems() == [
        "runstate-1.31.schema.json: no such version (neither current nor migrated from): remove it"
    ]


def test_generate_rewrites_the_schema_of_a_version_not_released_yet(monkeypatch, tmp_path):
    monkeypatch.setattr(state, "SCHEMA_RELEASED", False)
    path = tmp_path / "runstate.schema.json"
    schema = json_schema()
    schema["properties"]["turn"]["minimum"] = 1
    path.write_text(generate.render(schema), encoding="utf-8")
    assert generate.main(["--check"], path=path) == 1
    assert generate.main([], path=path) == 0
    assert json.loads(path.read_text(encoding="utf-8")) == json_schema()


def test_generate_refuses_to_overwrite_a_released_schema_that_changed(
    monkeypatch, tmp_path, capsys
):
    monkeypatch.setattr(state, "SCHEMA_RELEASED", True)
    path = tmp_path / "runstate.schema.json"
    schema = json_schema()
    schema["properties"]["turn"]["minimum"] = 1
    path.write_text(generate.render(schema), encoding="utf-8")
    assert generate.main([], path=path) == 1
    assert generate.DRIFT in capsys.readouterr().err
    assert json.loads(path.read_text(encoding="utf-8")) == schema


def test_generate_refreshes_the_documentation_of_a_released_schema(monkeypatch, tmp_path):
    monkeypatch.setattr(state, "SCHEMA_RELEASED", True)
    path = tmp_path / "runstate.schema.json"
    schema = json_schema()
    schema["description"] = "old words"
    path.write_text(generate.render(schema), encoding="utf-8")
    assert generate.main(["--check"], path=path) == 1
    assert generate.main([], path=path) == 0
    assert generate.main(["--check"], path=path) == 0


# --- migrations (machinery proved with steps the tests register) -------------------------


def _from_1_98(doc: dict[str, Any]) -> dict[str, Any]:
    """Made-up 1.98 -> 1.99: the items were called `conversation`."""
    new = {k: v for k, v in doc.items() if k != "conversation"}
    return new | {"schema_version": "1.99", "items": doc["conversation"]}


def _from_1_99(doc: dict[str, Any]) -> dict[str, Any]:
    """Made-up 1.99 -> 2.0: `parent_run` became `origin`."""
    new = {k: v for k, v in doc.items() if k != "parent_run"}
    parent = doc["parent_run"]
    origin = None if parent is None else {"run_id": parent, "turn": 2, "mode": "resume"}
    return new | {"schema_version": "2.0", "origin": origin}


def _old_1_98() -> dict[str, Any]:
    doc = json.loads(golden_text("single"))
    del doc["integrity"]
    doc["conversation"] = doc.pop("items")
    doc["parent_run"] = doc.pop("origin")["run_id"]
    return sign(doc | {"schema_version": "1.98"})


def test_a_registered_chain_migrates_step_by_step_and_writes_the_newest(monkeypatch):
    text = json.dumps(_old_1_98())
    with pytest.raises(SnapshotError, match=r"^snapshot schema 1\.98 was written by a pre-release"):
        loads(text)  # no step from it: refused
    monkeypatch.setitem(MIGRATIONS, "1.98", _from_1_98)
    monkeypatch.setitem(MIGRATIONS, "1.99", _from_1_99)
    assert loads(text) == golden_state("single")  # 1.98 -> 1.99 -> 2.0
    migrated = f"valid, schema 1.98 (migrated to {SCHEMA_VERSION}), run support-7"
    assert validate(text).startswith(migrated)
    assert dumps(loads(text)) == golden_text("single")


def test_a_chain_with_a_gap_is_refused_where_it_breaks(monkeypatch):
    monkeypatch.setitem(MIGRATIONS, "1.98", _from_1_98)  # no step from 1.99
    with pytest.raises(SnapshotError) as raised:
        loads(json.dumps(_old_1_98()))
    assert str(raised.value) == (
        "snapshot schema 1.99 was written by a pre-release build; "
        f"this build reads {SCHEMA_VERSION}"
    )


def test_migrate_is_pure_and_takes_its_table_as_a_parameter():
    old = _old_1_98()
    before = json.dumps(old)
    migrated = migrate(old, migrations={"1.98": _from_1_98, "1.99": _from_1_99})
    assert migrated["schema_version"] == SCHEMA_VERSION and "origin" in migrated
    assert json.dumps(old) == before
    assert MIGRATIONS == {}


def _next_minor(monkeypatch) -> str:
    """Pretend this build writes 2.1 (for `migrate`, which works on plain dicts)."""
    monkeypatch.setattr(snapshot, "SCHEMA_VERSION", "2.1")
    return "2.1"


def test_a_step_that_edits_its_argument_in_place_does_not_reach_the_caller(monkeypatch):
    newer = _next_minor(monkeypatch)

    def careless(doc: dict[str, Any]) -> dict[str, Any]:
        doc["items"][0]["content"] = "changed by the step"
        doc["agent"]["tools"].clear()
        doc["schema_version"] = newer
        return doc

    original = json.loads(golden_text("single"))
    del original["integrity"]
    before = json.dumps(original)
    migrated = migrate(original, migrations={"2.0": careless})
    assert json.dumps(original) == before
    assert migrated["items"][0]["content"] == "changed by the step"
    assert migrated["schema_version"] == newer


def test_a_migration_that_does_not_move_forward_is_a_bug():
    with pytest.raises(RuntimeError, match=r"the migration from 1\.99 produced version '1\.99'"):
        migrate({"schema_version": "1.99"}, migrations={"1.99": lambda d: dict(d)})


def test_a_migration_reaches_the_states_of_sub_runs_too(monkeypatch):
    newer = _next_minor(monkeypatch)
    doc = json.loads(golden_text("tree"))
    del doc["integrity"]
    seen: list[str] = []

    def step(data: dict[str, Any]) -> dict[str, Any]:
        seen.append(data["run_id"])
        return {**data, "schema_version": newer}

    migrated = migrate(doc, migrations={"2.0": step})
    assert seen == [doc["run_id"], doc["sub_runs"][0]["state"]["run_id"]]
    assert migrated["sub_runs"][0]["state"]["schema_version"] == newer
    assert doc["sub_runs"][0]["state"]["schema_version"] == SCHEMA_VERSION  # input untouched
