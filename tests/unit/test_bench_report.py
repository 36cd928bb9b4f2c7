"""The bench's statistics and report: pure functions, no server."""

from __future__ import annotations

import math
import os

import pytest

from bench import report, report_data, report_runtime
from bench.common import percentile
from bench.overhead import Timings
from bench.report import FLOOR, LOCAL, OURS, Goal


@pytest.mark.parametrize(
    ("q", "expected"), [(0, 1), (1, 1), (50, 50), (90, 90), (99, 99), (99.5, 100), (100, 100)]
)
def test_percentile_is_nearest_rank(q: float, expected: int) -> None:
    assert percentile([float(v) for v in range(100, 0, -1)], q) == expected


def test_percentile_of_few_values_and_of_none() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([3.0, 1.0, 2.0], 99) == 3.0
    assert percentile([7.0], 99) == 7.0
    assert math.isnan(percentile([], 50))


def test_ratio_is_the_median_of_per_repetition_ratios() -> None:
    # medians of each side would give 20 / 10 = 2.0; the ratios are 1.0, 1.0, 4.0
    assert report.ratio([10.0, 20.0, 40.0], [10.0, 20.0, 10.0]) == 1.0


def test_table_has_a_header_rule_and_a_line_per_row() -> None:
    assert report.table(["a", "b"], [["1", "2"], ["3", "4"]]).splitlines() == [
        "| a | b |",
        "|---|---|",
        "| 1 | 2 |",
        "| 3 | 4 |",
    ]


def test_goals_section_counts_met_missed_and_unjudged() -> None:
    text = report.goals_section(
        [
            Goal("overhead", "≤ 1.2", "1.05", True),
            Goal("memory", "≤ 300 MB", "404 MB", False),
            Goal("history", "≤ 1.5", "not judged: 100 turns run", None),
        ]
    )
    assert "1 of 2 judged goals met in this run; 1 not judged." in text
    assert "| ✅ | overhead | ≤ 1.2 | 1.05 |" in text
    assert "| ❌ | memory | ≤ 300 MB | 404 MB |" in text
    assert "| — | history |" in text


def timings(ours: list[float], floor: list[float]) -> Timings:
    t = Timings()
    for kind, values in ((OURS, ours), (LOCAL, [1.0] * len(ours)), (FLOOR, floor)):
        t.wall[kind] = values
        t.server_cpu[kind] = values
        t.process_cpu[kind] = values
    return t


def parallel(span: float) -> dict:
    return {"span": [span], "many": [span + 50], "one": [250.0], "tools": 8, "ms": 200}


def test_overhead_goals_come_from_the_measured_ratio() -> None:
    measured = {"0 ms": timings([110.0, 130.0], [100.0, 100.0])}
    overhead, tools = report_runtime.overhead_goals(measured, parallel(210.0))
    assert overhead.ok is True  # median of 1.1 and 1.3: exactly the goal
    assert overhead.measured == (
        "1.20, the median of the repetitions' ratios (medians: 120.0 / 100.0 ms per turn = 1.20)"
    )
    missed = report_runtime.overhead_goals({"0 ms": timings([130.0], [100.0])}, parallel(700.0))
    assert [g.ok for g in missed] == [False, False]
    assert missed[0].measured.startswith("1.30")
    assert tools.ok and tools.measured == "1.05 x"


def test_overhead_section_lists_options_beside_the_defaults() -> None:
    t = timings([100.0], [100.0])
    t.wall["eager off"] = [120.0]
    t.process_cpu["eager off"] = [9.0]
    t.eager[OURS] = [19, 19]
    section = report_runtime.overhead_section(10, {"0 ms": t}, parallel(210.0))
    assert "| **worker.py defaults** | 100.0 | 1.00 | 1.00 | 100.0 | 19 of 19 | 1 |" in (
        section.markdown
    )
    assert "| eager off | 120.0 | 1.20 | 1.20 | 9.0 | none polled | 1 |" in section.markdown


def parked(runs: int, rss: float) -> dict:
    return {"runs": runs, "warm": 10, "rss_idle": 90.0, "rss_warm": 100.0, "rss_parked": rss}


