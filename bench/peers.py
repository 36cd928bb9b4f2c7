"""Peers: `python -m bench.peers [--turns 10,50] [--sizes 1000,20000]` (`make bench-peers`
installs the framework peers first; `make bench` runs this as its section 7).

The same scenario through our AgentWorkflow and through peers, on one dev server: a
run of N tool turns (the scripted model calls `report`, which returns S bytes, as an
activity), then an answer. Each kind runs in a process of its own
(`bench/peer_runners/`, see `protocol` there), the framework peers with the Python of
their own virtualenv, so its worker's CPU is its alone. Reported per kind and (N, S):
ms per turn, the runner process's CPU ms per turn (its worker and client; not the
scripted model's, which is this process), the dev server's CPU ms per turn, and the
history bytes of the whole run (every workflow run of a continue-as-new chain; not
what our payload store keeps outside history). Each runner first runs one warm-up run
of one turn. One measured run per cell, the kinds' order rotating from cell to cell:
read ratios near 1 as equal.

Kinds: our AgentWorkflow (its payload store on, as worker.py runs it); the hand-written
loop (`bench.handwritten`: the whole conversation into every model activity, no
payload store, as such a loop is usually written); Temporal's OpenAI Agents plugin
(`temporalio-openai-agents`) and Pydantic AI's `TemporalDurability`, each in
`.bench-venvs/NAME` made from `bench/peer_requirements/NAME.txt`, skipped with the
reason when that virtualenv is missing or cannot import the peer.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from durable_agents.client import cost
from temporalio.client import Client
from temporalio.service import RPCError

from bench import actions, common, report
from bench.peer_runners import protocol
from durable_agents.testing import Call, Reply, ScriptedModelServer

ROOT = Path(__file__).resolve().parent.parent
RUNNERS = ROOT / "bench" / "peer_runners"
VENVS = ROOT / ".bench-venvs"
GOAL_CELL = (50, 20_000)
"""Issue 23: per turn ≤ 0.5x the fastest peer at N = 50, S = 20 KB."""
GOAL_RATIO = 0.5
RUNNER_TIMEOUT_S = protocol.TIMEOUT_S * 2 + 120
"""A runner still running after this long (its warm-up and measured runs have their
own timeouts) is killed with its process group and reported hung."""


@dataclass(frozen=True)
class Kind:
    name: str
    runner: str
    venv: str | None
    """None: this repository's virtualenv; else the directory under VENVS."""
    tool_activity: str
    """How its history names the tool's activity type (its end: `str.endswith`)."""
    probe: str = "import temporalio"
    """Imported by the kind's Python before it is used (a failure: skipped, saying why)."""
    packages: tuple[str, ...] = ()
    """Distributions whose versions the table names."""

    def python(self) -> Path:
        return Path(sys.executable) if self.venv is None else VENVS / self.venv / "bin" / "python"


OURS = Kind("AgentWorkflow (payload store)", "ours.py", None, "run_tool")
HAND = Kind("hand-written loop", "handwritten.py", None, "handwritten_report")
KINDS = (
    OURS,
    HAND,
    Kind(
        "OpenAI Agents plugin",
        "openai_agents_plugin.py",
        "openai-agents",
        "report",
        probe="import temporalio.openai_agents, agents",
        packages=("temporalio-openai-agents", "openai-agents"),
    ),
    Kind(
        "Pydantic AI TemporalDurability",
        "pydantic_ai_durability.py",
        "pydantic-ai",
        "__call_tool",
        probe="import pydantic_ai.durable_exec.temporal",
        packages=("pydantic-ai-slim",),
    ),
)


@dataclass
class Outcome:
    kind: str
    turns: int
    size: int
    wall_ms: float
    cpu_ms: float
    server_cpu_ms: float | None
    history_bytes: int
    completed: str
    """"completed", or why not (a failed run, a stuck run, a runner that broke)."""
    actions: dict[str, int] = dataclasses.field(default_factory=dict)
    """Billable actions by kind, counted from the run's histories (`client.cost`)."""


