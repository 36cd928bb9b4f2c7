"""Markdown for bench/RESULTS.md, time and memory of runs: 1. per-turn overhead,
2. parallel tools, 3. concurrency, where the time goes. Pure functions; no measuring."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from bench.common import mean, median, percentile
from bench.report import (
    FLOOR,
    LOCAL,
    OURS,
    OVERHEAD_GOAL,
    PARALLEL_GOAL,
    RSS_GOAL_MB,
    RSS_GOAL_RUNS,
    Goal,
    Section,
    ms,
    ratio,
    table,
    verdict,
    within,
)

if TYPE_CHECKING:
    from bench.overhead import Timings


# --- 1 and 2 --------------------------------------------------------------------------

PLAIN_SERVER = "dev server's own defaults"


def overhead_row(label: str, t: Timings, *, judged: bool = True) -> list[str]:
    floor_ratio = ratio(t.wall[OURS], t.wall[FLOOR])
    shown = (
        f"**{floor_ratio:.2f}** {verdict(within(floor_ratio, OVERHEAD_GOAL))}"
        if judged
        else f"{floor_ratio:.2f} (not judged)"
    )
    return [
        label,
        ms(median(t.wall[OURS])),
        ms(median(t.wall[LOCAL])),
        ms(median(t.wall[FLOOR])),
        f"{ratio(t.wall[OURS], t.wall[LOCAL]):.2f}",
        shown,
        f"{ms(mean(t.process_cpu[OURS]))} / {ms(mean(t.process_cpu[FLOOR]))}",
        f"{ms(mean(t.server_cpu[OURS]))} / {ms(mean(t.server_cpu[FLOOR]))}",
        str(len(t.wall[OURS])),
    ]


def eager_share(t: Timings, kind: str) -> str:
    eager, received = t.eager.get(kind, (0, 0))
    return f"{eager} of {received}" if received else "none polled"


def option_rows(t: Timings) -> list[list[str]]:
    """worker.py's defaults, then each other kind of AgentWorkflow run measured with them."""
    kinds = [OURS, *(k for k in t.wall if k not in (OURS, LOCAL, FLOOR))]
    return [
        [
            "**worker.py defaults**" if kind == OURS else kind,
            ms(median(t.wall[kind])),
            f"{ratio(t.wall[kind], t.wall[OURS]):.2f}",
            f"{ratio(t.wall[kind], t.wall[FLOOR]):.2f}",
            ms(mean(t.process_cpu[kind])),
            eager_share(t, kind),
            str(len(t.wall[kind])),
        ]
        for kind in kinds
    ]


def overhead_goals(timings: dict[str, Timings], par: dict) -> tuple[Goal, ...]:
    goals = [
        Goal(
            f"1. per-turn overhead, model latency {label}",
            f"AgentWorkflow / floor ≤ {OVERHEAD_GOAL}",
            f"{r:.2f}, the median of the repetitions' ratios (medians: "
            f"{ms(median(t.wall[OURS]))} / {ms(median(t.wall[FLOOR]))} ms per turn = "
            f"{median(t.wall[OURS]) / median(t.wall[FLOOR]):.2f})",
            within(r, OVERHEAD_GOAL),
        )
        for label, t in timings.items()
        for r in [ratio(t.wall[OURS], t.wall[FLOOR])]
    ]
    span = median(par["span"]) / par["ms"]
    goals.append(
        Goal(
            f"2. parallel tools: {par['tools']} x {par['ms']} ms in one turn",
            f"first start → last end ≤ {PARALLEL_GOAL} x one tool",
            f"{span:.2f} x",
            within(span, PARALLEL_GOAL),
        )
    )
    return tuple(goals)


