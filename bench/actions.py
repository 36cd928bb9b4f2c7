"""What a run costs a user: billable Temporal actions per run and per turn, by kind, for
each kind of `bench.peers` (ours, the hand-written floor, the framework peers), counted
from each run's histories by `durable_agents.client.cost.actions` (the count `agentctl
cost` prints).

The price list the count follows (Temporal Cloud's "Actions"; a self-hosted server does
the same work for each), each as history shows it:

- `workflow_started`: a workflow run starts, by a client or a continue-as-new
  (WorkflowExecutionStarted);
- `activities`: each activity attempt, the first and every retry (ActivityTaskScheduled,
  and the attempt its ActivityTaskStarted names);
- `local_activities`: the local activities of one workflow task, together (the tasks with
  a `core_local_activity` MarkerRecorded);
- `search_attribute_upserts`: an upsert after the start (UpsertWorkflowSearchAttributes);
  attributes given with a start, or with a continue-as-new, are free;
- `timers` (TimerStarted); `signals` (WorkflowExecutionSignaled); `external_signals`
  (SignalExternalWorkflowExecutionInitiated); `updates` (WorkflowExecutionUpdateAccepted);
- `child_workflows`: two for each child started (StartChildWorkflowExecutionInitiated);
- not in history, not counted, billed all the same: queries, heartbeats that reach the
  server, updates a validator refuses.

Pure functions of measured outcomes; nothing is measured here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from bench import report

MAX_OVER_FLOOR = 2
"""Issue 44: a run of N tool turns started by our clients costs at most the hand-written
loop's actions plus this, whatever N."""


class Counted(Protocol):
    """What `bench.peers.Outcome` gives this module."""

    kind: str
    turns: int
    size: int
    completed: str
    actions: dict[str, int]


def total(outcome: Counted) -> int:
    return sum(outcome.actions.values())


def _by_kind(actions: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in sorted(actions.items())) or "—"


def table(outcomes: Sequence[Counted], *, floor: str) -> str:
    """Actions per run and per turn by kind, and each kind's excess over the floor's
    run of the same cell."""
    floors = {(o.turns, o.size): o for o in outcomes if o.kind == floor and o.actions}
    rows = []
    for o in outcomes:
        if not o.actions:
            continue
        base = floors.get((o.turns, o.size))
        over = "—" if base is None or o.kind == floor else f"{total(o) - total(base):+d}"
        kind = o.kind if o.completed == "completed" else f"{o.kind} (did not complete)"
        rows.append(
            [
                str(o.turns), f"{o.size:,}", kind, str(total(o)),
                f"{total(o) / o.turns:.2f}", over, _by_kind(o.actions),
            ]
        )  # fmt: skip
    header = [
        "N turns", "S bytes", "kind", "actions", "actions/turn", "over the floor",
        "by kind (from history)",
    ]  # fmt: skip
    return report.table(header, rows)


def markdown(outcomes: Sequence[Counted], *, ours: str, floor: str) -> str:
    return "\n\n".join(
        [
            "### What a run costs: billable actions",
            f"Counted from each run's histories (every workflow run of a chain) as Temporal "
            f"Cloud bills them (`bench/actions.py` has the table; `agentctl cost RUN_ID` "
            f"prints the same for any run). Queries, heartbeats that reach the server and "
            f"refused updates are billed too and are not in history. The floor: {floor}.",
            table(outcomes, floor=floor),
        ]
    )


def goal(outcomes: Sequence[Counted], *, ours: str, floor: str) -> report.Goal:
    """Ours at most the floor's actions plus MAX_OVER_FLOOR, in every cell both did."""
    what = "actions per run vs the hand-written loop (every cell)"
    target = f"≤ the loop's + {MAX_OVER_FLOOR}"
    done = [o for o in outcomes if o.actions and o.completed == "completed"]
    floors = {(o.turns, o.size): o for o in done if o.kind == floor}
    pairs = [
        (o, floors[(o.turns, o.size)])
        for o in done
        if o.kind == ours and (o.turns, o.size) in floors
    ]
    if not pairs:
        return report.Goal(what, target, "not measured in this run", None)
    excess = [(total(o) - total(base), o) for o, base in pairs]
    worst, at = max(excess, key=lambda e: e[0])
    cells = ", ".join(f"N={o.turns}: {d:+d}" for d, o in excess)
    return report.Goal(
        what, target, f"{cells} (worst {worst:+d} at N={at.turns})", worst <= MAX_OVER_FLOOR
    )
