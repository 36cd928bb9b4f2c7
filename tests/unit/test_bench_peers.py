"""bench.peers' pure parts: the task every kind is started with, the scripted model's
answers to it, the table's ratios and the goal's verdict. No server."""

from __future__ import annotations

import dataclasses
import json
import sys

import pytest

from bench import actions, peers
from bench.peer_runners import protocol


def request(task: object, assistants: int = 0) -> dict:
    messages: list[dict] = [{"role": "system", "content": "read every part"}]
    messages.append({"role": "user", "content": task})
    for n in range(assistants):
        messages.append({"role": "assistant", "content": None, "tool_calls": []})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "x"})
    return {"messages": messages}


def test_the_task_round_trips_and_other_text_is_not_a_task() -> None:
    assert protocol.parse_task(protocol.task(50, 20_000)) == (50, 20_000)
    for text in ["", "go", "bench: -1 tool turns of 5 bytes", "bench: 5 tool turns of 5 bytes; rm",
                 "bench: 10 tool turns of 1e9 bytes", "x" * 10_000]:  # fmt: skip
        assert protocol.parse_task(text) is None


def test_the_model_calls_report_n_times_then_answers() -> None:
    task = protocol.task(3, 1_000)
    calls = [peers.respond(request(task, done)) for done in range(4)]
    assert [c.tool_calls[0].arguments for c in calls[:3]] == [
        {"size": 1_000, "part": n} for n in (1, 2, 3)
    ]
    assert all(c.tool_calls[0].tool == protocol.TOOL for c in calls[:3])
    assert calls[3].content == "finished" and not calls[3].tool_calls


@pytest.mark.parametrize("task", ["go", None, 7, [{"type": "image_url"}], "bench: 3 tool turns"])
def test_a_request_that_is_not_a_bench_task_gets_text_not_a_tool_call(task: object) -> None:
    reply = peers.respond(request(task))
    assert not reply.tool_calls and reply.content.startswith("not a bench task")


def test_a_task_in_content_parts_is_read() -> None:
    parts = [{"type": "text", "text": protocol.task(2, 10)}]
    assert peers.respond(request(parts)).tool_calls[0].arguments == {"size": 10, "part": 1}


def test_report_returns_exactly_size_bytes_or_its_head() -> None:
    assert len(protocol.report_output(20_000, 7)) == 20_000
    assert protocol.report_output(3, 12) == "part 12: "


def outcome(kind: str, ms: float, completed: str = "completed") -> peers.Outcome:
    return peers.Outcome(kind, 50, 20_000, ms, ms / 2, 10.0, 1_000, completed)


def test_the_goal_is_judged_against_the_fastest_peer_that_completed() -> None:
    cell = [
        outcome(peers.OURS.name, 40.0),
        outcome(peers.HAND.name, 60.0, "**failed**: history limit"),
        outcome("OpenAI Agents plugin", 100.0),
        outcome("Pydantic AI TemporalDurability", 80.0),
    ]
    goal = peers.goal(cell)
    assert goal.ok is True and "0.50x" in goal.measured and "Pydantic AI" in goal.measured
    cell[1] = outcome(peers.HAND.name, 60.0)
    assert peers.goal(cell).ok is False  # 40 / 60


def test_no_goal_verdict_without_a_completed_run_of_ours_or_of_a_peer() -> None:
    assert peers.goal([outcome(peers.OURS.name, 40.0)]).ok is None
    stuck = [outcome(peers.OURS.name, 40.0, "**stuck**"), outcome(peers.HAND.name, 60.0)]
    assert peers.goal(stuck).ok is None


def test_ratios_are_left_out_for_a_run_that_did_not_complete() -> None:
    text = peers.table(
        [outcome(peers.OURS.name, 40.0), outcome(peers.HAND.name, 80.0, "**stuck**")]
    )
    assert "— (a run did not complete)" in text
    text = peers.table([outcome(peers.OURS.name, 40.0), outcome(peers.HAND.name, 80.0)])
    assert "| 0.50, 0.50, 1.00, 1.000 |" in text


