"""The run's signals, each taken by name from AgentWorkflow's one dynamic handler.

A signal gets no answer, so nothing here raises: what the run cannot use (extra
arguments, an unknown name, a payload that is not the signal's) is recorded as
refused in its state, bounded (`workflows.refusals`); signals that arrive before
the run's state exists are kept and applied when it does. Only a signal that
changes the state wakes the loop (`woken`): refusals, repeated for days by a
misconfigured service, must not restart its timers each time.

Workflow code (deterministic): time from `workflow.now()`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        contract,
        decisions,
        interrupts,
        limits,
        loop,
        metrics,
        raw_payloads,
        reducer,
        refusals,
        run_events,
    )
    from durable_agents.workflows.audit import PREVIEW_CHARS, DecisionAttempt, RefusedSignal
    from durable_agents.workflows.payloads import (
        AnswerSignal,
        DecideInput,
        DecisionSignal,
        EndSessionSignal,
        MessageSignal,
        PauseSignal,
        RefreshToolsSignal,
        ResumeSignal,
    )
    from durable_agents.workflows.run_items import Decision
    from durable_agents.workflows.state import RunState, ToolsRefresh
    from durable_agents.workflows.webhook_payloads import DeliveryReport


DecisionName = Literal["approve", "reject", "answer"]
_DECISIONS: dict[str, DecisionName] = {
    contract.SIGNAL_APPROVE: "approve",
    contract.SIGNAL_REJECT: "reject",
    contract.SIGNAL_ANSWER: "answer",
}
"""The decision each decision signal sends."""


class Inbox:
    """Takes the run's signals; `state` is None until the run has one."""

    def __init__(self) -> None:
        self.state: RunState | None = None
        self.woken = 0
        """Counts signals and updates that changed the state, to wake the loop."""
        self._early_decisions: list[DecideInput | DecisionAttempt] = []
        """Decision signals received before the run's state existed (refused ones too)."""
        self._early_messages: list[tuple[MessageSignal, RawValue]] = []
        self._early_end: str | None = None
        self._early_pauses: list[tuple[PauseSignal | ResumeSignal, RawValue]] = []
        """Pause and resume signals received before the run's state existed, in order."""
        self._early_refusals: list[RefusedSignal] = []
        """Other signals refused before the run's state existed."""

    def bind(self, state: RunState) -> None:
        """The run's state exists: apply what arrived before it."""
        self.state = state
        now = workflow.now()
        for early in self._early_decisions:
            if isinstance(early, DecisionAttempt):
                state.refused_decisions.append(early)
            else:  # held if its call is not known yet: the first model reply may name it
                decisions.receive_signal(state, early, model_call_pending=True, now=now)
        self._early_decisions.clear()
        state.refused_signals.extend(self._early_refusals)
        trim_refusals(state)
        for message, raw in self._early_messages:
            why = self.message_problem(message)
            if why is None:
                self.take_message(message)
            else:
                self.refuse_signal(contract.SIGNAL_SEND_MESSAGE, raw, why)
        self._early_messages.clear()
        if self._early_end is not None:
            loop.end_session(state, reason=self._early_end, now=workflow.now())
        for early_pause, raw in self._early_pauses:
            why = self.apply_pause(early_pause)
            if why is not None:
                self.refuse_signal(_name(early_pause), raw, why)
        self._early_pauses.clear()

    def receive(self, name: str, args: Sequence[RawValue]) -> None:
        """A signal called `name` with `args`, whatever they are."""
        if name == contract.SIGNAL_CALLER_CHECK:  # it only had to arrive: nothing to keep
            return
        handlers = {
            contract.SIGNAL_APPROVE: lambda raw: self._decide(raw, "approve"),
            contract.SIGNAL_REJECT: lambda raw: self._decide(raw, "reject"),
            contract.SIGNAL_ANSWER: lambda raw: self._decide(raw, "answer"),
            contract.SIGNAL_SEND_MESSAGE: self._send_message,
            contract.SIGNAL_END_SESSION: self._end_session,
            contract.SIGNAL_PAUSE: lambda raw: self._pause_or_resume(contract.SIGNAL_PAUSE, raw),
            contract.SIGNAL_RESUME: lambda raw: self._pause_or_resume(contract.SIGNAL_RESUME, raw),
            contract.SIGNAL_REFRESH_TOOLS: self._refresh_tools,
            contract.SIGNAL_WEBHOOK_DELIVERY: self._webhook_delivery,
        }
        handler = handlers.get(name)
        if handler is not None and len(args) <= 1:
            handler(args[0] if args else raw_payloads.NONE)
        else:
            why = (
                f"{len(args)} arguments; the signal takes one payload"
                if handler is not None
                else f"unknown signal {name!r}; this workflow takes: {', '.join(handlers)}"
            )
            self.refuse_signal(name, args[0] if args else raw_payloads.NONE, why)

    def refuse_signal(self, name: str, raw: RawValue, why: str) -> None:
        """Record a signal the run cannot use; it does not wake the loop."""
        decision = _DECISIONS.get(name)
        if decision is not None:
            self._record_refused_decision(self._malformed(decision, raw, why))
            return
        if len(name) > limits.MAX_ID_CHARS or len(why) > limits.MAX_REFUSAL_CHARS:
            name, why = limits.clip(name), limits.clip(why, limits.MAX_REFUSAL_CHARS)
        entry = RefusedSignal(
            signal=name,
            payload=raw_payloads.preview(raw, PREVIEW_CHARS),
            refused_because=why,
            at=workflow.now(),
        )
        if self.state is None:
            self._early_refusals.append(entry)
        else:
            self.state.refused_signals.append(entry)
            trim_refusals(self.state)

    def _malformed(self, decision: DecisionName, raw: RawValue, why: str) -> DecisionAttempt:
        """The audit entry of a decision signal the run cannot take; ids and reason cut
        to the limits when they pass them."""
        data, now = raw_payloads.as_json(raw), workflow.now()
        attempt = decisions.malformed_attempt(decision, data, why, now=now)
        oversized = (
            max(len(attempt.call_id), len(attempt.approver)) > limits.MAX_ID_CHARS
            or len(attempt.refused_because or "") > limits.MAX_REFUSAL_CHARS
        )
        if oversized:
            short = limits.clip(why, limits.MAX_REFUSAL_CHARS)
            attempt = decisions.malformed_attempt(
                decision, data, short, now=now, clip_to=limits.MAX_ID_CHARS
            )
        return attempt

    def _record_refused_decision(self, attempt: DecisionAttempt) -> None:
        if self.state is None:
            self._early_decisions.append(attempt)
        else:
            self.state.refused_decisions.append(attempt)
            trim_refusals(self.state)

    def _decide(self, raw: RawValue, decision: DecisionName) -> None:
        # A signal gets no answer, so nothing here may raise: what cannot apply
        # is held or recorded as refused in the state (see workflows.decisions).
        # Only one that changes the state wakes the loop: refusals, repeated for
        # days by a misconfigured service, must not restart its timers each time.
        model = AnswerSignal if decision == "answer" else DecisionSignal
        payload = raw_payloads.decode(raw, model)
        if isinstance(payload, str):
            self._record_refused_decision(self._malformed(decision, raw, payload))
            return
        too_large = limits.decision_problem(payload)
        if too_large is not None:
            self._record_refused_decision(self._malformed(decision, raw, too_large))
            return
        unbound = _signal_problem(payload, decision)
        if unbound is not None:
            self._record_refused_decision(self._malformed(decision, raw, unbound))
            return
        sent = payload.model_dump(include=payload.model_fields_set, exclude={"decision"})
        request = DecideInput(**sent, decision=decision)
        if self.state is None:
            held = sum(isinstance(d, DecideInput) for d in self._early_decisions)
            if held >= limits.MAX_HELD:
                why = f"the run is starting; {held} decisions are held already"
                self._record_refused_decision(self._malformed(decision, raw, why))
                return
            self.woken += 1
            self._early_decisions.append(request)
            return
        before = (len(self.state.items), len(self.state.held_decisions))
        crowded = len(self.state.held_decisions) >= limits.MAX_HELD
        recorded = decisions.receive_signal(
            self.state,
            request,
            model_call_pending=loop.awaiting_model(self.state),
            now=workflow.now(),
            hold_limit=limits.MAX_HELD if crowded else None,
        )
        trim_refusals(self.state)
        changed = (len(self.state.items), len(self.state.held_decisions)) != before
        if changed:
            self.woken += 1
        if recorded is not None:
            record_wait(self.state, recorded)

    def _send_message(self, raw: RawValue) -> None:
        """The user's next message in a session: queued while the agent works, unless
        it says otherwise (`while_busy`: `workflows.interrupts`)."""
        payload = raw_payloads.decode(raw, MessageSignal)
        if isinstance(payload, str):  # none, null or not a message: there is no message
            self.refuse_signal(contract.SIGNAL_SEND_MESSAGE, raw, payload)
            return
        why = self.message_problem(payload)
        if why is not None:
            self.refuse_signal(contract.SIGNAL_SEND_MESSAGE, raw, why)
            return
        if self.state is None:
            self.woken += 1
            self._early_messages.append((payload, raw))
            return
        self.take_message(payload)

    def message_problem(self, payload: MessageSignal) -> str | None:
        """Why a message (the signal's or the update's) is refused, or None: too long, too
        many queued, the run has ended, or it works and the message says `reject`."""
        too_large = limits.message_problem(payload.content)
        if too_large is not None:
            return too_large
        queue = self.state.queued_messages if self.state is not None else self._early_messages
        adding = len(payload.content) if isinstance(payload.content, list) else 1
        if len(queue) + adding > limits.MAX_QUEUED_MESSAGES:
            at_once = f"{adding} at once, " if adding > 1 else ""
            return f"{at_once}{len(queue)} messages are queued already"
        state = self.state
        if state is None:
            return None
        if state.status.is_final:
            return f"run {state.run_id} has ended ({state.status.value})"
        policy = payload.while_busy or state.agent.while_busy
        if policy == "interrupt" and not state.agent.allow_interrupt:
            return interrupts.forbidden(state)
        if policy == "reject" and working(state):
            return (
                f"run {state.run_id} is working on turn {state.turn + 1} "
                f"({state.status.value}); the message was sent with while_busy=reject"
            )
        return None

    def update_problem(self, payload: MessageSignal) -> str | None:
        """Why the `send_message` update is refused (the signal is held until the run
        has started; the update is refused then), or None."""
        if self.state is None:
            return (
                "the run is still starting: try again in a moment (or send the signal, "
                "which is applied once it has started)"
            )
        return self.message_problem(payload)

    def take_message(self, payload: MessageSignal) -> None:
        """Queue a message `message_problem` let through; with `while_busy="interrupt"`
        while the run works, ask it to stop the turn (it then answers the message)."""
        assert self.state is not None
        state, now = self.state, workflow.now()
        interrupting = (payload.while_busy or state.agent.while_busy) == "interrupt"
        if interrupting and working(state):
            interrupts.ask(state, via="message", now=now)
        reducer.fold(state, reducer.MessageArrived(payload.content), now=now)
        self.woken += 1

    def _webhook_delivery(self, raw: RawValue) -> None:
        """How a webhook delivery of the run goes (recorded; it wakes nothing)."""
        payload = raw_payloads.decode(raw, DeliveryReport)
        why = payload if isinstance(payload, str) else None
        if why is None and self.state is None:
            why = "the run is starting: it has sent no webhook"
        if why is None and self.state is not None and not isinstance(payload, str):
            try:
                why = run_events.record_report(self.state, payload, now=workflow.now())
            except Exception as err:  # never a failed workflow task: the signal stays
                why = f"this report cannot be taken ({type(err).__name__})"
        if why is not None:
            self.refuse_signal(contract.SIGNAL_WEBHOOK_DELIVERY, raw, why)

    def _refresh_tools(self, raw: RawValue) -> None:
        """Have the run list its MCP tools again before its next model call."""
        empty = raw_payloads.is_null(raw)
        payload = RefreshToolsSignal() if empty else raw_payloads.decode(raw, RefreshToolsSignal)
        if isinstance(payload, str):
            self.refuse_signal(contract.SIGNAL_REFRESH_TOOLS, raw, payload)
            return
        state = self.state
        if state is None or state.status.is_final or not state.agent.mcp_servers:
            why = (
                "the run is starting: its tools are being listed now"
                if state is None
                else f"run {state.run_id} has ended ({state.status.value})"
                if state.status.is_final
                else f"agent {state.agent.name} has no MCP servers"
            )
            self.refuse_signal(contract.SIGNAL_REFRESH_TOOLS, raw, why)
            return
        # Not woken: a listing is due only before a model call, so a waiting run has
        # nothing to do for it, and waking it would restart a session's idle timer.
        state.tools_refresh = ToolsRefresh(by=payload.by, at=workflow.now())

    def _pause_or_resume(self, name: str, raw: RawValue) -> None:
        """Pause the run or let it go on; one it cannot take is refused. A malformed
        payload is taken for what it can use (an emergency stop is not refused for a bad
        field), and recorded as such."""
        self._take_pause(pause_payload(name, raw), raw)
        model = PauseSignal if name == contract.SIGNAL_PAUSE else ResumeSignal
        why = None if raw_payloads.is_null(raw) else raw_payloads.decode(raw, model)
        if isinstance(why, str):
            self.refuse_signal(name, raw, f"{_UNUSED}{why}")

    def _take_pause(self, payload: PauseSignal | ResumeSignal, raw: RawValue) -> None:
        if self.state is None:
            if len(self._early_pauses) < limits.MAX_HELD:
                self._early_pauses.append((payload, raw))
                self.woken += 1
            else:
                self.refuse_signal(_name(payload), raw, "the run is starting; too many held")
            return
        why = self.apply_pause(payload)
        if why is not None:
            self.refuse_signal(_name(payload), raw, why)

    def apply_pause(self, payload: PauseSignal | ResumeSignal) -> str | None:
        """Pause or resume the started run; why not, or None."""
        assert self.state is not None
        pausing = isinstance(payload, PauseSignal)
        why = loop.pause_problem(self.state, pausing=pausing)
        if why is None:
            asked = (
                reducer.PauseAsked(payload.by, payload.reason)
                if isinstance(payload, PauseSignal)
                else reducer.ResumeAsked(payload.by)
            )
            reducer.fold(self.state, asked, now=workflow.now())
            self.woken += 1
        return why

    def _end_session(self, raw: RawValue) -> None:
        """End a session: the run completes once its current exchange is answered.
        No payload (or null) ends it too, with a reason of its own."""
        payload = None if raw_payloads.is_null(raw) else raw_payloads.decode(raw, EndSessionSignal)
        if isinstance(payload, str):
            self.refuse_signal(contract.SIGNAL_END_SESSION, raw, payload)
            return
        given = payload.reason if isinstance(payload, EndSessionSignal) else None
        too_large = limits.reason_problem(given)
        if too_large is not None:
            self.refuse_signal(contract.SIGNAL_END_SESSION, raw, too_large)
            return
        self.woken += 1
        reason = given or "ended by signal"
        if self.state is None:
            self._early_end = reason
        elif not self.state.status.is_final:
            loop.end_session(self.state, reason=reason, now=workflow.now())


