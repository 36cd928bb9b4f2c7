"""The parent/child protocol of a run tree, as the workflow performs it: an agent called
as a tool runs as a child run whose end is the call's result; the calls waiting below a
run travel up in reports (`sub_run_report`), decisions for them travel down
(`forwarded_decision`) and come back answered; a pause reaches the children a run
waits on. `workflows.tree_approvals` and `workflows.agent_calls` hold the pure part.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        activity_calls,
        agent_calls,
        background,
        background_tree,
        contract,
        decisions,
        errors,
        inbox,
        limits,
        raw_payloads,
        step_events,
        tree_approvals,
    )
    from durable_agents.workflows.payloads import (
        AgentInput,
        DecideInput,
        DecisionSignal,
        PauseSignal,
        ResumeSignal,
        ToolOutcome,
    )
    from durable_agents.workflows.run_items import ToolCall, Usage
    from durable_agents.workflows.state import ErrorInfo, RunState
    from durable_agents.workflows.tree_payloads import (
        ForwardAnswer,
        ForwardedDecision,
        SubRunReport,
    )

Fail = Callable[[RunState, ErrorInfo], NoReturn]
"""Ends the run failed (the workflow's `_fail`)."""


class RunTree:
    """A run's side of the tree: the children it waits on, what they were given of its
    budget, the decisions it passed down and (a child) the answers it owes its caller."""

    def __init__(
        self,
        signals: inbox.Inbox,
        *,
        emit: Callable[[RunState, dict[str, Any]], None],
        publish: Callable[[RunState], None],
    ) -> None:
        self._inbox = signals
        self._emit = emit
        self._publish = publish
        self.children: set[str] = set()
        """The child runs (agents called as tools) this run waits on now."""
        self._tried: dict[str, list[str]] = {}
        """The ids each agent call under way started (or tried to start) its child under."""
        self.executions: dict[str, str] = {}
        """Of those started, each one's first execution run id (from its handle): its
        reports are taken only from that execution."""
        self.shares: dict[str, int] = {}
        """The token-budget shares of the children running now, not counted yet."""
        self._passed_down: dict[str, tuple[str, ForwardAnswer | None]] = {}
        """Decisions passed down, by reference: the child, and its answer once it came."""
        self._answers: list[ForwardAnswer] = []
        """(A child) answers to decisions passed down by the caller, not sent yet."""
        self._answers_queued = 0
        self._answers_sent = 0
        self.reporting = False
        """(A child) a report to the caller is on its way."""
        self.background = background_tree.BackgroundRuns(signals, emit=emit, publish=publish)
        """The agents it started in the background (`workflows.background_tree`)."""
        self._state: RunState | None = None

    def bind(self, state: RunState) -> None:
        """The run's state exists."""
        self._state = state
        self.background.bind(state)

    def waits_on(self, child: str) -> bool:
        """`child` is a run below this one that is running: one it waits on, or one it
        started in the background."""
        state = self._state
        return child in self.children or (
            state is not None and child in background.running_ids(state)
        )

    def count_all_given(self, state: RunState) -> None:
        """The run ends while children run: each counts as having used all it was given."""
        for share in self.shares.values():
            agent_calls.count_spent(state, None, share)
        self.shares.clear()

    async def run_agent(
        self, state: RunState, call: ToolCall, agent: str, made: list[str], fail: Fail
    ) -> ToolOutcome:
        """A call of an agent tool: the agent runs as a child run (`workflows.agent_calls`),
        whose end is the call's result; cancelling this run cancels it. `made`: the ids
        of the reply's agent calls; `fail` ends the run (a tool that fails the run)."""
        refused = agent_calls.refusal(state, call, made)
        if refused is not None:
            return agent_calls.not_called(call, agent, refused)
        budgeted = state.token_budget is not None or state.cost_budget is not None
        share = agent_calls.budget_share(state, made) if budgeted else None
        signed = state.start_proof is not None
        resumed = None
        if state.sub_runs:
            # exported with this run
            resumed = agent_calls.resumed_child(
                state, call, agent, signed_start=signed, token_budget=share
            )
        task = resumed or agent_calls.child_input(
            state, call, agent, token_budget=share, signed_start=signed
        )
        if isinstance(task, str):
            return ToolOutcome(call_id=call.call_id, content=task, is_error=True)
        evicted = False
        try:
            outcome = await self._run_child(state, call, agent, task, share)
            tool = state.agent.tool(call.tool)
            failing = tool is not None and tool.on_failure == "fail_run" and outcome.is_error
            if failing:
                child = agent_calls.child_of(state, call.call_id)
                fail(state, agent_calls.failure(call, agent, child, outcome))
            return outcome
        except GeneratorExit:  # the worker dropped the run from its cache: touch nothing
            evicted = True
            raise
        finally:
            tried = self._tried.pop(call.call_id, [])
            self.children.difference_update(tried)
            if not evicted and any(s.via in tried for s in state.sub_approvals):
                for child in tried:
                    tree_approvals.forget(state, child)
                self._publish(state)

    async def _run_child(
        self,
        state: RunState,
        call: ToolCall,
        agent: str,
        task: AgentInput,
        share: int | None,
    ) -> ToolOutcome:
        """Start the child and wait for its end; with `share` (the tokens of the run's
        budget it was given), count what it used against the run's budget."""
        tried = self._tried.setdefault(call.call_id, [])

        def starting(child: str) -> None:  # its reports are taken while it starts
            tried.append(child)
            self.children.add(child)

        try:
            handle, child = await background_tree.start_child(
                state,
                call.call_id,
                task,
                agent,
                workflow.ParentClosePolicy.REQUEST_CANCEL,
                starting=starting,
            )
        except WorkflowAlreadyStartedError:
            why = f"the runs with ids {', '.join(tried)} are running already"
            return agent_calls.failed(call, agent, why)
        self.children.difference_update(tried[:-1])  # a squatter's id: not ours
        self.executions[child] = handle.first_execution_run_id or ""
        try:
            return await self._wait_child(state, call, agent, handle, child, share)
        finally:
            self.executions.pop(child, None)

    async def _wait_child(
        self,
        state: RunState,
        call: ToolCall,
        agent: str,
        handle: Any,
        child: str,
        share: int | None,
    ) -> ToolOutcome:
        self._emit(state, step_events.child_started(call, agent, child))
        if state.paused is not None:
            # paused while the child was starting: the pause did not reach it then
            pause = PauseSignal(by=state.paused.by or None, reason=state.paused.reason)
            await asyncio.gather(
                handle.signal(contract.SIGNAL_PAUSE, pause), return_exceptions=True
            )
        if share is not None:
            self.shares[child] = share  # counted once: when it ends, or when this run does
        tool = state.agent.tool(call.tool)
        left = tool is not None and tool.child_takes_no_interrupts
        try:  # a child that takes no interrupts is not cancelled by its caller's
            done = await (asyncio.shield(handle) if left else handle)
        except ChildWorkflowError as err:
            if self.shares.pop(child, None) is not None:  # what it used is not known
                unstarted = activity_calls.failure_type(err) == contract.ERROR_INVALID_INPUT
                agent_calls.count_spent(state, Usage() if unstarted else None, share or 0)
            return agent_calls.failed(call, agent, activity_calls.root_message(err))
        except asyncio.CancelledError:
            if left and state.interrupt is None:  # the run is cancelled: so is the child
                handle.cancel()
            if self.shares.pop(child, None) is not None:
                agent_calls.count_spent(state, None, share or 0)  # cut off: all it was given
            raise
        if self.shares.pop(child, None) is not None:
            used = done.usage.plus(done.sub_run_usage) if done.sub_run_usage else done.usage
            agent_calls.count_spent(state, used, share or 0)
        return agent_calls.result(call, agent, done)

    async def take_signal(self, state: RunState, name: str, args: Sequence[RawValue]) -> bool:
        """Take a signal of the tree protocol, or pass a decision for a call of a run
        below this one down to it; False: the inbox takes the signal."""
        if name == contract.SIGNAL_SUB_RUN_FINISHED:
            self.background.take_signal(state, args)
            return True
        if name == contract.SIGNAL_SUB_RUN_REPORT:  # the gate's verdict last
            *sent, said = args or [raw_payloads.NONE]
            if len(sent) != 1:
                why = f"{len(sent)} arguments; the signal takes one payload"
                self._inbox.refuse_signal(name, sent[0] if sent else raw_payloads.NONE, why)
            elif not background_tree.gate_taken(said):  # what it lists reaches approvers
                self._inbox.refuse_signal(name, sent[0], background_tree.gate_refusal(said))
            else:
                self._take_report(state, sent[0], said)
            return True
        raw = args[0] if len(args) == 1 else None
        if name == contract.SIGNAL_FORWARDED_DECISION and raw is not None:
            await self._take_forwarded(state, raw)
            return True
        deciding = (contract.SIGNAL_APPROVE, contract.SIGNAL_REJECT, contract.SIGNAL_ANSWER)
        if name not in deciding or raw is None:
            return False
        if not state.sub_approvals:  # nothing below waits
            return False
        decoded = raw_payloads.decode(raw, DecisionSignal)
        if isinstance(decoded, str):
            return False  # the inbox refuses it, as any malformed decision
        try:
            child = tree_approvals.route(state, decoded.call_id, decoded.run_id)
        except errors.DecisionRefused as err:
            self._inbox.refuse_signal(name, raw, str(err))
            return True
        if child is None:
            return False
        try:  # as it was sent: a signature covers exactly its fields
            await workflow.get_external_workflow_handle(child).signal(name, raw)
        except Exception as err:  # the child ended meanwhile
            why = f"run {child}, which holds the call, could not be reached: {err}"
            self._inbox.refuse_signal(name, raw, why)
        return True

    def _started_execution(self, state: RunState, child: str) -> str | None:
        """The execution of `child` this run started (None: its start has not resolved
        yet, so its first reports are taken from whichever execution sends them)."""
        if child in self.executions:
            return self.executions[child]
        entry = background.find(state, child)
        return entry.execution if entry is not None and entry.running else None

    def _take_report(self, state: RunState, raw: RawValue, said: RawValue) -> None:
        """A child's report (tagged by our workers' gate): its pending calls replace those
        it reported before; its answers go to the decisions passed down to it that wait
        for them. A report that cannot be taken changes nothing and is recorded as
        refused."""
        report = raw_payloads.decode(raw, SubRunReport)
        expected = (
            None if isinstance(report, str) else self._started_execution(state, report.run_id)
        )
        if isinstance(report, str):
            why: str | None = report
        elif expected is not None and (
            other := background_tree.other_execution(report.run_id, expected, said)
        ):
            why = other
        else:
            try:
                # one starting in the background may report before its start resolves
                below = self.children | background.running_ids(state) | self.background.starting
                why = tree_approvals.take_report(state, report, below)
            except Exception as err:  # never a failed workflow task: the signal stays
                why = f"this report cannot be taken ({type(err).__name__})"
        if why is not None or isinstance(report, str):
            self._inbox.refuse_signal(contract.SIGNAL_SUB_RUN_REPORT, raw, why or "refused")
            return
        background.take_progress(state, report.run_id, report.progress, len(report.pending))
        for answer in report.answers:
            waiting = self._passed_down.get(answer.ref)
            if waiting is not None and waiting[0] == report.run_id and waiting[1] is None:
                self._passed_down[answer.ref] = (report.run_id, answer)
        self._publish(state)

    async def _take_forwarded(self, state: RunState, raw: RawValue) -> None:
        """(A child) a decision the caller passed down: decided here, or passed further
        down; the answer goes up in the next report, and the handler ends once it has
        (so a continue-as-new waits for it)."""
        forwarded = raw_payloads.decode(raw, ForwardedDecision)
        # Answered in the reports to a caller: a run started as a child of some other
        # workflow (depth 0) has none, and would wait for good (and never end).
        uncalled = workflow.info().parent is None or state.depth == 0
        if isinstance(forwarded, str) or uncalled:
            why = forwarded if isinstance(forwarded, str) else "this run was not called as a tool"
            self._inbox.refuse_signal(contract.SIGNAL_FORWARDED_DECISION, raw, why)
            return
        try:
            answer = await self._decide_below(state, forwarded)
        except Exception as err:  # never a failed workflow task: the signal stays
            answer = tree_approvals.refused(
                forwarded.ref, f"this decision cannot be taken ({type(err).__name__})"
            )
        self._answers.append(answer)
        self._answers_queued += 1
        mine = self._answers_queued
        await workflow.wait_condition(lambda: self._answers_sent >= mine)

    async def _decide_below(self, state: RunState, forwarded: ForwardedDecision) -> ForwardAnswer:
        ref = forwarded.ref
        request = tree_approvals.decision_of(forwarded)
        if isinstance(request, str):
            return tree_approvals.refused(ref, f"invalid decide payload: {request}")
        too_large = limits.decision_problem(request)
        if too_large is not None:
            return tree_approvals.refused(ref, f"invalid decide payload: {too_large}")
        try:
            child = tree_approvals.route(state, request.call_id, request.run_id)
            if child is not None:
                below = await self.pass_down(child, request)
                return below.model_copy(update={"ref": ref})
            decision = decisions.apply(state, request, via="update", now=workflow.now())
        except errors.DecisionRefused as err:
            return tree_approvals.refused(ref, str(err))
        self._inbox.woken += 1
        inbox.record_wait(state, decision)
        return ForwardAnswer(ref=ref, decision=decision)

    async def pass_down(self, child: str, request: DecideInput) -> ForwardAnswer:
        """Pass a decision down to `child` and wait for its answer (bounded); an answer
        counts only in a report of that child."""
        ref = str(workflow.uuid4())
        self._passed_down[ref] = (child, None)
        sent = request.model_dump(mode="json", include=request.model_fields_set)
        try:
            await workflow.get_external_workflow_handle(child).signal(
                contract.SIGNAL_FORWARDED_DECISION, ForwardedDecision(ref=ref, decision=sent)
            )
            await workflow.wait_condition(
                lambda: self._passed_down[ref][1] is not None or not self.waits_on(child),
                timeout=tree_approvals.ANSWER_TIMEOUT,
                timeout_summary=f"decision passed down to {child}",
            )
        except TimeoutError:
            waited = int(tree_approvals.ANSWER_TIMEOUT.total_seconds())
            why = (
                f"run {child}, which holds the call, did not answer within {waited} s; the "
                "decision may still apply there (its pending calls tell)"
            )
            return tree_approvals.refused(ref, why)
        except Exception as err:  # the child ended meanwhile
            why = f"run {child}, which holds the call, could not be reached: {err}"
            return tree_approvals.refused(ref, why)
        finally:
            _, answer = self._passed_down.pop(ref, (child, None))
        if answer is None:
            return tree_approvals.refused(ref, f"run {child} ended before it answered")
        return answer

    async def pass_pause_down(self, name: str, payload: PauseSignal | ResumeSignal) -> None:
        """Pause (or resume) the children this run waits on too, each as if the signal
        had been sent to it (and so theirs); one that ended meanwhile has nothing to
        pause. Runs without children in flight send nothing."""
        below = self.children | (background.running_ids(self._state) if self._state else set())
        if not below:
            return
        handles = [workflow.get_external_workflow_handle(c) for c in sorted(below)]
        await asyncio.gather(*(h.signal(name, payload) for h in handles), return_exceptions=True)

    async def report_to_caller(self, state: RunState) -> None:
        """(A run called as a tool) Tell the caller of the calls waiting in this run and
        below it whenever they change, with the answers to decisions it passed down.
        One report at a time, so they arrive in order."""
        parent = workflow.info().parent
        assert parent is not None
        caller = workflow.get_external_workflow_handle(parent.workflow_id)
        told: object = None if workflow.info().continued_run_id else ((), None)

        def said() -> object:  # what a report says, in short
            return (tree_approvals.key(state), background.progress_key(state))

        def due() -> bool:
            return bool(self._answers) or (not state.status.is_final and said() != told)

        while True:
            await workflow.wait_condition(due)
            size = tree_approvals.ANSWERS_PER_REPORT
            answers, self._answers = self._answers[:size], self._answers[size:]
            told = said()  # also when the caller is gone: tried once
            self.reporting = True
            try:
                report = tree_approvals.report(state, answers)
                if state.background:  # where it is, for its caller's model to check
                    report.progress = background.progress(state)
                await caller.signal(contract.SIGNAL_SUB_RUN_REPORT, report)
            except Exception:  # the caller has ended: nobody is left to tell
                pass
            finally:
                self.reporting = False
                self._answers_sent += len(answers)
