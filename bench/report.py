"""Markdown for bench/RESULTS.md: the goals, the goal verdicts and the pieces every
table uses. The tables: `bench.report_runtime` (1-3 and where the time goes: time
and memory of runs), `bench.report_data` (4, 5 and payload conversion: sizes and
costs of data). Pure functions of measured values; no measuring here."""

from __future__ import annotations

from dataclasses import dataclass

from bench.common import median

OVERHEAD_GOAL = 1.2
"""Issue 7: AgentWorkflow ms per turn / the floor's."""
PARALLEL_GOAL = 1.5
"""Issue 7: 8 parallel tool calls take "about one tool's time": at most this many times it."""
RSS_GOAL_MB = 300
RSS_GOAL_RUNS = 1000
"""Issue 7: worker RSS with this many runs parked on an approval."""
HISTORY_GOAL = 1.5
"""Issue 5: history bytes of turn 200 / turn 10 (200 turns of 20 KB tool outputs)."""

OURS, LOCAL, FLOOR = "AgentWorkflow", "in-process", "floor"


@dataclass(frozen=True)
class Goal:
    """One goal of the issues and what this run measured for it."""

    what: str
    target: str
    measured: str
    ok: bool | None
    """None: not judged by this run (`measured` says why)."""


@dataclass(frozen=True)
class Section:
    """A part of RESULTS.md and the goals it measured."""

    markdown: str
    goals: tuple[Goal, ...] = ()


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def verdict(ok: bool | None) -> str:
    return "—" if ok is None else "✅" if ok else "❌"


def within(value: float, goal: float) -> bool:
    """`value` meets an upper-bound `goal` as shown (two decimals): 1.2000001 meets 1.2."""
    return round(value, 2) <= goal


def ms(value: float) -> str:
    return f"{value:,.1f}"


def kb(n: float) -> str:
    return f"{n / 1024:,.1f} KB"


def ratio(a: list[float], b: list[float]) -> float:
    """Median of the per-repetition ratios a/b (both measured in the same repetition)."""
    return median([x / y for x, y in zip(a, b, strict=True)])


def summary(goals: int, judged: int, missed: int) -> str:
    text = f"{judged - missed} of {judged} judged goals met in this run" if judged else ""
    text = text or "No goal judged in this run"
    return text + (f"; {goals - judged} not judged." if judged < goals else ".")


def goals_section(goals: list[Goal]) -> str:
    """The verdict of every goal, from the figures of this run."""
    rows = [[verdict(g.ok), g.what, g.target, g.measured] for g in goals]
    missed = sum(1 for g in goals if g.ok is False)
    judged = sum(1 for g in goals if g.ok is not None)
    return "\n".join(
        [
            "## Goals",
            "",
            summary(len(goals), judged, missed),
            "",
            table(["", "goal", "target", "measured in this run"], rows),
        ]
    )


def alone(section: Section) -> str:
    """A section printed by its own command: its tables, then its goals' verdicts."""
    goals = [goals_section(list(section.goals))] if section.goals else []
    return "\n\n".join([section.markdown, *goals])