def respond(request: dict) -> Reply:
    """The scripted model of every kind: N and S from the task (`protocol.task`), the
    turn from the assistant messages so far. Anything else is answered with text (the
    run then ends with a wrong answer, reported as such)."""
    messages = request.get("messages") if isinstance(request, dict) else None
    if not isinstance(messages, list):
        return Reply(content="not a bench task: no messages")
    messages = [m for m in messages if isinstance(m, dict)]
    task = next((m.get("content") for m in messages if m.get("role") == "user"), "")
    if isinstance(task, list):  # content parts
        task = " ".join(str(p.get("text", "")) for p in task if isinstance(p, dict))
    elif not isinstance(task, str):
        task = ""
    found = protocol.parse_task(task)
    if found is None:
        return Reply(content=f"not a bench task: {task[:80]!r}")
    turns, size = found
    done = sum(1 for m in messages if m.get("role") == "assistant")
    if done >= turns:
        return Reply(content=protocol.ANSWER)
    return Reply(tool_calls=(Call(protocol.TOOL, {"size": size, "part": done + 1}),))


def unavailable(kind: Kind) -> str | None:
    """Why `kind` cannot run here, or None."""
    python = kind.python()
    if not python.exists():
        return f"no {python} (`make peer-venvs` installs it)"
    if kind.venv is not None and not (VENVS / kind.venv / ".installed").exists():
        return f"{VENVS / kind.venv} was not installed completely (`make peer-venvs` again)"
    try:
        probe = subprocess.run(
            [python, "-c", kind.probe], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        return f"`{kind.probe}` did not finish in 120 s"
    if probe.returncode != 0:
        return f"`{kind.probe}` failed in its virtualenv: {probe.stderr.strip()[-200:]}"
    return None


def versions(kind: Kind) -> str:
    """The versions of `kind.packages` in its virtualenv, e.g. `openai-agents 0.22.3`."""
    if not kind.packages:
        return ""
    code = (
        "import importlib.metadata as m, sys; "
        "print(', '.join(f'{p} {m.version(p)}' for p in sys.argv[1:]))"
    )
    found = subprocess.run(
        [kind.python(), "-c", code, *kind.packages], capture_output=True, text=True, timeout=120
    )
    return found.stdout.strip() or found.stderr.strip()[-200:]


async def read_history(
    client: Client, workflow_id: str, run_id: str, tool_activity: str
) -> tuple[int, int, dict[str, int]]:
    """Bytes of every workflow run of the chain that began with `run_id`, how many
    activities of type `...tool_activity` completed in it (the tool turns done), and its
    billable actions by kind (`client.cost.actions`, the same count as `agentctl cost`)."""
    total, tools, next_run = 0, 0, run_id
    billed: dict[str, int] = {}
    while next_run:
        one = client.get_workflow_handle(workflow_id, run_id=next_run)
        events = [e async for e in one.fetch_history_events()]
        total += sum(e.ByteSize() for e in events)
        for kind, n in cost.actions(events).items():
            billed[kind] = billed.get(kind, 0) + n
        tool_events = {
            e.event_id
            for e in events
            if e.HasField("activity_task_scheduled_event_attributes")
            and e.activity_task_scheduled_event_attributes.activity_type.name.endswith(
                tool_activity
            )
        }
        tools += sum(
            1
            for e in events
            if e.HasField("activity_task_completed_event_attributes")
            and e.activity_task_completed_event_attributes.scheduled_event_id in tool_events
        )
        last = events[-1]
        next_run = (
            last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
            if last.HasField("workflow_execution_continued_as_new_event_attributes")
            else ""
        )
    return total, tools, billed


async def run_kind(
    client: Client, kind: Kind, turns: int, size: int, server_pid: int | None
) -> Outcome:
    """One measured run of `kind` in a runner process of its own, against a scripted
    model of its own (nothing of one run is kept for the next)."""
    with ScriptedModelServer(respond) as model:
        found, why = await _run_runner(client, kind, model.base_url, turns, size, server_pid)
    if found is None:
        return Outcome(kind.name, turns, size, float("nan"), float("nan"), None, 0, why)
    try:
        history, tools, billed = await read_history(client, found.workflow_id, found.run_id,
                                                    kind.tool_activity)  # fmt: skip
    except RPCError as err:
        return Outcome(kind.name, turns, size, float("nan"), float("nan"), None, 0,
                       f"**history unreadable**: {err}")  # fmt: skip
    completed = found.completed
    if completed == "completed" and tools != turns:
        completed = f"**wrong**: {tools} tool turns in its history, not {turns}"
    server = None if found.server_cpu_s is None else found.server_cpu_s * 1000 / turns
    return Outcome(
        kind.name, turns, size, found.wall_s * 1000 / turns, found.cpu_s * 1000 / turns,
        server, history, completed, billed,
    )  # fmt: skip


async def _run_runner(
    client: Client, kind: Kind, base_url: str, turns: int, size: int, server_pid: int | None
) -> tuple[protocol.Result | None, str]:
    """The runner's result, or None and why there is none (it broke, it hung: then it is
    killed with everything it started)."""
    target = client.service_client.config.target_host
    argv = [str(kind.python()), str(RUNNERS / kind.runner), "--target", target]
    argv += ["--turns", str(turns), "--size", str(size)]
    if server_pid is not None:
        argv += ["--server-pid", str(server_pid)]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "TEMPORAL_"))}
    env |= {
        "OPENAI_BASE_URL": base_url,
        "OPENAI_API_KEY": "x",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "PYTHONPATH": str(ROOT) if kind.venv is None else "",
    }
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), RUNNER_TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return None, f"**hung**: the runner did not end within {RUNNER_TIMEOUT_S:g} s"
    text = out.decode(errors="replace")
    found = protocol.read_result(text)
    if found is None:
        return None, f"**runner broke** (exit {proc.returncode}): {text.strip()[-300:]}"
    return found, ""


