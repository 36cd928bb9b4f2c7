"""The run's events, as webhooks carry them: what happened since the run last announced
(`due`: approvals, interruptions, pause, the run's end), numbered, each announced once
(`RunState.notices`, carried across continue-as-new), and which webhook endpoints each
goes to (`endpoints_for`).

The pinned event object (DESIGN.md): `{"seq": int, "type": str, "at": str, ...}`,
with the run (`run_id`, `agent`) and what the type says. An `approval_requested`
event says how to answer it: the signal or update, the exact JSON payload, and the
`temporal` CLI command that sends it. Sensitive argument values are masked (the
digest still binds the decision to them).

Pure: no Temporal imports, no I/O; time is passed in.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from datetime import datetime
from typing import Any

from durable_agents.workflows import contract, decisions, limits, step_events
from durable_agents.workflows.agent_spec import AgentSpec, WebhookSubscription
from durable_agents.workflows.argument_view import masked
from durable_agents.workflows.audit import DELIVERIES_KEPT, WebhookDelivery
from durable_agents.workflows.payloads import PendingApproval, parse_time
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import Notices, RunState
from durable_agents.workflows.step_events import iso, stamped
from durable_agents.workflows.webhook_payloads import DeliveryJob, DeliveryReport

APPROVAL_EVENTS = ("approval_requested", "approval_decided", "approval_expired")
APPROVER = "<approver>"
"""The `approver` of an event's answer until it is addressed to an endpoint
(`addressed`): then the endpoint's name, which the answering service may replace
with who decided (a policy may require a named approver or a signed decision)."""
ANSWER = "<answer: JSON matching answer_schema>"
"""The `result` placeholder of an answer's example input (the answering service puts
the answer there)."""


def webhook_id(state: RunState, seq: int) -> str:
    """The `webhook-id` of event `seq`: unique to this run (its first execution, kept
    across continue-as-new; a resume, a fork or a new run under a reused workflow id
    has its own), the same on every attempt, and short ASCII whatever the run's id."""
    chain = state.execution_id or hashlib.sha256(state.run_id.encode()).hexdigest()[:32]
    return f"evt_{chain}_{seq}"


def subscribed(spec: AgentSpec) -> bool:
    """Whether any of the run's events goes anywhere."""
    return bool(spec.webhooks) or any(t.webhooks for t in spec.tools)


def due(state: RunState, *, now: datetime, first_seq: int | None = None) -> list[dict[str, Any]]:
    """The events that happened since the run last announced, numbered (from
    `first_seq`: the run's event stream numbers them; else after the last announced),
    and the run marked as having announced them (`state.notices`)."""
    notices = state.notices or Notices()
    found: list[dict[str, Any]] = []
    fresh = [
        r
        for r in state.interruptions
        if notices.interrupted_at is None or r.applied_at > notices.interrupted_at
    ]
    found += [step_events.interrupted(state, r) for r in fresh]  # before what they withdrew
    pending = {p.call_id: p for p in decisions.pending_approvals(state)}
    made = decisions.decided(state)
    withdrawn = {c.call_id: c.note for r in state.interruptions for c in r.calls}
    for call_id in notices.pending:
        decision = made.get(call_id)
        if call_id not in pending and decision is not None:
            found.append(_decided(state, decision))
        elif call_id not in pending and call_id in withdrawn:  # interrupted: answered
            found.append(_withdrawn(state, call_id, withdrawn[call_id]))
        elif call_id not in pending and state.status.is_final:  # it can be decided no more
            found.append(_closed(state, call_id))
    deadlines = {c.call_id: d for c, d in decisions.deadlines(state)}
    for call_id, asked in pending.items():
        if call_id not in notices.pending:
            found.append(_requested(state, asked, deadlines.get(call_id)))
    if (state.paused is not None) != notices.paused and not state.status.is_final:
        if state.paused is not None:
            found.append({"type": "paused", "by": state.paused.by, "reason": state.paused.reason})
        else:
            found.append({"type": "resumed"})
    if state.status.is_final and not notices.finished:
        found.append(_finished(state))
    first = notices.seq + 1 if first_seq is None else first_seq
    numbered = [stamped(state, e, seq=n, now=now) for n, e in enumerate(found, start=first)]
    state.notices = Notices(
        seq=first + len(found) - 1 if found else notices.seq,
        pending=list(pending),
        paused=state.paused is not None if not state.status.is_final else notices.paused,
        finished=state.status.is_final,
        interrupted_at=fresh[-1].applied_at if fresh else notices.interrupted_at,
    )
    return numbered


