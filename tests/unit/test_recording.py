"""The scenario markers (`@pytest.mark.history`) are checked when tests are collected:
one plain name each, used once, on a test that takes the `scenario` fixture; and a
release folder's stored ids are what its histories replay under."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from tests.support.histories import recorded_id
from tests.support.recording import IDS, check_marked, scenario_name, unrecorded


@dataclass
class Marked:
    """What `check_marked` reads of a collected test."""

    nodeid: str
    args: tuple
    fixturenames: tuple = ("scenario",)

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return getattr(pytest.mark, name)(*self.args).mark if self.args is not None else None


def test_sound_markers_and_unmarked_tests_pass():
    check_marked(
        [Marked("t::a", ("approvals",)), Marked("t::b", None, ()), Marked("t::c", ("handoff",))]
    )


@pytest.mark.parametrize(
    "args",
    [(), ("a", "b"), ("../etc/passwd",), ("Approvals",), ("a__c1",), ("a.json",), (7,), ("",)],
)
def test_a_marker_without_one_plain_name_is_refused(args):
    with pytest.raises(ValueError, match="history"):
        scenario_name(args)
    with pytest.raises(ValueError):
        check_marked([Marked("t::a", args)])


def test_a_name_marking_two_tests_is_refused_naming_both():
    with pytest.raises(ValueError, match=r"marks both t::a and t::b"):
        check_marked([Marked("t::a", ("approvals",)), Marked("t::b", ("approvals",))])


def test_a_marked_test_without_the_scenario_fixture_is_refused():
    with pytest.raises(ValueError, match="takes no `scenario` fixture"):
        check_marked([Marked("t::a", ("approvals",), ("worker",))])


def test_a_history_without_a_stored_id_is_refused_by_name(tmp_path):
    """A release folder with ids (recorded by the hook) must hold each file's: a file
    missing from it is a clear error, not a guessed id."""
    (tmp_path / IDS).write_text(json.dumps({"file": "a.json", "workflow_id": "run-a"}) + "\n")
    (tmp_path / "b.json").write_text('{"events": []}')
    assert recorded_id(tmp_path / "a.json") == "run-a"
    with pytest.raises(LookupError, match=f"b.json has no workflow id in .*{IDS}"):
        recorded_id(tmp_path / "b.json")


def test_a_scenario_without_its_file_is_named_as_unrecorded(tmp_path):
    """What fails a record run whose scenario test skipped or failed: its name, whatever
    else the folder holds (another scenario's child, a longer name sharing its start)."""
    for name in ("approvals.json", "tree__c1.json", "handoff_hooks.json", "ids.jsonl"):
        (tmp_path / name).write_text("{}")
    names = {"approvals", "tree", "handoff", "handoff_hooks", "webhooks"}
    assert unrecorded(tmp_path, names) == ["handoff", "webhooks"]
    assert unrecorded(tmp_path / "absent", {"approvals"}) == ["approvals"]