def test_a_peer_without_its_virtualenv_is_skipped_saying_why(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(peers, "VENVS", tmp_path)
    kind = peers.Kind("absent", "openai_agents_plugin.py", "nowhere", "report", probe="import sys")
    assert "make peer-venvs" in (peers.unavailable(kind) or "")
    half = tmp_path / "half" / "bin"
    half.mkdir(parents=True)
    (half / "python").symlink_to(sys.executable)  # made, but its install did not finish
    kind = peers.Kind("half", "openai_agents_plugin.py", "half", "report", probe="import sys")
    assert "not installed completely" in (peers.unavailable(kind) or "")
    (tmp_path / "half" / ".installed").touch()
    assert peers.unavailable(kind) is None
    broken = peers.Kind("broken", "x.py", None, "t", probe="import no_such_module_here")
    assert "No module named" in (peers.unavailable(broken) or "")
    assert peers.unavailable(peers.Kind("here", "x.py", None, "t")) is None


def test_the_result_is_found_among_whatever_else_a_runner_prints() -> None:
    result = protocol.Result("w", "r", 1.5, 0.5, None, "completed")
    marked = protocol.RESULT_MARK + json.dumps(dataclasses.asdict(result))
    noise = "Task was destroyed but it is pending!"
    assert protocol.read_result(f"start\n{marked}\n{noise}\n") == result
    for broken in ["", noise, protocol.RESULT_MARK + "{not json", protocol.RESULT_MARK + "{}"]:
        assert protocol.read_result(broken) is None


def test_tasks_beyond_the_caps_or_in_other_digits_are_not_tasks() -> None:
    assert protocol.parse_task(protocol.task(protocol.MAX_TURNS, protocol.MAX_SIZE)) is not None
    for text in [protocol.task(protocol.MAX_TURNS + 1, 10), protocol.task(1, protocol.MAX_SIZE + 1),
                 protocol.task(0, 10), "bench: \u0661 tool turns of 5 bytes"]:  # fmt: skip
        assert protocol.parse_task(text) is None


@pytest.mark.parametrize(
    "body", [{}, {"messages": None}, {"messages": "hi"}, {"messages": [None, 3, {"x": 1}]}, []]
)
def test_a_malformed_request_body_gets_text(body: object) -> None:
    reply = peers.respond(body)  # type: ignore[arg-type]
    assert not reply.tool_calls and reply.content.startswith("not a bench task")


def test_error_text_cannot_break_the_table() -> None:
    bad = outcome(peers.HAND.name, 80.0, "**runner broke** (exit 1): a | b\nTraceback\n  x")
    row = [r for r in peers.table([outcome(peers.OURS.name, 40.0), bad]).splitlines()][-1]
    assert "\n" not in row and "a \\| b Traceback x" in row


def test_the_goal_also_names_the_fastest_framework_when_the_hand_written_loop_wins() -> None:
    cell = [
        outcome(peers.OURS.name, 90.0),
        outcome(peers.HAND.name, 100.0),
        outcome("OpenAI Agents plugin", 300.0),
        outcome("Pydantic AI TemporalDurability", 180.0),
    ]
    goal = peers.goal(cell)
    assert goal.ok is False
    assert "0.90x" in goal.measured and "0.50x the fastest framework peer" in goal.measured


def test_a_run_that_did_not_complete_has_no_per_turn_figures() -> None:
    failed = outcome(peers.HAND.name, 41.8, "**failed**: Workflow history size exceeds limit.")
    row = peers.table([outcome(peers.OURS.name, 40.0), failed]).splitlines()[-1]
    assert "41.8" not in row and "| — | — | — | 1,000 |" in row


def counted(kind: str, turns: int, billed: dict[str, int], completed: str = "completed"):
    return peers.Outcome(kind, turns, 1_000, 10.0, 5.0, 1.0, 1_000, completed, billed)


def floor_of(turns: int) -> dict[str, int]:
    return {"workflow_started": 1, "activities": 2 * turns + 1}


def test_the_actions_table_shows_each_kind_per_run_per_turn_and_over_the_floor() -> None:
    ours = {**floor_of(10), "activities": 22, "search_attribute_upserts": 1}
    found = actions.table(
        [counted(peers.OURS.name, 10, ours), counted(peers.HAND.name, 10, floor_of(10))],
        floor=peers.HAND.name,
    )
    rows = found.splitlines()[2:]
    assert rows[0].split(" | ")[3:6] == ["24", "2.40", "+2"]
    assert "search_attribute_upserts 1" in rows[0]
    assert rows[1].split(" | ")[3:6] == ["22", "2.20", "—"]  # the floor itself


def test_the_actions_goal_holds_at_two_over_the_floor_and_fails_at_three() -> None:
    def judged(extra: int) -> bool | None:
        ours = {**floor_of(50), "search_attribute_upserts": extra}
        runs = [counted(peers.OURS.name, 50, ours), counted(peers.HAND.name, 50, floor_of(50))]
        return actions.goal(runs, ours=peers.OURS.name, floor=peers.HAND.name).ok

    assert judged(2) is True
    assert judged(3) is False


def test_a_run_that_did_not_complete_is_not_judged_against_the_floor() -> None:
    runs = [
        counted(peers.OURS.name, 10, {"activities": 99}, completed="**hung**"),
        counted(peers.HAND.name, 10, floor_of(10)),
    ]
    assert actions.goal(runs, ours=peers.OURS.name, floor=peers.HAND.name).ok is None
    assert "(did not complete)" in actions.table(runs, floor=peers.HAND.name)