def endpoints_for(state: RunState, event: dict[str, Any]) -> list[str]:
    """The endpoints `event` goes to: for an approval event, its tool's subscriptions
    when the tool has its own (`ToolSpec.webhooks`), else the agent's."""
    subscriptions: list[WebhookSubscription] = state.agent.webhooks
    if event["type"] in APPROVAL_EVENTS:
        tool = state.agent.tool(str(event.get("tool")))
        if tool is not None and tool.webhooks is not None:
            subscriptions = tool.webhooks
    names = [s.endpoint for s in subscriptions if event["type"] in s.events]
    return list(dict.fromkeys(names))


ID_TAKEN = "its delivery workflow id was taken by another workflow"
"""How a delivery's entry begins when it was started under another id."""


def record_sending(
    state: RunState,
    endpoint: str,
    webhook_id: str,
    event: dict[str, Any],
    *,
    now: datetime,
    note: str | None = None,
    workflow_id: str | None = None,
) -> None:
    """A delivery starts (its delivery workflow, `workflow_id`, reports how it goes);
    `note`: what the people who read the run should know of its start."""
    _keep(
        state,
        WebhookDelivery(
            endpoint=endpoint,
            webhook_id=webhook_id,
            event=event["type"],
            status="sending",
            error=note,
            workflow_id=workflow_id,
            at=now,
        ),
    )


def record_not_started(state: RunState, job: DeliveryJob, why: str, *, now: datetime) -> None:
    """A delivery whose workflow could not be started: given up, with the reason."""
    _keep(
        state,
        WebhookDelivery(
            endpoint=job.endpoint,
            webhook_id=job.webhook_id,
            event=str(job.event.get("type", "?"))[:50],
            status="gave_up",
            error=f"not started: {why}"[:500],
            at=now,
        ),
    )


def record_report(state: RunState, report: DeliveryReport, *, now: datetime) -> str | None:
    """Take a delivery workflow's report; why it is not taken, or None. Reports come in
    order, one an attempt, so only the next attempt's is taken. A report is
    informational (anyone who may signal the run can send one): it decides nothing.
    A delivery of this run no longer in the list (the list keeps the newest) comes
    back with its report, so one that gives up is never dropped silently."""
    known = next(
        (
            d
            for d in state.webhook_deliveries
            if (d.endpoint, d.webhook_id) == (report.endpoint, report.webhook_id)
        ),
        None,
    )
    if known is None and not _ours(state, report.webhook_id):
        return f"no delivery {report.webhook_id} of this run"
    attempts = known.attempts if known is not None else report.attempts - 1
    if report.attempts != attempts + 1:
        return f"attempt {report.attempts} reported after attempt {attempts}"
    try:
        next_try = parse_time(report.next_try_at) if report.next_try_at else None
    except ValueError as err:
        return f"next_try_at: {err}"
    reported = report.model_dump(exclude={"next_try_at"})
    if reported["error"] is None and known is not None and (known.error or "").startswith(ID_TAKEN):
        reported["error"] = known.error  # how it was started stays said
    reported["workflow_id"] = known.workflow_id if known is not None else None
    _keep(state, WebhookDelivery(**reported, next_try_at=next_try, at=now))
    return None


def _ours(state: RunState, given: str) -> bool:
    """Whether `given` is the webhook id of an event this run has announced."""
    seq = state.notices.seq if state.notices is not None else 0
    number = given.rpartition("_")[2]
    # ASCII digits only, and few ("²" is a digit to `isdigit`, and `int` refuses it and
    # numbers of thousands of digits): a report is anyone's, never a failed task.
    if not (number.isascii() and number.isdigit() and len(number) <= 18):
        return False
    return 0 < int(number) <= seq and given == webhook_id(state, int(number))


def _keep(state: RunState, delivery: WebhookDelivery) -> None:
    """`delivery` as the newest entry (replacing its older one); past the bound, the
    oldest delivered entries go first."""
    others = [
        d
        for d in state.webhook_deliveries
        if (d.endpoint, d.webhook_id) != (delivery.endpoint, delivery.webhook_id)
    ]
    kept = [*others, delivery]
    while len(kept) > DELIVERIES_KEPT:
        done = next((d for d in kept if d.status == "delivered"), kept[0])
        kept.remove(done)
    state.webhook_deliveries = kept


def addressed(event: dict[str, Any], endpoint: str) -> dict[str, Any]:
    """`event` as sent to `endpoint`: its answer names the endpoint as the approver."""
    if "answer" not in event:
        return event
    text = json.dumps(event["answer"]).replace(APPROVER, endpoint)
    return {**event, "answer": json.loads(text)}


