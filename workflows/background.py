"""Agents called as tools in the background (`Agent.as_tool(wait=False)`). Pure.

A call of such a tool starts the agent as a child run (its id `<caller>/<call id>`, as
for any agent called as a tool: `workflows.agent_calls`) and is answered at once with
the child's id. The caller keeps a record of it (`RunState.background_runs`), which
continue-as-new carries; the child tells its caller's *workflow id* (not one of its
workflow runs) where it is (`SubRunReport.progress`) and how it ended
(`sub_run_finished`), and its end reaches the caller's model as a message. The
caller's model gets three tools to operate its background runs (`CONTROL_TOOLS`):
check one, send one a message, stop one. A run with background children does not
finish while they run: a session waits for input as usual, a single run waits for
them and answers once more with their results (`loop.next_step`: `AwaitChildren`).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Literal

from durable_agents.workflows import agent_calls, budget, tree_approvals
from durable_agents.workflows.payloads import ToolOutcome
from durable_agents.workflows.run_items import AssistantMessage, ToolCall
from durable_agents.workflows.state import BACKGROUND_RUNS_KEPT, BackgroundRun, RunState, RunStatus
from durable_agents.workflows.tree_payloads import SubRunFinished, SubRunProgress

CHECK_TOOL = "check_background_agent"
MESSAGE_TOOL = "message_background_agent"
STOP_TOOL = "stop_background_agent"
Control = Literal["check", "message", "stop"]
OUTPUT_PREVIEW = 2_000
"""The most characters of a child's latest reply its progress reports carry."""
MAX_MESSAGE_CHARS = 32_000
"""The most characters the caller's model may send a background run at once."""
GONE = "it ended without telling its caller (terminated or timed out?)"
"""The error of a background run found ended by a check."""

CONTROL_TOOLS: dict[Control, tuple[str, str]] = {
    "check": (
        CHECK_TOOL,
        "Where an agent you started in the background is: its status, turn, pending "
        "approvals and the start of its latest reply (as it last reported).",
    ),
    "message": (
        MESSAGE_TOOL,
        "Send an agent you started in the background a message; it reads it at its next turn.",
    ),
    "stop": (
        STOP_TOOL,
        "Stop an agent you started in the background (it is cancelled); its end comes to "
        "you as a message.",
    ),
}
"""The tools that operate agents in the background: (name, description) by operation
(`Agent.all_tools` adds them to an agent that calls agents in the background)."""


def check_every(state: RunState) -> timedelta:
    """How often the run checks that the background runs it did not start in its current
    workflow run (those a continue-as-new carried) still run: a timer, and a signal to
    each (`caller_check`), while any runs; a run that cannot be reached has ended
    without telling (terminated, timed out). The agent's `background_check_every`. The
    workflow run that started a child hears of its end from Temporal and checks nothing."""
    return state.agent.background_check_every


def unreachable(error: BaseException) -> bool:
    """A signal (or cancel) to a background run failed because the run has ended: it is
    not found (closed runs take no signal). Any other failure (a transient one, too many
    signals) leaves it counted as running."""
    return "not found" in str(error).lower()


def is_background(state: RunState, call: ToolCall) -> bool:
    """`call` starts its agent in the background."""
    tool = state.agent.tool(call.tool)
    return tool is not None and tool.runs_agent is not None and tool.background


def control_of(state: RunState, call: ToolCall) -> Control | None:
    """Which operation `call` is, if it calls one of `CONTROL_TOOLS`."""
    tool = state.agent.tool(call.tool)
    return tool.controls_background if tool is not None else None


def running(state: RunState) -> list[BackgroundRun]:
    """The background runs that have not told their end yet."""
    return [b for b in state.background_runs if b.running]


def running_ids(state: RunState) -> set[str]:
    return {b.run_id for b in running(state)}


def find(state: RunState, run_id: str) -> BackgroundRun | None:
    return next((b for b in state.background_runs if b.run_id == run_id), None)


