"""AgentWorkflow: drives the pure loop; every model and tool call is an activity.

Deterministic by construction: time comes from `workflow.now()`, decisions on
what to do next come from `workflows.loop`, and every effect is an activity
named in `workflows.contract` (this module never imports activity code).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

# Plain-data modules with no side effects: pass them through the sandbox so
# pydantic does not rebuild every model for each workflow run.
with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        activity_calls,
        agent_calls,
        announcements,
        answers,
        contract,
        decisions,
        driver,
        evaluator_runs,
        inbox,
        loop,
        mcp_tools,
        metrics,
        raw_payloads,
        reducer,
        run_queries,
        run_start,
        run_switch,
        run_tree,
        signal_routing,
        steering,
        step_events,
        tool_batch,
        tree_approvals,
        update_checks,
        visibility,
    )
    from durable_agents.workflows.agent_spec import AgentSpec
    from durable_agents.workflows.check_payloads import GuardrailVerdict
    from durable_agents.workflows.interrupt_models import Interruption
    from durable_agents.workflows.payloads import (
        AgentResult,
        DecideInput,
        InterruptInput,
        InterruptResult,
        MessageSignal,
        ModelReply,
        PauseSignal,
        PendingApproval,
        ResumeSignal,
        StatusView,
        ToolOutcome,
    )
    from durable_agents.workflows.run_items import Decision, ToolCall
    from durable_agents.workflows.state import ErrorInfo, RunState, RunStatus


# Outside the workflow sandbox (`sandboxed=False`, as our other workflows): every module
# it runs is passed through the sandbox anyway (plugin.SANDBOX_PASSTHROUGH), so the
# sandbox guarded nothing here and cost a worker ~25% of its CPU per turn (its code
# execution around every activation and every payload; bench.peers, 2026-11-26).
# Determinism is kept by tests/unit/test_determinism_guard.py (statically) and by
# replaying every recorded history. A user's own workflows on the worker stay sandboxed.
@workflow.defn(name=contract.WORKFLOW_TYPE, sandboxed=False)
class AgentWorkflow:
    """One agent run: ask the model, run tools (after approval where needed), repeat."""

    # The input and signals arrive as raw payloads, decoded by us: a malformed one fails
    # the run with InvalidAgentInput, or is recorded as refused (the SDK would fail the
    # workflow task forever, or drop it with only a worker log line).

    @workflow.init
    def __init__(self, raw_input: RawValue = raw_payloads.NONE) -> None:
        self._begin = run_start.RunStart(raw_input)
        """The input and how the run begins (`workflows.run_start`)."""
        self._state: RunState | None = None
        self._unstarted: run_queries.Unstarted | None = None
        self._inbox = inbox.Inbox()
        self._tree = run_tree.RunTree(self._inbox, emit=self._emit, publish=self._publish)
        """The parent/child protocol (`workflows.run_tree`)."""
        self._tools = tool_batch.ToolBatch(
            self._inbox, self._tree, emit=self._emit, fail=self._fail
        )
        """Runs a reply's tool calls (`workflows.tool_batch`)."""
        self._evaluators = evaluator_runs.EvaluatorRuns(self._inbox)
        """Asks policies' evaluators about waiting calls (`workflows.evaluator_runs`)."""
        self._published: visibility.Published | None = visibility.set_at_start()
        self._check_start_values = self._published is not None
        """The values the start set are not checked against the state yet (the first
        publish corrects any that are not the run's: a client may set anything)."""
        self._turn_call = False
        """The model call about to be made is the turn's reply (a summary is not streamed)."""
        self._woken_at_step = 0
        """`self._inbox.woken` when the loop chose its step: a wait counts from there."""
        self._events = announcements.Announcer.for_input(self._begin.input)
        """Events published and sent to webhooks (`workflows.announcements`)."""
        self._stream = self._events.stream
        self._switching = False
        """About to continue as new: a waiting `interrupt` update is answered (the next
        workflow run applies it)."""
        if (carried := self._begin.carried()) is not None:  # there for the first handlers
            self._bind(carried)

    @workflow.run
    async def run(self, raw_input: RawValue = raw_payloads.NONE) -> AgentResult:
        """Run the agent until it answers, fails, is cancelled or runs out of turns."""
        state = self._state
        if state is None:
            try:
                state = await self._begin.start(self._publish_unstarted)
            except ApplicationError:
                await self._events.release_followers()
                raise
            self._bind(state)
        if workflow.info().parent is not None and state.depth > 0:  # called as a tool
            self._reporter = asyncio.create_task(self._tree.report_to_caller(state))
        if workflow.info().continued_run_id is None:
            self._emit(state, step_events.run_started(state))
            self._emit(state, *step_events.interrupted_at_start(self._begin.interrupted))
            if state.background_runs:  # resumed from a snapshot: its runs in the background
                await self._tree.background.resume_children(state)
        try:
            await self._drive(state)
        except asyncio.CancelledError:
            reducer.fold(state, reducer.Cancelled(), now=workflow.now())
            self._publish(state)
            metrics.finished(state.agent.name, state.status.value)
            await self._ended(state)
            raise
        except ApplicationError:
            await self._ended(state)  # the run failed: its end is an event too
            raise
        await self._ended(state)
        return AgentResult(
            status=state.status,
            final_output=state.final_output,
            turn=state.turn,
            usage=state.usage,
            sub_run_usage=state.sub_run_usage,
        )

    def _bind(self, state: RunState) -> None:
        """The run has its state: signals and updates apply to it from now on."""
        self._state = state
        self._inbox.bind(state)
        self._tree.bind(state)

    async def _ended(self, state: RunState) -> None:
        """The run has ended (not by continuing as new): its agents in the background are
        stopped, its caller (one that started it in the background) told, its end
        announced."""
        await self._tree.background.stop_all(state)
        await self._tree.background.report_end(state)
        await self._events.close(state)

    def _publish_unstarted(self, status: RunStatus, why: str) -> None:
        self._unstarted = (status, why)  # what the queries answer: no state will come
        visibility.publish_unstarted(self._begin.agent_name or "(unknown)", status, why)

    async def _drive(self, state: RunState) -> None:
        self._switch = run_switch.Switch.from_here(state)
        await driver.drive(state, self)

    # --- driver.LoopIO: the loop's steps, performed with Temporal ------------------

    def stamp(self) -> datetime:
        return workflow.now()

    def step_chosen(self, state: RunState, step: loop.Step) -> None:
        self._woken_at_step = self._inbox.woken
        self._publish(state)

    def _seen(self) -> int:
        """What a wait counts changes from: those seen when its step was chosen, so a
        signal that came while the step was prepared (the run awaited announcing it,
        say: a webhook's receiver approving at once) ends the wait at once."""
        return min(self._woken_at_step, self._inbox.woken)

    def finished(self, state: RunState) -> None:
        metrics.finished(state.agent.name, state.status.value)

    async def before_step(self, state: RunState, step: loop.Step) -> None:
        if state.sub_runs:  # a snapshot's children of calls that got a result: not resumed
            agent_calls.prune_sub_runs(state)
        await self._events.announce(state)
        if loop.may_continue_as_new(step) and self._switch_due(state):
            await self._continue_as_new(state)
        if isinstance(step, loop.AwaitDecisions):  # a resumed or unpaused run's calls too
            self._evaluators.start_due(state)
        self._turn_call = isinstance(step, loop.CallModel)  # not a summary (loop.Summarize)
        if self._turn_call:
            self._emit(state, step_events.turn_started(state))

    def interrupted(self, state: RunState, interruption: Interruption) -> None:
        self._publish(state)  # its event goes out with the next announcement (webhooks too)

    def _emit(self, state: RunState, *events: dict[str, Any]) -> None:
        self._events.emit(state, *events)

    def replied(self, state: RunState) -> None:
        self._evaluators.start_due(state)  # while the reply's other calls run
        last = loop.last_reply(state)
        metrics.replied(state.agent.name, last.usage if last else None, state.agent.price)
        self._emit(state, *step_events.replied(state, last))

    async def list_tools(self, state: RunState, step: loop.ListTools) -> AgentSpec | str:
        return await activity_calls.listed_mcp_tools(mcp_tools.without_mcp_tools(state.agent))

    async def redefine(self, state: RunState, step: loop.Redefine) -> reducer.Redefined:
        try:
            found: AgentSpec | str = await run_start.described(state.agent.name)
        except ApplicationError as err:
            found = err.message
        return reducer.Redefined(found, step.reason, workflow.info().run_id)

    async def check_guardrails(
        self, state: RunState, step: loop.CheckGuardrails
    ) -> list[GuardrailVerdict]:
        specs = state.agent.guardrails(step.kind)
        checks = (activity_calls.run_guardrail(state, s, step.value) for s in specs)
        return list(await asyncio.gather(*checks))

    async def run_tools(self, state: RunState, calls: tuple[ToolCall, ...]) -> list[ToolOutcome]:
        return await self._tools.run(state, calls)

    def _fail(self, state: RunState, error: ErrorInfo) -> NoReturn:
        """End the run failed with `error` (its state, search attributes and metrics
        saying so) by raising it as the workflow's failure; children still running are
        counted as having used all they were given. A run already failed keeps its
        first error."""
        if state.status.is_final and state.error is not None:
            error = state.error
            raise ApplicationError(
                error.message, error.details, type=error.type, non_retryable=True
            )
        self._tree.count_all_given(state)
        reducer.fold(state, reducer.Failed(error), now=workflow.now())
        self._failed(state, error)

    def _failed(
        self, state: RunState, error: ErrorInfo, message: str = "", *, non_retryable: bool = True
    ) -> NoReturn:
        """The run has failed with `error`: published, counted, and raised as the
        workflow's failure (with `message`, else the error's)."""
        self._publish(state)
        metrics.finished(state.agent.name, state.status.value)
        message = message or error.message
        raise ApplicationError(message, error.details, type=error.type, non_retryable=non_retryable)

    async def await_children(self, state: RunState) -> bool:
        """Wait for the end of an agent the run started in the background (or anything
        else that changes the state)."""
        await workflow.wait_condition(
            self._woken(state, self._seen()), timeout_summary="agents in the background"
        )
        return True

    async def await_resume(self, state: RunState) -> bool:
        """Wait until a signal or update changes the state (a resume, a decision, a
        message: each is recorded, and the loop looks again) or a switch falls due.
        No deadline is enforced meanwhile: an approval deadline that passed while
        paused is applied on resume; the session idle timeout starts again."""
        await workflow.wait_condition(self._woken(state, self._seen()), timeout_summary="paused")
        return True

    def _woken(self, state: RunState, seen: int) -> Callable[[], bool]:
        """The condition a wait ends on: a signal or update that changed the state, or
        a switch falling due while the run waits."""
        return lambda: self._inbox.woken > seen or self._switch_due(state)

    def _switch_due(self, state: RunState) -> bool:
        """Time to continue as new: an evaluator deciding a call puts it off until it
        answers (the run waits as usual meanwhile: an interrupt is applied at once)."""
        return self._switch.due(state) and not self._evaluators.busy

    async def _continue_as_new(self, state: RunState) -> None:
        """Carry the whole state into a new workflow run of the same workflow id.

        Waiting for handlers first means no signal or update is half-applied;
        one that arrives during the switch makes Temporal retry this workflow
        task with it applied, so it lands in the state that is carried over.
        """
        self._emit(state, step_events.continued_as_new(state))
        self._switching = True
        self._stream.release_followers()
        await workflow.wait_condition(
            lambda: (
                workflow.all_handlers_finished()
                and not self._tree.reporting
                and not self._evaluators.busy
            )
        )
        run_switch.continue_as_new(state, self._stream.carried())

    async def await_input(self, state: RunState) -> bool:
        """Wait for the session's next message, an end, or the idle timeout."""
        idle = state.agent.session_idle_timeout
        try:
            await workflow.wait_condition(
                self._woken(state, self._seen()),
                timeout=idle,
                timeout_summary="session idle timeout",
            )
        except TimeoutError:
            reducer.fold(state, reducer.SessionIdle(idle), now=workflow.now())
        return True

    async def await_decisions(self, state: RunState, step: loop.AwaitDecisions) -> bool:
        """Wait for a decision, or until the earliest approval deadline passes."""
        deadlines = [d for _, d in decisions.deadlines(state)]
        timeout = max(min(deadlines) - workflow.now(), timedelta(0)) if deadlines else None
        try:
            await workflow.wait_condition(
                self._woken(state, self._seen()),
                timeout=timeout,
                timeout_summary=answers.wait_summary(state, step.call_ids),
            )
        except TimeoutError:
            reducer.fold(state, reducer.DeadlinePassed(), now=workflow.now())
            if state.status is RunStatus.FAILED and state.error is not None:
                self._failed(state, state.error, non_retryable=False)
        return True

    async def call_model(self, state: RunState, step: loop.CallModel) -> ModelReply | None:
        """The model's reply; a call that failed for good fails the run, unless it was
        longer than the model's window and the run compacts and calls again (None)."""
        if state.interrupt is not None:  # asked meanwhile: the loop applies it first
            return None
        request = step.request
        if state.agent.stream and self._turn_call:  # the reply
            key = str(workflow.uuid4())
            self._stream.expect_deltas(key, turn=request.turn)
            request = request.model_copy(update={"stream_key": key})
        try:
            called = activity_calls.call_model(state.agent, request)
            reply = await steering.unless_interrupted(state, called)
        finally:
            self._stream.close_deltas()
        if isinstance(reply, steering.Cut):  # the loop applies the interrupt next
            reducer.fold(state, reducer.ModelCut(), now=workflow.now())
            return None
        if isinstance(reply, ErrorInfo):
            reducer.fold(state, reducer.ModelFailed(reply), now=workflow.now())
            if not state.status.is_final:  # to be made again once compacted
                return None
            self._failed(state, reply, f"model call failed: {reply.message}")
        return reply

    def _publish(self, state: RunState) -> None:
        """Keep the UI's current details and the search attributes current."""
        check, self._check_start_values = self._check_start_values, False
        self._published = visibility.publish(state, last=self._published, exact=check)

    # --- signals ------------------------------------------------------------------

    @workflow.signal(dynamic=True)
    async def on_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """Every signal, whatever its name and arguments (`workflows.signal_routing`).

        Named handlers are not used on purpose: the SDK calls one with every argument
        sent, and a signal with one argument too many (any SDK, or the `temporal`
        CLI, can send that) would raise in the handler and fail every later workflow
        task of the run, since the signal stays in its history.
        """
        if self._state is None and name in contract.TREE_SIGNALS:
            # from a run below, sent while this one continued as new: taken once it can
            await workflow.wait_condition(lambda: self._state is not None)
        await signal_routing.route(
            name,
            args,
            state=self._state,
            to=self._inbox,
            tree=self._tree,
            stream=self._stream,
            publish=self._publish,
        )

    @workflow.update(name=contract.UPDATE_DECIDE)
    async def decide(self, payload: DecideInput) -> Decision:
        """Approve or reject a pending call and get the recorded decision back; a call
        of a run below this one is decided there, and answered once it has."""
        # the validator ran: a refusal here should not happen
        state = update_checks.deciding(lambda: update_checks.started(self._state))
        child = update_checks.deciding(
            lambda: tree_approvals.route(state, payload.call_id, payload.run_id)
        )
        if child is not None:
            answer = await self._tree.pass_down(child, payload)
            if answer.decision is None:
                refused = answer.refused or "refused"
                raise update_checks.refusal(refused, contract.ERROR_DECISION_REFUSED)
            return answer.decision
        decision = update_checks.deciding(
            lambda: decisions.apply(state, payload, via="update", now=workflow.now())
        )
        self._inbox.woken += 1
        inbox.record_wait(state, decision)
        return decision

    @decide.validator
    def _validate_decide(self, payload: DecideInput) -> None:
        # A refusal is final: non-retryable, typed (validators never replay).
        update_checks.deciding(
            lambda: update_checks.check_decide(self._state, payload, now=workflow.now())
        )

    @workflow.update(name=contract.UPDATE_SEND_MESSAGE)
    async def send_message(self, payload: MessageSignal) -> StatusView:
        """The user's next message (as the `send_message` signal), answered with the run's
        status; one the run cannot take is refused by the validator, with why."""
        self._inbox.take_message(payload)
        return loop.status_view(update_checks.started(self._state))

    @send_message.validator
    def _validate_send_message(self, payload: MessageSignal) -> None:
        update_checks.refuse(self._inbox.update_problem(payload), contract.ERROR_MESSAGE_REFUSED)

    @workflow.update(name=contract.UPDATE_INTERRUPT)
    async def interrupt(self, payload: InterruptInput | None = None) -> InterruptResult:
        """Stop the current turn (`workflows.interrupts`); answered once it has stopped,
        with what was cut."""
        state, given = update_checks.started(self._state), payload or InterruptInput()
        asked = reducer.InterruptAsked("update", by=given.by, reason=given.reason)
        reducer.fold(state, asked, now=workflow.now())
        self._inbox.woken += 1
        await workflow.wait_condition(
            lambda: state.interrupt is None or state.status.is_final or self._switching
        )
        applied = state.interruptions[-1] if state.interrupt is None else None
        return InterruptResult(status=loop.status_view(state), interruption=applied)

    @interrupt.validator
    def _validate_interrupt(self, payload: InterruptInput | None = None) -> None:
        update_checks.refuse(inbox.interrupt_problem(self._state), contract.ERROR_INTERRUPT_REFUSED)

    @workflow.update(name=contract.UPDATE_PAUSE)
    async def pause(self, payload: PauseSignal | None = None) -> StatusView:
        """Pause the run (as the `pause` signal), and the runs below it that it waits
        on, and get its status back."""
        return await self._pause_or_resume(contract.SIGNAL_PAUSE, payload or PauseSignal())

    @pause.validator
    def _validate_pause(self, payload: PauseSignal | None = None) -> None:
        update_checks.check_pause(self._state, payload or PauseSignal())

    @workflow.update(name=contract.UPDATE_RESUME)
    async def resume(self, payload: ResumeSignal | None = None) -> StatusView:
        """Let a paused run go on (as the `resume` signal), and the runs below it that it
        waits on, and get its status back."""
        return await self._pause_or_resume(contract.SIGNAL_RESUME, payload or ResumeSignal())

    @resume.validator
    def _validate_resume(self, payload: ResumeSignal | None = None) -> None:
        update_checks.check_pause(self._state, payload or ResumeSignal())

    async def _pause_or_resume(self, name: str, payload: PauseSignal | ResumeSignal) -> StatusView:
        # the validator ran: a refusal here should not happen
        update_checks.refuse(self._inbox.apply_pause(payload), contract.ERROR_PAUSE_REFUSED)
        await self._tree.pass_pause_down(name, payload)
        return loop.status_view(update_checks.started(self._state))

    # --- queries ---------------------------------------------------------------

    @workflow.query(name=contract.QUERY_GET_STATE)
    def get_state(self, request: Any = None) -> dict[str, Any]:
        """The RunState (what export writes, without integrity block), or a page of it
        when it is larger than the answer's bound (`workflows.state_pages`)."""
        return run_queries.state_answer(self._state, self._unstarted, request)

    @workflow.query(name=contract.QUERY_GET_STATUS)
    def get_status(self) -> StatusView:
        """Status, agent, turn, pending approvals and usage."""
        return run_queries.status(self._state, self._unstarted, self._begin.agent_name)

    @workflow.query(name=contract.QUERY_GET_PENDING_APPROVALS)
    def get_pending_approvals(self) -> list[PendingApproval]:
        """The tool calls waiting for a decision."""
        state = self._state
        return [] if state is None else self._evaluators.shown(state, tree_approvals.pending(state))