def _signal_problem(payload: DecisionSignal, decision: DecisionName) -> str | None:
    """Why a decision signal's own fields disagree with it, or None."""
    if payload.decision is not None and payload.decision != decision:
        return f"the payload says {payload.decision!r} but was sent as {decision!r}"
    if payload.signature is not None and payload.decision is None:
        return f"a signed decision must name its `decision` ({decision!r})"
    return None


_UNUSED = "applied without the parts it could not use: "


def pause_payload(name: str, raw: RawValue) -> PauseSignal | ResumeSignal:
    """The `pause` or `resume` signal's payload as the run takes it (what it can use of
    a malformed one), to pass on to the runs below."""
    model: type[PauseSignal] | type[ResumeSignal] = (
        PauseSignal if name == contract.SIGNAL_PAUSE else ResumeSignal
    )
    if raw_payloads.is_null(raw):
        return model()
    payload = raw_payloads.decode(raw, model)
    return _salvaged(raw, model) if isinstance(payload, str) else payload


def _salvaged(
    raw: RawValue, model: type[PauseSignal] | type[ResumeSignal]
) -> PauseSignal | ResumeSignal:
    """What of a malformed pause or resume payload can be used: a `by` that is a short
    string, a `reason` string (cut to its limit); the rest is dropped."""
    data = raw_payloads.as_json(raw)
    fields = data if isinstance(data, dict) else {}
    by, reason = fields.get("by"), fields.get("reason")
    kept: dict[str, str] = {}
    if isinstance(by, str) and 0 < len(by) <= limits.MAX_ID_CHARS:
        kept["by"] = by
    if model is PauseSignal and isinstance(reason, str):
        kept["reason"] = reason[: limits.MAX_REASON_CHARS]
    return model(**kept)