def test_rss_goal_is_judged_only_at_a_thousand_runs() -> None:
    assert report_runtime.rss_goal(parked(1000, 250.0)).ok is True
    assert report_runtime.rss_goal(parked(1000, 404.0)).ok is False
    small = report_runtime.rss_goal(parked(50, 108.0))  # 0.2 MB per run after the first 10
    assert small.ok is None
    assert "extrapolated to 1,000: 298 MB" in small.measured


def history_run(turns: int, last_bytes: int, failure: str | None = None, **kw) -> dict:
    per_turn = [(13, 20_000)] * (turns - 1) + [(13, last_bytes), (5, 1_000)]
    return {
        "label": "payload store",
        "size": 20_000,
        "turns": turns,
        "per_turn": per_turn,
        "runs": [(1000, 3_000_000), (10, 2_000)],
        "wall": 12.0,
        "failure": failure,
        **kw,
    }


def test_history_goal_is_the_ratio_at_turn_200() -> None:
    assert report_data.history_goal([history_run(200, 25_000)]).ok is True
    missed = report_data.history_goal([history_run(200, 400_000)])
    assert (missed.ok, missed.measured) == (False, "20.00")
    assert report_data.history_goal([history_run(100, 20_000)]).ok is None


def test_a_stalled_history_run_misses_the_goal_and_says_why() -> None:
    run = history_run(200, 25_000, failure="workflow task failed (PAYLOADS_TOO_LARGE): big")
    run["per_turn"] = run["per_turn"][:97]
    goal = report_data.history_goal([run])
    assert goal.ok is False
    assert "stalled after turn 96" in goal.measured
    assert report_data.at_turn(run, 100) == "—"


def test_the_burst_row_says_each_process_cpu_and_the_cores_busy() -> None:
    cores = os.cpu_count() or 1
    used = {"worker": 30.0, "server": 45.0, "bench": 5.0,
            "machine_busy": 40.0 * cores * 0.9, "machine_total": 40.0 * cores}  # fmt: skip
    text = report_runtime.burst_cpu({"burst_cpu": used})
    assert text == f"30.0 / 45.0 / 5.0 s; {0.9 * cores:.2f} of {cores} cores busy"
    assert report_runtime.burst_cpu({}) == "—"  # a result from before this row


def test_the_server_defaults_row_is_shown_not_judged() -> None:
    section = report_runtime.overhead_section(
        10, {"0 ms": timings([60.0], [40.0])}, parallel(210.0), timings([105.0], [104.0])
    )
    row = next(line for line in section.markdown.splitlines() if line.startswith("| 0 ms, dev"))
    assert "1.01 (not judged)" in row and "✅" not in row and "❌" not in row
    zero = section.goals[0]  # the judged zero-latency row, not the server-defaults one
    assert zero.measured.startswith("1.50") and zero.ok is False
    assert len(section.goals) == 2  # that row and parallel tools


def test_the_burst_goal_is_the_median_of_three_bursts_with_the_spread() -> None:
    used = {"worker": 9.0, "server": 18.0, "bench": 1.0, "machine_busy": 1.0, "machine_total": 1.0}
    bursts = {"bursts": [(900, 30.0), (900, 22.5), (900, 18.0)],
              "burst_cpus": [{"burst_cpu": used}] * 3}  # fmt: skip
    goal = report_runtime.burst_goal(bursts)
    assert (goal.ok, goal.measured) == (True, "40 runs/s (30 to 50)")
    slow = report_runtime.burst_goal({"bursts": [(900, 30.0), (900, 24.0), (900, 18.0)]})
    assert (slow.ok, slow.measured) == (False, "38 runs/s (30 to 50)")
    line = report_runtime.burst_repeats(bursts)[-1]
    assert "3 bursts, drain median **22.5 s** (40 runs/s), spread 18.0 to 30.0 s" in line
    assert line.count("9.0 / 18.0 / 1.0 s") == 3


def test_a_single_burst_is_not_judged() -> None:
    one = {"bursts": [(900, 10.0)]}
    assert report_runtime.burst_goal(one).ok is None
    assert report_runtime.burst_repeats(one) == []
