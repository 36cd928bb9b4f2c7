"""Approvals across a tree of runs (agents called as tools). Pure.

A child run cannot be queried or updated by its caller, only signalled; so each run
called as a tool tells its caller, by the `sub_run_report` signal, every call waiting
for a decision in it and below it (`report`); the caller keeps them
(`RunState.sub_approvals`, `take_report`) and shows them with its own calls
(`pending`, `pending_count`). A decision sent to a run for a call held below it goes
down to the child it came from (`route`): an `approve`/`reject` signal as it was sent,
a `decide` update as a `forwarded_decision` signal, whose answer (the recorded decision,
or the refusal) comes back up in the child's next report. The run that holds the call
checks the decision as if it had been sent to it: binding, signature, approvers.

What a caller lists of its children is what they reported: it shows, it does not
decide; every check is made by the run that holds the call.
"""

from __future__ import annotations

import json
from datetime import timedelta

from durable_agents.workflows import decisions, short_ids, signed_decisions
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import DecideInput, PendingApproval, problems
from durable_agents.workflows.run_items import ToolCall
from durable_agents.workflows.state import SUB_APPROVALS_KEPT, RunState, RunStatus, SubApproval
from durable_agents.workflows.tree_payloads import ForwardAnswer, ForwardedDecision, SubRunReport
from pydantic import ValidationError

ANSWER_TIMEOUT = timedelta(seconds=60)
"""How long a run waits for the answer to a `decide` it passed down."""
REPORT_LIMIT = 50
"""The most pending calls one report carries (those first asked for)."""
REPORT_ARGUMENT_CHARS = 256_000
"""The most characters of arguments one report carries (a signal stays well under
Temporal's payload limit)."""
ANSWERS_PER_REPORT = 50
"""The most answers one report carries (more go in the reports after it)."""
MAX_ANSWER_CHARS = 2_000
"""The most characters of a refusal passed back up."""

Key = tuple[tuple[str, str], ...]
"""What a report says, in short: (run id, call id) of each pending call."""


def pending(state: RunState) -> list[PendingApproval]:
    """The run's own pending calls, then those of the runs below it, each with the
    agents from this run's down to the one whose run holds it (`path`)."""
    own = decisions.pending_approvals(state)
    return own + [_shown(state, s) for s in state.sub_approvals]


def pending_count(state: RunState) -> int:
    """How many calls wait for a decision in the run and below it."""
    return len(decisions.pending_calls(state)) + len(state.sub_approvals)


def shown_status(state: RunState) -> RunStatus:
    """The run's status as operators see it: a run that is running while a run below it
    waits for a decision shows `awaiting_approval`, as a run waiting on its own call."""
    if state.status is RunStatus.RUNNING and state.sub_approvals:
        return RunStatus.AWAITING_APPROVAL
    return state.status


def key(state: RunState) -> Key:
    """What the run would report now, in short (a report is sent when it changes)."""
    if state.status.is_final:
        return ()
    own = tuple((state.run_id, c.call_id) for c in decisions.pending_calls(state))
    return own + tuple((s.run_id, s.call_id) for s in state.sub_approvals)


def report(state: RunState, answers: list[ForwardAnswer]) -> SubRunReport:
    """The run's report to its caller: its pending calls (those first asked for, at most
    `REPORT_LIMIT`, and `REPORT_ARGUMENT_CHARS` of arguments: the others show on the
    run itself) and up to `ANSWERS_PER_REPORT` answers."""
    sent, room = [], REPORT_ARGUMENT_CHARS
    for entry in pending(state)[:REPORT_LIMIT]:
        room -= len(entry.arguments)
        if room < 0:
            break
        sent.append(entry)
    return SubRunReport(run_id=state.run_id, pending=sent, answers=answers[:ANSWERS_PER_REPORT])


