"""Markdown for bench/RESULTS.md: one function per table, no measuring here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bench.common import median, percentile

if TYPE_CHECKING:
    from bench.overhead import Timings

OVERHEAD_GOAL = 1.2
RSS_GOAL_MB = 300


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def verdict(ok: bool) -> str:
    return "✅" if ok else "❌"


def ms(value: float) -> str:
    return f"{value:,.1f}"


def ratio(a: list[float], b: list[float]) -> float:
    """Median of the per-repetition ratios a/b (each pair measured back to back)."""
    return median([x / y for x, y in zip(a, b, strict=True)])


def overhead_row(label: str, t: Timings) -> list[str]:
    floor_ratio = ratio(t.agent, t.floor)
    return [
        label,
        ms(median(t.agent)),
        ms(median(t.local)),
        ms(median(t.floor)),
        f"{ratio(t.agent, t.local):.2f}",
        f"**{floor_ratio:.2f}** {verdict(floor_ratio <= OVERHEAD_GOAL)}",
        f"{ms(median(t.agent_server_cpu))} / {ms(median(t.floor_server_cpu))}",
        str(len(t.agent)),
    ]


def option_row(label: str, t: Timings) -> list[str]:
    return [
        label,
        ms(median(t.agent)),
        ms(median(t.floor)),
        f"{ratio(t.agent, t.floor):.2f}",
        str(len(t.agent)),
    ]


def overhead_section(turns: int, rows: list, options: list, par: dict) -> str:
    parts = [
        "## 1. Per-turn overhead",
        "",
        f"A run of {turns} turns: {turns} model calls (scripted server over HTTP), an `echo` "
        f"tool call after each but the last, plus `describe_agent`: {2 * turns} activities. "
        f"Floor: `bench/floor.py`, {turns} turns x 2 no-op activities ({2 * turns}), the "
        '"model" one sleeping the same latency. In-process: `run_locally`, same loop and '
        "activity code, no Temporal. Worker in the bench process, `build_worker` as is. "
        "Ratios are medians of per-repetition ratios (the three runs of a repetition are "
        "back to back).",
        "",
        table(
            [
                "model latency",
                "AgentWorkflow ms/turn",
                "in-process ms/turn",
                "floor ms/turn",
                "ours / in-process",
                f"ours / floor (goal ≤ {OVERHEAD_GOAL})",
                "dev-server CPU ms/turn ours / floor",
                "reps",
            ],
            rows,
        ),
    ]
    if options:
        parts += [
            "",
            "### Options, measured (zero latency, each against the floor with the same option)",
            "",
            table(["option", "ours ms/turn", "floor ms/turn", "ours / floor", "reps"], options),
        ]
    span, many, one = median(par["span"]), median(par["many"]), median(par["one"])
    parts += [
        "",
        "## 2. Parallel tools",
        "",
        "One turn with 8 `nap(200 ms)` calls, against the same run with one call.",
        "",
        table(
            ["8 tools: first start → last end", "run with 8 tools", "run with 1 tool", "8 - 1"],
            [[f"{ms(span)} ms", f"{ms(many)} ms", f"{ms(one)} ms", f"{ms(many - one)} ms"]],
        ),
        "",
        f"{verdict(span < 2 * 200)} The 8 calls run concurrently: the turn takes "
        f"{span / 200:.2f}x one tool's time (8x if run one after another).",
    ]
    return "\n".join(parts)


def concurrency_section(results: dict[str, dict]) -> str:
    first = next(iter(results.values()))
    runs = first["runs"]

    def column(r: dict) -> list[str]:
        one, burst = r["one_by_one_ms"], r["burst_ms"]
        ok = verdict(r["rss_parked"] <= RSS_GOAL_MB)
        return [
            f"{r['park_s']:.1f} s",
            f"{r['rss_idle']:.0f} → **{r['rss_parked']:.0f} MB** {ok}",
            f"{(r['rss_parked'] - r['rss_idle']) * 1024 / r['runs']:.0f} KB",
            f"{r['rss_peak']:.0f} / {r['rss_end']:.0f} MB",
            f"**{ms(median(one))} / {ms(percentile(one, 99))} ms**",
            f"**{r['drain_s']:.1f} s** ({len(burst) / r['drain_s']:.0f} runs/s)",
            f"{ms(median(burst))} / {ms(percentile(burst, 99))} ms",
            f"{r['cpu_park']:.1f} / {r['cpu_total']:.1f} s",
        ]

    labels = [
        f"start {runs:,} runs until all are parked",
        f"worker RSS: idle → all parked (goal ≤ {RSS_GOAL_MB} MB)",
        "worker RSS per parked run",
        "worker RSS peak (during drain) / at the end",
        f"approval → tool start, one at a time ({len(first['one_by_one_ms'])} runs): p50 / p99",
        f"the other {len(first['burst_ms']):,} approved at once: time to drain",
        "approval → tool start during that burst: p50 / p99",
        "worker CPU: until parked / in all",
    ]
    columns = [column(r) for r in results.values()]
    rows = [[label, *(c[i] for c in columns)] for i, label in enumerate(labels)]
    return "\n".join(
        [
            "## 3. Concurrency",
            "",
            f"{runs:,} runs of the `approval` agent, each parked on one approval, held by one "
            "worker process (`python worker.py --agents bench.agents`; options through "
            "`bench/tuned_worker.py`, which adds `Worker(...)` keyword arguments to "
            "`build_worker`). Approval → tool start: `time.time()` before the signal is sent "
            "(client) and in the tool's first line (worker), on one machine.",
            "",
            table(["", *results], rows),
        ]
    )


def kb(n: float) -> str:
    return f"{n / 1024:,.1f} KB"


def history_section(runs: list[dict], stored: int) -> str:
    rows = []
    for r in runs:
        t = r["per_turn"]
        rows.append(
            [
                kb(r["size"]) + (f" ({r['label']})" if "label" in r else ""),
                f"{t[9][0]} / {kb(t[9][1])}",
                f"{t[99][0]} / {kb(t[99][1])}",
                f"{t[99][1] / t[9][1]:.2f}",
                str(len(r["runs"])),
                ", ".join(f"{n} ev / {kb(b)}" for n, b in r["runs"]),
                f"{r['wall']:.1f} s",
            ]
        )
    return "\n".join(
        [
            "## 4. History",
            "",
            "100 tool turns, then an answer; one run per output size (history sizes do not "
            "vary between runs). A turn: the events from one `call_model` scheduling to the next "
            "(the model call, its workflow tasks, the tool call, search-attribute upsert). "
            "Designed converter: pydantic + codec + payload store (payloads ≥ 128 KiB go to "
            "ExternalStorage; history keeps a reference).",
            "",
            table(
                [
                    "tool output",
                    "turn 10: events / bytes",
                    "turn 100: events / bytes",
                    "bytes turn 100 / turn 10",
                    "Temporal runs",
                    "each run's history",
                    "wall",
                ],
                rows,
            ),
            "",
            f"Payload store after these runs: {stored / 1024**2:,.1f} MB.",
        ]
    )


def state_section(states: list[dict]) -> str:
    rows = [
        [
            f"{s['turns']:,}",
            str(s["items"]),
            kb(s["file"]),
            kb(s["compact"]),
            f"**{ms(median(s['state']))}** / {ms(percentile(s['state'], 90))}",
            f"{ms(median(s['status']))} / {ms(percentile(s['status'], 90))}",
            ms(s["dumps_ms"]),
            f"{s['start_s'] * 1000:,.0f}",
        ]
        for s in states
    ]
    return "\n".join(
        [
            "## 5. State",
            "",
            "A run resumed from a synthetic snapshot (`bench/snapshot_size.py`: per turn an "
            "approved call with ~200 characters of arguments and a 1 KB result), parked on one "
            f"more approval; {len(states[0]['state'])} queries each, client-side wall time.",
            "",
            table(
                [
                    "turns",
                    "items",
                    "snapshot file (export)",
                    "compact JSON",
                    "`get_state` ms p50 / p90",
                    "`get_status` ms p50 / p90",
                    "`dumps` ms",
                    "resume → parked ms",
                ],
                rows,
            ),
        ]
    )


def profile_section(p: dict) -> str:
    turns, ours, floor = p["turns"], p["ours"], p["floor"]
    names = list(dict.fromkeys([*ours["phases"], *floor["phases"]]))

    def phase(side: dict, name: str) -> str:
        return ms(side["phases"].get(name, 0) / turns)

    rows = [[name, phase(ours, name), phase(floor, name)] for name in names]
    rows.append(
        [
            "**total (server clock, one run)**",
            ms(sum(ours["phases"].values()) / turns),
            ms(sum(floor["phases"].values()) / turns),
        ]
    )
    rows += [
        [label, ms(ours[key]), ms(floor[key])]
        for label, key in (
            (f"wall, {p['runs']} runs (client clock)", "wall_ms"),
            ("**worker process CPU**", "worker_cpu_ms"),
            ("dev-server CPU", "server_cpu_ms"),
        )
    ]
    parts = [
        "## Where the time goes",
        "",
        f"Each worker in its own process (`python worker.py`; the floor: `python -m bench.floor`),"
        f" {p['runs']} runs x {turns} turns, zero model latency; ms per turn.",
        "",
        table(["", "AgentWorkflow", "floor"], rows),
    ]
    if "profile" in p:
        categories, leaves, total = p["profile"]
        parts += [
            "",
            f"py-spy, worker process, 250 Hz, samples of the thread holding the GIL "
            f"(Python at work; {total:,} samples); a sample counts for the first group "
            "(top to bottom) matching any frame of its stack:",
            "",
            table(
                ["what the worker was doing", "share of busy samples"],
                [[label, f"{n / total:.0%}"] for label, n in categories],
            ),
            "",
            table(
                ["function (leaf frame)", "share"],
                [[f"`{f}`", f"{n / total:.0%}"] for f, n in leaves],
            ),
        ]
    elif "profile_error" in p:
        parts += ["", f"py-spy failed: `{p['profile_error'].strip()}`"]
    else:
        parts += ["", "py-spy is not installed (`pip install -e '.[bench]'`): no samples."]
    if "model_client" in p:
        parts += [
            "",
            "The `openai` client's share, alone: one request to the scripted server with the "
            "conversation of an N-turn run (`bench/snapshot_size.py`), through "
            "`chat.completions.create` (what `call_model` does; openai first walks and "
            'transforms every message) and through `client.post("/chat/completions", '
            "body=..., cast_to=ChatCompletion)` with the same body; medians:",
            "",
            table(
                ["turns", "messages", "`create` ms", "`post` ms", "create / post"],
                [
                    [str(t), str(n), ms(c * 1000), ms(q * 1000), f"{c / q:.1f}"]
                    for t, n, c, q in p["model_client"]
                ],
            ),
        ]
    return "\n".join(parts)