def overhead_section(
    turns: int, timings: dict[str, Timings], par: dict, plain: Timings | None = None
) -> Section:
    """`plain`: the same zero-latency runs on a dev server with its own defaults (shown,
    not judged)."""
    zero = next(iter(timings.values()))
    rows = [overhead_row(label, t) for label, t in timings.items()]
    if plain is not None:
        rows.append(overhead_row(f"0 ms, {PLAIN_SERVER}", plain, judged=False))
    parts = [
        "## 1. Per-turn overhead",
        "",
        f"A run of {turns} turns: {turns} model calls (scripted server over HTTP), an `echo` "
        f"tool call after each but the last, plus `describe_agent`: {2 * turns} activities. "
        f"Floor: `bench/floor.py`, {turns} turns x 2 no-op activities ({2 * turns}), the "
        '"model" one sleeping the same latency. In-process: `run_locally`, same loop and '
        "activity code, no Temporal. Every worker a process of its own (`python worker.py`, "
        "its defaults unless an option says otherwise; `python -m bench.floor`), all serving "
        "throughout; the client and the scripted model in the bench process. The dev server "
        "runs as `worker.py --dev` runs it (`DEV_SERVER_CONFIG`: its one history shard reads "
        "its task queues up to 200 times a second, not 20); the last row, if any, is ours, "
        "the floor and in-process again on a dev server with its own defaults, in a session "
        "of their own (fewer workers polling): shown, not judged. CPU columns are means over "
        "the repetitions (the kernel counts CPU in 10 ms ticks); times and ratios medians. "
        "Every kind of run is in every repetition (rotating order; ours and the floor back "
        "to back, taking turns at going first); ratios are medians of the ratios within a "
        "repetition.",
        "",
        table(
            [
                "model latency",
                f"{OURS} ms/turn",
                f"{LOCAL} ms/turn",
                f"{FLOOR} ms/turn",
                "ours / in-process",
                f"ours / floor (goal ≤ {OVERHEAD_GOAL})",
                "worker CPU ms/turn ours / floor",
                "dev-server CPU ms/turn ours / floor",
                "reps",
            ],
            rows,
        ),
        "",
        "Eager activity dispatch, read from the SDK metric "
        f"`temporal_activity_task_received{{eager}}` (all runs at {next(iter(timings))}): "
        f"{OURS} {eager_share(zero, OURS)} activity tasks eager, floor "
        f"{eager_share(zero, FLOOR)}.",
    ]
    if len(option_rows(zero)) > 1:
        parts += [
            "",
            "### Worker options, measured in the same repetitions (zero latency)",
            "",
            table(
                [
                    "option",
                    "ms/turn",
                    "/ worker.py defaults",
                    "/ floor",
                    "worker-process CPU ms/turn",
                    "activity tasks eager",
                    "reps",
                ],
                option_rows(zero),
            ),
            "",
            "Worker-process CPU: the CPU time of that kind's worker process during its runs. "
            "A local activity is not an activity task: it is not counted as one.",
        ]
    span, many, one = median(par["span"]), median(par["many"]), median(par["one"])
    parts += [
        "",
        "## 2. Parallel tools",
        "",
        f"One turn with {par['tools']} `nap({par['ms']} ms)` calls, against the same run with "
        f"one call; medians of {len(par['many'])} runs each.",
        "",
        table(
            [
                f"{par['tools']} tools: first start → last end",
                f"run with {par['tools']}",
                "run with 1",
                "difference",
            ],
            [[f"{ms(span)} ms", f"{ms(many)} ms", f"{ms(one)} ms", f"{ms(many - one)} ms"]],
        ),
    ]
    return Section("\n".join(parts), overhead_goals(timings, par))


# --- 3 ------------------------------------------------------------------------------


def per_run_mb(r: dict) -> float:
    """RSS per parked run past the first `warm` ones (which also pay one-time costs)."""
    return (r["rss_parked"] - r["rss_warm"]) / (r["runs"] - r["warm"])