def take_report(state: RunState, received: SubRunReport, children: set[str]) -> str | None:
    """Keep what child `received.run_id` reports as pending instead of what it reported
    before; or, changing nothing, why the report cannot be taken: it is not from a
    child this run waits on, or an entry is not one a run reports (its digest is
    computed here from its arguments, never taken from the report), a report over
    `report`'s own bounds
    (`REPORT_ARGUMENT_CHARS` of arguments) or with arguments that are not a JSON object
    (a run reports only calls that can wait for a decision, and those have them)."""
    child = received.run_id
    if child not in children:
        return f"{child!r} is not a run this run waits on"
    size = sum(len(entry.arguments) for entry in received.pending)
    if size > REPORT_ARGUMENT_CHARS:
        return f"its calls carry {size} characters of arguments, over {REPORT_ARGUMENT_CHARS}"
    kept = [s for s in state.sub_approvals if s.via != child]
    room = max(SUB_APPROVALS_KEPT - len(kept), 0)
    reported = []
    for entry in received.pending[:room]:
        try:
            call = ToolCall(call_id=entry.call_id, tool=entry.tool, arguments=entry.arguments)
            digest = signed_decisions.call_sha256(call)
            if digest is None:
                return f"call {entry.call_id[:200]!r}: its arguments are not a JSON object"
            if entry.arguments_sha256 not in (None, digest):
                return f"call {entry.call_id[:200]!r}: its arguments_sha256 is not its arguments'"
            reported.append(
                SubApproval(
                    via=child,
                    run_id=entry.run_id or child,
                    execution_id=entry.execution_id,
                    path=entry.path,
                    call_id=entry.call_id,
                    tool=entry.tool,
                    arguments=entry.arguments,
                    arguments_sha256=digest,
                    requested_at=entry.requested_at,
                    sensitive=entry.sensitive,
                    kind=entry.kind,
                    answer_schema=entry.answer_schema,
                    short_id=entry.short_id,
                )
            )
        except ValidationError as err:
            return f"call {entry.call_id[:200]!r}: {problems(err)}"[:MAX_ANSWER_CHARS]
    state.sub_approvals = kept + reported
    return None


def forget(state: RunState, child: str) -> None:
    """Child `child` ended: none of its calls waits any more."""
    state.sub_approvals = [s for s in state.sub_approvals if s.via != child]


def refused(ref: str, why: str) -> ForwardAnswer:
    """The answer that a decision passed down was refused, and why (cut to fit)."""
    cut = why if len(why) <= MAX_ANSWER_CHARS else why[: MAX_ANSWER_CHARS - 1] + "…"
    return ForwardAnswer(ref=ref, refused=cut)


def route(state: RunState, call_id: str, run_id: str | None) -> str | None:
    """The child a decision for `call_id` (in run `run_id`, when the decision names one)
    goes to; None when it is for this run (its own checks then accept or refuse it).
    Raises DecisionRefused when it names a run below that holds no such call, or when
    runs below hold the call id and the decision does not say which."""
    if not state.sub_approvals or run_id == state.run_id:
        return None
    mine = [
        c.call_id
        for c in decisions.pending_calls(state)
        if call_id in (c.call_id, short_ids.of(state, c))
    ]
    own = bool(mine)
    held = short_ids.matching(state.sub_approvals, call_id)
    places = {(state.run_id, c) for c in mine} | {(s.run_id, s.call_id) for s in held}
    if run_id is None and len(places) > 1 and any(c != call_id for _, c in places):
        # a short id (of one of them at least) that names calls in several runs
        raise short_ids.refuse_ambiguous(call_id, sorted({r for r, _ in places}))
    if run_id is not None:
        named = [s for s in held if s.run_id == run_id]
        if not named:
            raise DecisionRefused(
                f"no call {call_id} waits in run {run_id}, nor in any run below run {state.run_id}"
            )
        return named[0].via
    if own or not held:
        return None
    runs = sorted({s.run_id for s in held})
    if len(runs) > 1:
        raise DecisionRefused(
            f"call {call_id} waits in {len(runs)} runs below run {state.run_id} "
            f"({', '.join(runs[:5])}): name the one (run_id)"
        )
    return held[0].via


def decision_of(forwarded: ForwardedDecision) -> DecideInput | str:
    """The `decide` payload passed down, read as the update reads one (its fields as
    sent), or why it is not one."""
    try:
        return DecideInput.model_validate_json(json.dumps(forwarded.decision))
    except ValidationError as err:
        return problems(err)


def _shown(state: RunState, entry: SubApproval) -> PendingApproval:
    call = ToolCall(call_id=entry.call_id, tool=entry.tool, arguments=entry.arguments)
    return PendingApproval(
        call_id=entry.call_id,
        tool=entry.tool,
        arguments=entry.arguments,
        requested_at=entry.requested_at,
        args=signed_decisions.call_arguments(call),
        arguments_sha256=entry.arguments_sha256,
        run_id=entry.run_id,
        execution_id=entry.execution_id,
        sensitive=entry.sensitive,
        path=[state.agent.name, *entry.path],
        kind=entry.kind,
        answer_schema=entry.answer_schema,
        short_id=entry.short_id,
    )
