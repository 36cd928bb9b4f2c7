"""`null` for an empty list or map (Go, the `temporal` CLI) reads as empty, and only
there (workflows.json_nulls); a page of a `get_state` answer is not a state to resume."""

from __future__ import annotations

import json

import pytest
from durable_agents.workflows import snapshot
from durable_agents.workflows.payloads import AgentInput
from durable_agents.workflows.snapshot import SnapshotError
from durable_agents.workflows.snapshot_input import lenient_input
from durable_agents.workflows.state_pages import answer, parse_query

from tests.support.snapshot_golden import golden_state, nulled


def lenient(document):
    """What a run started with `document` as `resume_from` reads (PATCH_LENIENT_RESUME)."""
    return snapshot.load_data(snapshot.lenient_document(document))


def test_without_the_lenient_reading_nulls_are_refused_as_before():
    document = nulled(golden_state().model_dump(mode="json"))
    with pytest.raises(SnapshotError, match="Input should be a valid array"):
        snapshot.load_data(document)


def test_every_empty_list_written_as_null_reads_as_the_same_state():
    state = golden_state()
    document = nulled(state.model_dump(mode="json"))
    assert json.dumps(document).count("null") > 50
    assert lenient(document) == state
    file_text = json.dumps({**document})  # a hand-made file: no integrity block
    assert snapshot.loads(file_text, allow_unverified=True) == state


def test_a_null_map_reads_as_empty_and_null_inside_free_json_stays():
    state = golden_state()
    document = state.model_dump(mode="json")
    document["agent"]["tools"][0]["parameters"] = None  # a map (dict[str, JSON])
    document["context"] = None  # any JSON: null is a value
    loaded = lenient(document)
    assert loaded.agent.tools[0].parameters == {}
    assert loaded.context is None


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (("agent",), "agent"),  # an object, not a list: still refused
        (("turn",), "turn"),
        (("run_id",), "run_id"),
        (("usage",), "usage"),
    ],
)
def test_null_where_the_schema_wants_no_list_is_still_refused(path, message):
    document = golden_state().model_dump(mode="json")
    document[path[0]] = None
    with pytest.raises(SnapshotError) as caught:
        lenient(document)
    assert message in str(caught.value)


def test_a_field_that_may_be_null_stays_null():
    state = golden_state()
    document = state.model_dump(mode="json")
    document["final_output"] = None
    document["token_budget"] = None
    loaded = lenient(document)
    assert loaded.final_output is None and loaded.token_budget is None


def test_a_get_state_page_is_refused_as_a_state_to_resume_and_a_null_page_is_not():
    state = golden_state()
    whole = answer(state, parse_query({"max_bytes": 1_000_000}))
    assert "page" not in whole
    assert lenient({**whole, "page": None}) == state
    page = answer(state, parse_query({"from_item": 1, "max_bytes": 4_000}))
    assert page["page"] is not None
    with pytest.raises(SnapshotError, match=r"one page of a run's state") as caught:
        lenient(page)
    with pytest.raises(SnapshotError, match="unknown field"):
        snapshot.load_data({**whole, "page": None})  # strict: as before the patch
    assert caught.value.path == "$.page"
    with pytest.raises(SnapshotError, match=r"one page of a run's state"):
        snapshot.loads(json.dumps(page), allow_unverified=True)


def test_the_lenient_reading_of_a_start_input_says_why_it_still_fails():
    state = golden_state()
    page = answer(state, parse_query({"from_item": 0, "max_bytes": 4_000}))
    start = {"agent": "assistant", "input": "", "resume_from": page}
    assert "page" in page
    assert lenient_input(start, AgentInput) == (
        "resume_from: invalid snapshot at $.page: this is one page of a run's state (a "
        "get_state answer cut to its size bound), not the whole state: read it whole "
        "(AgentClient.state, agentctl export) to resume"
    )
    printed = {**nulled(state.model_dump(mode="json")), "page": None}
    loaded = lenient_input({**start, "resume_from": printed}, AgentInput)
    assert isinstance(loaded, AgentInput) and loaded.resume_from == state
    assert lenient_input({**start, "resume_from": printed, "turbo": 1}, AgentInput) == (
        "turbo: Extra inputs are not permitted"
    )
    for nothing in ({"agent": "a"}, [1], None, {"resume_from": "text"}):
        assert lenient_input(nothing, AgentInput) is None


def test_the_lenient_reading_never_raises_whatever_it_is_given():
    deep: dict = {}
    inner = deep
    for _ in range(5_000):  # deeper than pydantic and the JSON writer go
        inner["x"] = {}
        inner = inner["x"]
    for resume in ({"context": deep}, {"items": [deep]}, {"schema_version": "2.0", "agent": deep}):
        found = lenient_input({"agent": "a", "input": "", "resume_from": resume}, AgentInput)
        assert isinstance(found, str) and found, found