def rss_goal(r: dict) -> Goal:
    """Judged only on RSS_GOAL_RUNS or more parked runs; else the linear extrapolation."""
    what = f"3. worker RSS, {RSS_GOAL_RUNS:,} runs parked (worker.py defaults)"
    target = f"≤ {RSS_GOAL_MB} MB"
    if r["runs"] >= RSS_GOAL_RUNS:
        return Goal(what, target, f"{r['rss_parked']:.0f} MB", r["rss_parked"] <= RSS_GOAL_MB)
    guess = r["rss_parked"] + per_run_mb(r) * (RSS_GOAL_RUNS - r["runs"])
    return Goal(
        what,
        target,
        f"not judged: {r['runs']:,} runs parked, {r['rss_parked']:.0f} MB "
        f"(extrapolated to {RSS_GOAL_RUNS:,}: {guess:.0f} MB)",
        None,
    )


def concurrency_column(r: dict) -> list[str]:
    one, burst = r["one_by_one_ms"], r["burst_ms"]
    ok = verdict(r["rss_parked"] <= RSS_GOAL_MB) if r["runs"] >= RSS_GOAL_RUNS else ""
    return [
        f"{r['park_s']:.1f} s",
        f"{r['rss_idle']:.0f} → **{r['rss_parked']:.0f} MB** {ok}".rstrip(),
        f"{r['rss_warm']:.0f} MB, then {per_run_mb(r) * 1024:.0f} KB per run",
        f"{r['rss_peak']:.0f} / {r['rss_end']:.0f} MB",
        f"**{ms(median(one))} / {ms(percentile(one, 99))} ms**",
        f"{r['signals_s']:.1f} s",
        f"**{r['drain_s']:.1f} s** ({len(burst) / r['drain_s']:.0f} runs/s)",
        f"{ms(median(burst))} / {ms(percentile(burst, 99))} ms",
        f"{r['cpu_park']:.1f} / {r['cpu_total']:.1f} s",
        burst_cpu(r),
    ]


def burst_cpu(r: dict) -> str:
    """What the machine did while the burst drained: each process's CPU seconds, and the
    cores busy on average (of all the machine has)."""
    used = r.get("burst_cpu")
    if not used:
        return "—"
    wall = used["machine_total"] / (os.cpu_count() or 1)
    cores = used["machine_busy"] / wall if wall else float("nan")
    return (
        f"{used['worker']:.1f} / {used['server']:.1f} / {used['bench']:.1f} s; "
        f"{cores:.2f} of {os.cpu_count()} cores busy"
    )


def concurrency_section(results: dict[str, dict]) -> Section:
    first = next(iter(results.values()))
    runs = first["runs"]
    labels = [
        f"start {runs:,} runs until all are parked",
        f"worker RSS: idle → all parked (goal ≤ {RSS_GOAL_MB} MB at {RSS_GOAL_RUNS:,})",
        f"worker RSS after the first {first['warm']} parked runs, then per run",
        "worker RSS peak / at the end",
        f"approval → tool start, one at a time ({len(first['one_by_one_ms'])} runs): p50 / p99",
        f"the other {len(first['burst_ms']):,} approved at once: all signals sent in",
        "… time to drain (first signal → last run closed, server clock)",
        "… approval → tool start during that burst: p50 / p99",
        "worker CPU: until parked / in all",
        "… CPU while the burst drained: worker / dev server / bench (client) ; machine",
    ]
    columns = [concurrency_column(r) for r in results.values()]
    rows = [[label, *(c[i] for c in columns)] for i, label in enumerate(labels)]
    markdown = "\n".join(
        [
            "## 3. Concurrency",
            "",
            f"{runs:,} runs of the `approval` agent, each parked on one approval, held by one "
            "worker process (`python worker.py --agents bench.agents`, its defaults; other "
            "columns through `bench/tuned_worker.py`). Approval → tool start: `time.time()` "
            "before the signal is sent (client) and in the tool's first line (worker), on one "
            "machine; p50 / p99 are over the runs. One measurement per column (each takes "
            "minutes), not a median of several; the defaults' burst is measured again below.",
            "",
            table(["", *results], rows),
            *burst_repeats(first),
        ]
    )
    return Section(markdown, (rss_goal(first), burst_goal(first)))