def record(
    state: RunState, call: ToolCall, agent: str, child: str, share: int | None, now: datetime
) -> None:
    """A background run started; the oldest ended records go past `BACKGROUND_RUNS_KEPT`."""
    state.background_runs.append(
        BackgroundRun(call_id=call.call_id, agent=agent, run_id=child, share=share, started_at=now)
    )
    while len(state.background_runs) > BACKGROUND_RUNS_KEPT:
        ended = next((b for b in state.background_runs if not b.running), None)
        if ended is None:
            break
        state.background_runs.remove(ended)


def started(call: ToolCall, agent: str, child: str) -> ToolOutcome:
    """What the caller's model is told of a call that started its agent in the background."""
    text = (
        f"The {agent} agent works on this in the background as run {child}. Its final "
        "output will come to you as a message when it finishes; meanwhile go on. "
        f"{CHECK_TOOL}, {MESSAGE_TOOL} and {STOP_TOOL} take this run id."
    )
    return ToolOutcome(call_id=call.call_id, content=text)


def budget_share(state: RunState, reply_calls: list[str]) -> int | None:
    """The token budget each of the reply's agent calls gets when it runs in the
    background: what is left of the run's, split evenly between them and the run itself,
    which goes on working meanwhile (None: the run has no token budget)."""
    if state.token_budget is None:
        return None
    left = state.token_budget - budget.tokens_used(state)
    return left // (len(reply_calls[: agent_calls.MAX_CHILDREN_PER_REPLY]) + 1)


def refusal(state: RunState) -> str | None:
    """Why no more runs may start in the background now (the model is told), or None."""
    if len(running(state)) >= agent_calls.MAX_CHILDREN_PER_REPLY:
        return f"{agent_calls.MAX_CHILDREN_PER_REPLY} agents run in the background already"
    return None


def arguments(call: ToolCall, kind: Control) -> tuple[str, str] | str:
    """(run id, message) of a control call, or why its arguments are not what the tool
    takes (the model is told)."""
    try:
        given = json.loads(call.arguments)
    except (ValueError, RecursionError):
        given = None
    wanted = {"run_id", "message"} if kind == "message" else {"run_id"}
    if not isinstance(given, dict) or set(given) != wanted:
        fields = ", ".join(f'"{f}": "..."' for f in sorted(wanted, reverse=True))
        return f"{call.tool} takes {{{fields}}}, nothing else."
    run_id, message = given["run_id"], given.get("message", "")
    if not isinstance(run_id, str) or not isinstance(message, str):
        return f"{call.tool}: run_id and message are strings."
    if kind == "message" and not message.strip():
        return f"{call.tool}: the message is empty."
    if len(message) > MAX_MESSAGE_CHARS:
        return f"{call.tool}: a message is at most {MAX_MESSAGE_CHARS} characters."
    return run_id, message


def target(state: RunState, call: ToolCall, run_id: str) -> BackgroundRun | str:
    """The background run `run_id` names, or why the call cannot act on it: it is none of
    this run's (the model is told which are)."""
    found = find(state, run_id[:300])
    if found is not None:
        return found
    mine = ", ".join(b.run_id for b in state.background_runs[-8:]) or "none"
    return f"{run_id[:300]!r} is not a run this run started in the background (those: {mine})."


def status_text(entry: BackgroundRun) -> str:
    """What `check_background_agent` answers."""
    shown: dict[str, object] = {
        "run_id": entry.run_id,
        "agent": entry.agent,
        "status": entry.status.value,
        "turn": entry.turn,
        "pending_approvals": entry.pending_approvals,
        "started_at": entry.started_at.isoformat(),
    }
    if entry.finished_at is not None:
        shown["finished_at"] = entry.finished_at.isoformat()
    if entry.last_output:
        shown["last_output"] = entry.last_output
    return json.dumps(shown, ensure_ascii=False)