async def measure(
    client: Client, turns_list: list[int], sizes: list[int]
) -> tuple[list[Outcome], dict[str, str]]:
    """Every cell for every kind that can run; and, per kind, why it did not or its
    versions."""
    notes = {k.name: unavailable(k) for k in KINDS}
    runnable = [k for k in KINDS if notes[k.name] is None]
    notes = {k.name: (f"skipped: {notes[k.name]}" if notes[k.name] else versions(k)) for k in KINDS}
    server_pid = common.dev_server_pid()
    outcomes: list[Outcome] = []
    cell = 0
    for turns in turns_list:
        for size in sizes:
            print(f"peers: {turns} turns, {size:,}-byte outputs", flush=True)
            order = runnable[cell % len(runnable) :] + runnable[: cell % len(runnable)]
            cell += 1
            found = [await run_kind(client, k, turns, size, server_pid) for k in order]
            for o in found:  # a kind whose warm-up run failed is not tried again
                if o.completed.startswith("**warm-up run**"):
                    runnable = [k for k in runnable if k.name != o.kind]
                    notes[o.kind] += f"; stopped after its warm-up run failed ({o.completed})"
            outcomes += sorted(found, key=lambda o: [k.name for k in KINDS].index(o.kind))
    return outcomes, notes


def _cell(text: str) -> str:
    """`text` as one Markdown table cell (no line breaks, no column separators)."""
    return " ".join(text.split()).replace("|", "\\|")


def _ms(value: float | None) -> str:
    return "—" if value is None or value != value else f"{value:.1f}"