def _requested(
    state: RunState, asked: PendingApproval, deadline: datetime | None
) -> dict[str, Any]:
    shown = dict(asked.args or {})
    for name in asked.sensitive:
        if name in shown:
            shown[name] = masked(shown[name])
    again = {"reopened_because": asked.reopened_because} if asked.reopened_because else {}
    return {
        "type": "approval_requested",
        "path": [state.agent.name],
        "call_id": asked.call_id,
        "tool": asked.tool,
        "args": shown,
        "sensitive": asked.sensitive,
        "arguments_sha256": asked.arguments_sha256,
        "requested_at": iso(asked.requested_at),
        "deadline": iso(deadline) if deadline is not None else None,
        "answer": answer(state, asked),
        "kind": asked.kind,
        "answer_schema": asked.answer_schema,
        "short_id": asked.short_id,
        **again,
    }


def answer(state: RunState, asked: PendingApproval) -> dict[str, Any]:
    """How to decide `asked`: the signals' and the update's exact JSON, and the
    `temporal` CLI command for each. `approver` is a placeholder the answering
    service replaces with who decided (policies may require a signed decision)."""
    binding = {"run_id": state.run_id, "arguments_sha256": asked.arguments_sha256}
    if state.execution_id is not None:
        binding["execution_id"] = state.execution_id
    base = {"call_id": asked.call_id, "approver": APPROVER, **binding}
    reject = {**base, "reason": "<why>"}
    # an external tool's call takes an answer (matching `answer_schema`), not an approval
    yes, name, sent = ("approve", contract.SIGNAL_APPROVE, {**base})
    if asked.kind == "answer":
        yes, name, sent = ("answer", contract.SIGNAL_ANSWER, {**base, "result": ANSWER})
    return {
        "workflow_id": state.run_id,
        yes: {"signal": name, "input": sent},
        "reject": {"signal": contract.SIGNAL_REJECT, "input": reject},
        "update": {
            "name": contract.UPDATE_DECIDE,
            "input": {**sent, "decision": yes},
        },
        "temporal_cli": {
            yes: _cli(state.run_id, name, sent),
            "reject": _cli(state.run_id, contract.SIGNAL_REJECT, reject),
        },
    }


def _cli(run_id: str, signal: str, payload: dict[str, Any]) -> str:
    text = json.dumps(payload, separators=(",", ":"))
    return (
        f"temporal workflow signal --workflow-id {shlex.quote(run_id)} --name {signal} "
        f"--input {shlex.quote(text)}"
    )


def _decided(state: RunState, decision: Decision) -> dict[str, Any]:
    tool = next((c.tool for c in decisions.all_calls(state) if c.call_id == decision.call_id), None)
    kind = "approval_expired" if decision.via == "timeout" else "approval_decided"
    event = {
        "type": kind,
        "path": [state.agent.name],
        "call_id": decision.call_id,
        "tool": tool,
        "decision": decision.decision,
        "approver": decision.approver,
        "reason": decision.reason,
        "via": decision.via,
    }
    if decision.decision == "answer":
        event.update(_answer_result(decision))
    return event


def _answer_result(decision: Decision) -> dict[str, Any]:
    """An answer's `result` as its event carries it: whole, as the answer was taken
    (at most `limits.MAX_ANSWER_BYTES` of JSON); one larger (a hand-made snapshot's) is
    left out, with its size (`result_bytes`): the run's state holds it."""
    size = len(json.dumps(decision.result, separators=(",", ":"), ensure_ascii=False).encode())
    if size > limits.MAX_ANSWER_BYTES:
        return {"result_bytes": size}
    return {"result": decision.result}


def _closed(state: RunState, call_id: str) -> dict[str, Any]:
    tool = next((c.tool for c in decisions.all_calls(state) if c.call_id == call_id), None)
    return {
        "type": "approval_expired",
        "path": [state.agent.name],
        "call_id": call_id,
        "tool": tool,
        "reason": f"the run ended ({state.status.value}) before a decision",
        "via": "run_ended",
    }


def _withdrawn(state: RunState, call_id: str, note: str) -> dict[str, Any]:
    """A call that waited for a decision, withdrawn by an interrupt (`interrupts.settle`)."""
    closed = _closed(state, call_id)
    return closed | {"reason": note[:500], "via": "interrupted"}


def _finished(state: RunState) -> dict[str, Any]:
    reason = state.error.message if state.error is not None else state.end_reason
    return {
        "type": "run_finished",
        "status": state.status.value,
        "final_output": state.final_output,
        "reason": reason,
        "turn": state.turn,
        "usage": state.usage.model_dump(mode="json"),
    }