def progress(state: RunState) -> SubRunProgress:
    """(A background run) where it is, for its caller."""
    last = next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)
    text = last.content if last is not None and last.content else None
    return SubRunProgress(
        status=tree_approvals.shown_status(state),
        turn=state.turn,
        last_output=text[:OUTPUT_PREVIEW] if text else None,
    )


def progress_key(state: RunState) -> tuple[str, int] | None:
    """(A background run) what its reports say of its progress, in short: a report goes
    when it changes. None: a run its caller waits on reports only its approvals."""
    if not state.background:
        return None
    return (tree_approvals.shown_status(state).value, state.turn)


def take_progress(state: RunState, child: str, sent: SubRunProgress | None, pending: int) -> None:
    """A running background child's report: kept as what `check_background_agent` says."""
    entry = find(state, child)
    if entry is None or not entry.running:
        return
    entry.pending_approvals = pending
    if sent is not None and not sent.status.is_final:
        entry.status, entry.turn = sent.status, sent.turn
        entry.last_output = sent.last_output


def ended(state: RunState) -> SubRunFinished:
    """(A background run) how it ended, for its caller."""
    error = state.error.message[:4_000] if state.error is not None else None
    return SubRunFinished(
        run_id=state.run_id,
        status=state.status,
        final_output=state.final_output,
        error=error,
        usage=state.usage,
        sub_run_usage=state.sub_run_usage,
    )


def take_end(state: RunState, end: SubRunFinished, *, now: datetime) -> str | None:
    """A background child ended: its record says so, what it used counts against the
    run's budget, its pending calls are forgotten, and its output is queued for the
    model as a message (returned). None: not a running background child of this run
    (nothing changes)."""
    entry = find(state, end.run_id)
    if entry is None or not entry.running:
        return None
    entry.status, entry.finished_at = end.status, now
    if entry.share is not None:
        used = end.usage
        if used is not None and end.sub_run_usage is not None:
            used = used.plus(end.sub_run_usage)
        agent_calls.count_spent(state, used, entry.share)  # None: its whole share
        entry.share = None
    tree_approvals.forget(state, entry.run_id)
    return message(entry, end)


def message(entry: BackgroundRun, end: SubRunFinished) -> str:
    """The message the caller's model gets when a background run ends."""
    head = (
        f"[The {entry.agent} agent you started in the background (run {entry.run_id}, "
        f"call {entry.call_id}) "
    )
    if end.status is RunStatus.COMPLETED:
        return f"{head}finished. Its final output:]\n{end.final_output or ''}"
    why = f": {end.error}" if end.error else ""
    return f"{head}ended {end.status.value} without an answer{why}]"


def stopped_all(state: RunState, *, now: datetime) -> list[str]:
    """The run ends while background runs run (they are stopped): each counts as having
    used all it was given; their ids."""
    ids = []
    for entry in running(state):
        if entry.share is not None:
            agent_calls.count_spent(state, None, entry.share)
            entry.share = None
        entry.status, entry.finished_at = RunStatus.CANCELLED, now
        tree_approvals.forget(state, entry.run_id)
        ids.append(entry.run_id)
    return ids


def lost_on_resume(state: RunState, carried: set[str], *, now: datetime) -> list[str]:
    """(A run resumed from a snapshot) its running background records whose call has no
    child state in the snapshot: ended as lost (the model is told); the messages."""
    told = []
    for entry in running(state):
        if entry.call_id in carried:
            continue
        entry.status, entry.finished_at, entry.share = RunStatus.CANCELLED, now, None
        told.append(lost_text(entry))
    return told


def lost_text(entry: BackgroundRun) -> str:
    """The message the model gets of a background run a resumed snapshot did not carry."""
    return (
        f"[The {entry.agent} agent you started in the background (call {entry.call_id}) "
        "did not come with this run's snapshot: its work is lost; start it again if you "
        "still need it.]"
    )