def table(outcomes: list[Outcome]) -> str:
    rows = []
    ours = {(o.turns, o.size): o for o in outcomes if o.kind == OURS.name}
    for o in outcomes:
        mine = ours.get((o.turns, o.size))
        if o.kind == OURS.name:
            ratio = "—"
        elif (
            mine is None
            or o.completed != "completed"
            or mine.completed != "completed"
            or not o.history_bytes
        ):
            ratio = "— (a run did not complete)"
        else:
            server = (
                f"{mine.server_cpu_ms / o.server_cpu_ms:.2f}"
                if mine.server_cpu_ms and o.server_cpu_ms
                else "—"
            )
            ratio = (
                f"{mine.wall_ms / o.wall_ms:.2f}, {mine.cpu_ms / o.cpu_ms:.2f}, {server}, "
                f"{mine.history_bytes / o.history_bytes:.3f}"
            )
        done = o.completed == "completed"  # else N turns were not done: no per-turn figure
        rows.append(
            [
                str(o.turns), f"{o.size:,}", o.kind, _ms(o.wall_ms if done else None),
                _ms(o.cpu_ms if done else None), _ms(o.server_cpu_ms if done else None),
                f"{o.history_bytes:,}", ratio, _cell(o.completed),
            ]
        )  # fmt: skip
    header = [
        "N turns", "S bytes", "kind", "ms/turn", "runner CPU ms/turn", "server CPU ms/turn",
        "history bytes", "ours / it (ms, CPU, server CPU, bytes)", "outcome",
    ]  # fmt: skip
    return report.table(header, rows)


def goal(outcomes: list[Outcome]) -> report.Goal:
    """Ours per turn against the fastest other kind at GOAL_CELL."""
    cell = [o for o in outcomes if (o.turns, o.size) == GOAL_CELL]
    mine = next((o for o in cell if o.kind == OURS.name), None)
    others = [o for o in cell if o.kind != OURS.name and o.completed == "completed"]
    what = "per turn vs the fastest peer (N=50, S=20 KB)"
    target = f"≤ {GOAL_RATIO}x"
    if mine is None or mine.completed != "completed" or not others:
        return report.Goal(what, target, "not measured in this run", None)
    fastest = min(others, key=lambda o: o.wall_ms)
    ratio = mine.wall_ms / fastest.wall_ms
    measured = f"{ratio:.2f}x ({mine.wall_ms:.1f} vs {fastest.kind}'s {fastest.wall_ms:.1f} ms)"
    frameworks = [o for o in others if o.kind != HAND.name]
    if fastest.kind == HAND.name and frameworks:  # say where the frameworks stand too
        best = min(frameworks, key=lambda o: o.wall_ms)
        measured += (
            f"; {mine.wall_ms / best.wall_ms:.2f}x the fastest framework peer "
            f"({best.kind}, {best.wall_ms:.1f} ms)"
        )
    return report.Goal(what, target, measured, ratio <= GOAL_RATIO)


def markdown(outcomes: list[Outcome], notes: dict[str, str]) -> str:
    kinds = "\n".join(
        f"- {name}: {_cell(note) or 'this repository'}" for name, note in notes.items()
    )
    return "\n\n".join(
        [
            "## 7. Peers",
            "The same N tool turns of S-byte outputs through each kind, one dev server, "
            "one process per kind (`python -m bench.peers`; what is counted: "
            "`bench/peers.py`).",
            kinds,
            table(outcomes),
            actions.markdown(outcomes, ours=OURS.name, floor=HAND.name),
        ]
    )


async def section(client: Client, *, quick: bool) -> report.Section:
    """Measurement 7 (N = 10, 50 when quick; else 10, 50, 100, 200; S = 1 KB, 20 KB)."""
    turns = [10, 50] if quick else [10, 50, 100, 200]
    outcomes, notes = await measure(client, turns, [1_000, 20_000])
    goals = (goal(outcomes), actions.goal(outcomes, ours=OURS.name, floor=HAND.name))
    return report.Section(markdown(outcomes, notes), goals)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="10,50", help="comma-separated N")
    parser.add_argument("--sizes", default="1000,20000", help="comma-separated S (bytes)")
    args = parser.parse_args()
    turns = [int(n) for n in args.turns.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    async with common.dev_server(common.converter()) as env:
        outcomes, notes = await measure(env.client, turns, sizes)
    print(markdown(outcomes, notes))
    print(
        report.goals_section(
            [goal(outcomes), actions.goal(outcomes, ours=OURS.name, floor=HAND.name)]
        )
    )


if __name__ == "__main__":
    asyncio.run(main())
