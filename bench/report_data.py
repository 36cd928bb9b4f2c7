"""Markdown for bench/RESULTS.md, measurements of data: 4. history (with issue 5's
figures), 5. state, payload conversion. Pure functions; no measuring here."""

from __future__ import annotations

from bench.common import median, percentile
from bench.report import HISTORY_GOAL, Goal, Section, kb, ms, table, within

GOAL_TURN = 200
"""Issue 5's figures are for a run of this many tool turns (20 KB outputs)."""


def last_tool_turn(r: dict) -> int:
    """The last turn that ran a tool: all of them, or the last complete one of a stalled run."""
    if r["failure"] is None:
        return r["turns"]
    return max(0, min(r["turns"], len(r["per_turn"]) - 1))


def at_turn(r: dict, turn: int) -> str:
    if turn > last_tool_turn(r) or turn < 1:
        return "—"
    events, size = r["per_turn"][turn - 1]
    return f"{events} / {kb(size)}"


def growth(r: dict) -> float:
    """Bytes of the last tool turn / bytes of turn 10."""
    last = last_tool_turn(r)
    if last < 10:
        return float("nan")
    return r["per_turn"][last - 1][1] / r["per_turn"][9][1]


def outcome(r: dict) -> str:
    if r["failure"] is None:
        return f"completed, {r['turns']} tool turns"
    return f"**stalled after turn {last_tool_turn(r)}**: {r['failure']}"


def history_column(r: dict) -> list[str]:
    total = sum(b for _, b in r["runs"])
    return [
        outcome(r),
        at_turn(r, 10),
        at_turn(r, 100),
        at_turn(r, GOAL_TURN),
        f"{growth(r):.2f} (turn {last_tool_turn(r)})",
        f"{len(r['runs'])} ({len(r['runs']) - 1})",
        f"{kb(total)} / {kb(total / max(1, last_tool_turn(r)))}",
        "<br>".join(f"{n} ev / {kb(b)}" for n, b in r["runs"]),
        f"{r['wall']:.1f} s",
    ]


def history_goal(runs: list[dict]) -> Goal:
    what = f"issue 5: history bytes per turn, turn {GOAL_TURN} / turn 10 (20 KB outputs, store)"
    target = f"≤ {HISTORY_GOAL}, the run completes"
    r = next(r for r in runs if r["size"] >= 20_000 and r["label"] == "payload store")
    if r["failure"] is not None:
        return Goal(what, target, outcome(r), False)
    if r["turns"] < GOAL_TURN:
        return Goal(what, target, f"not judged: {r['turns']} turns run", None)
    value = r["per_turn"][GOAL_TURN - 1][1] / r["per_turn"][9][1]
    return Goal(what, target, f"{value:.2f}", within(value, HISTORY_GOAL))


def history_section(runs: list[dict], stored: int) -> Section:
    labels = [
        "outcome",
        "turn 10: events / bytes",
        "turn 100: events / bytes",
        f"turn {GOAL_TURN}: events / bytes",
        "bytes of the last tool turn / turn 10",
        "Temporal runs (continue-as-new switches)",
        "history bytes in all / per turn",
        "each Temporal run: events / bytes",
        "wall time (one run)",
    ]
    columns = [history_column(r) for r in runs]
    header = [f"{r['size']:,}-byte outputs, {r['label']}" for r in runs]
    rows = [[label, *(c[i] for c in columns)] for i, label in enumerate(labels)]
    markdown = "\n".join(
        [
            "## 4. History",
            "",
            "Runs of tool turns (one `report` call returning the output size), then an answer; "
            "continue-as-new after 300 model calls (the default) or when Temporal suggests it. "
            "A turn: the "
            "events from one `call_model` scheduling to the next (the model call, its workflow "
            "tasks, the tool call, search-attribute upserts). Payload store: pydantic + codec + "
            "ExternalStorage (payloads ≥ 16 KiB unless said otherwise go to the store; history "
            "keeps a reference). Naive: the same converter without the store. One run each "
            "(history sizes do not vary between runs).",
            "",
            table(["", *header], rows),
            "",
            f"Payload store after the store runs: {stored / 1024**2:,.1f} MB.",
        ]
    )
    return Section(markdown, (history_goal(runs),))


def state_section(states: list[dict]) -> Section:
    rows = [
        [
            f"{s['turns']:,}",
            str(s["items"]),
            kb(s["file"]),
            kb(s["compact"]),
            f"**{ms(median(s['state']))}** / {ms(percentile(s['state'], 90))}",
            f"{ms(median(s['status']))} / {ms(percentile(s['status'], 90))}",
            f"{ms(s['dumps_ms'])} / {ms(s['loads_ms'])}",
            f"{s['start_s'] * 1000:,.0f}",
        ]
        for s in states
    ]
    markdown = "\n".join(
        [
            "## 5. State",
            "",
            "A run resumed from a synthetic snapshot (`bench/states.py`: per turn an approved "
            "call with ~200 characters of arguments and a 1 KB result), parked on one more "
            f"approval; {len(states[0]['state'])} queries each, client-side wall time; payload "
            "store on. Resume → parked: one run.",
            "",
            table(
                [
                    "turns",
                    "items",
                    "snapshot file (export)",
                    "compact JSON",
                    "`get_state` ms p50 / p90",
                    "`get_status` ms p50 / p90",
                    "`dumps` / `loads` ms",
                    "resume → parked ms",
                ],
                rows,
            ),
        ]
    )
    return Section(markdown)


def conversion_section(rows: list[dict]) -> Section:
    def pair(values: tuple[float, float]) -> str:
        return f"{values[0]:,.2f} / {values[1]:,.2f}"

    body = [
        [
            r["payload"],
            f"{r['turns']:,}",
            kb(r["bytes"]),
            pair(r["pydantic"]),
            pair(r["codec"]),
            pair(r["aes"]),
        ]
        for r in rows
    ]
    markdown = "\n".join(
        [
            "## Payload conversion",
            "",
            "No server: the cost of converting the payloads that grow with a run "
            "(`bench/conversion.py`; synthetic states of `bench/states.py`). The `call_model` "
            "input is encoded by the workflow and decoded by the activity once per turn. "
            "Medians, ms.",
            "",
            table(
                [
                    "payload",
                    "turns",
                    "JSON payload",
                    "pydantic converter: to / from payloads",
                    "worker.py converter (codec, encryption off): encode / decode",
                    "with AES-256-GCM: encode / decode",
                ],
                body,
            ),
        ]
    )
    return Section(markdown)