BURST_GOAL = 40
"""Issue 44: the burst drains at this many runs a second or more, the median of at least
BURST_REPEATS bursts."""
BURST_REPEATS = 3


def burst_rates(r: dict) -> list[float]:
    """Runs a second of each burst measured for a column (each after a fresh park)."""
    return [runs / drain for runs, drain in r.get("bursts", [])]


def burst_repeats(r: dict) -> list[str]:
    """The line under the table: every burst of the defaults' column, median and spread."""
    bursts = r.get("bursts", [])
    if len(bursts) < 2:
        return []
    drains = [d for _, d in bursts]
    rates = burst_rates(r)
    return [
        "",
        f"The burst again, each time after parking the runs anew (worker.py defaults): "
        f"{len(bursts)} bursts, drain median **{median(drains):.1f} s** "
        f"({median(rates):.0f} runs/s), spread {min(drains):.1f} to {max(drains):.1f} s "
        f"({min(rates):.0f} to {max(rates):.0f} runs/s); the CPU each took: "
        + "; ".join(burst_cpu(b) for b in r.get("burst_cpus", [])),
    ]


def burst_goal(r: dict) -> Goal:
    what = f"3. the burst drains (median of ≥ {BURST_REPEATS} bursts, worker.py defaults)"
    target = f"≥ {BURST_GOAL} runs/s"
    rates = burst_rates(r)
    if len(rates) < BURST_REPEATS:
        return Goal(what, target, f"not judged: {len(rates)} burst(s) measured", None)
    found = median(rates)
    measured = f"{found:.0f} runs/s ({min(rates):.0f} to {max(rates):.0f})"
    return Goal(what, target, measured, found >= BURST_GOAL)


# --- where the time goes ------------------------------------------------------------------


def profile_table(p: dict) -> str:
    turns, ours, floor = p["turns"], p["ours"], p["floor"]
    names = list(dict.fromkeys([*ours["phases"], *floor["phases"]]))

    def phase(side: dict, key: str, name: str) -> str:
        return ms(side[key].get(name, 0) / turns)

    rows = [
        [
            name,
            phase(ours, "phases", name),
            phase(ours, "first", name),
            phase(floor, "phases", name),
        ]
        for name in names
    ]
    rows.append(
        [
            "**total (server clock)**",
            *(
                ms(sum(side[key].values()) / turns)
                for side, key in ((ours, "phases"), (ours, "first"), (floor, "phases"))
            ),
        ]
    )
    rows += [
        [label, ms(ours[key]), "", ms(floor[key])]
        for label, key in (
            (f"wall, {p['runs']} runs (client clock)", "wall_ms"),
            ("**worker process CPU**", "worker_cpu_ms"),
            ("dev-server CPU", "server_cpu_ms"),
        )
    ]
    header = [
        "",
        f"{OURS} (median of {p['runs']} runs)",
        f"{OURS}: first run of the process",
        f"floor (median of {p['runs']})",
    ]
    return table(header, rows)


def profile_section(p: dict) -> Section:
    parts = [
        "## Where the time goes",
        "",
        f"Each worker in its own process (`python worker.py`; the floor: `python -m bench.floor`),"
        f" {p['turns']} turns per run, zero model latency; ms per turn. Server clock: history "
        "timestamps of each run, median per phase over the measured runs (after "
        f"{p['warmup']} warm-up runs); the first run of the fresh worker process apart.",
        "",
        profile_table(p),
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
            "conversation of an N-turn run (`bench/states.py`), through "
            "`chat.completions.create` (openai first transforms every message of the "
            'params) and through `client.post("/chat/completions", body=..., '
            "cast_to=ChatCompletion)` with the same body (what `call_model` does since this "
            f"measurement); medians of {p['model_client_reps']}:",
            "",
            table(
                ["turns", "messages", "`create` ms", "`post` ms", "create / post"],
                [
                    [str(t), str(n), ms(c * 1000), ms(q * 1000), f"{c / q:.1f}"]
                    for t, n, c, q in p["model_client"]
                ],
            ),
        ]
    return Section("\n".join(parts))