def _name(payload: PauseSignal | ResumeSignal) -> str:
    return contract.SIGNAL_PAUSE if isinstance(payload, PauseSignal) else contract.SIGNAL_RESUME


def trim_refusals(state: RunState) -> None:
    """Keep the refusal audit bounded."""
    if refusals.over_limit(state):
        refusals.trim(state)


def record_wait(state: RunState, decision: Decision) -> None:
    """The approval-wait metric of a decision on a call of the latest reply."""
    reply = loop.last_reply(state)
    calls = reply.tool_calls if reply is not None else []
    call = next((c for c in calls if c.call_id == decision.call_id), None)
    if reply is not None and call is not None:
        metrics.approval_wait(state.agent.name, call.tool, decision.at - reply.at)


def working(state: RunState) -> bool:
    """The run works on a turn (a model call, tools, approvals, a pause mid-turn): it is
    not waiting for the user's next message, and has not ended."""
    if state.status.is_final:
        return False
    if state.queued_messages or state.interrupt is not None:
        return True
    return not isinstance(loop.next_step(state, honour_pause=False), loop.AwaitInput)


def interrupt_problem(state: RunState | None) -> str | None:
    """Why the `interrupt` update is refused (None: it is taken)."""
    if state is None:
        return "the run is still starting: there is no turn to stop yet"
    return interrupts.problem(state, working=working(state))


def pause_refusal(state: RunState | None, payload: PauseSignal | ResumeSignal) -> str | None:
    """Why the `pause` or `resume` update is refused (None: it is taken)."""
    if state is None:
        return (
            "the run is still starting: try again in a moment (or send the signal, "
            "which is applied once it has started)"
        )
    return loop.pause_problem(state, pausing=isinstance(payload, PauseSignal))


DECISION_SIGNALS = tuple(_DECISIONS)
"""The signals that decide a call: `approve`, `reject`, `answer`."""
