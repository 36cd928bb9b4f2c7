"""Agents in the background, as the workflow performs them (`workflows.background` holds
the pure part): a call starts the child run, which outlives its caller's workflow run
(parent close policy ABANDON: a continue-as-new neither cancels nor loses it) and tells
its caller's workflow id its end (`sub_run_finished`); the caller's model checks on it,
messages it and stops it; the caller's end (other than continuing as new) stops it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import (
    CancelledError,
    ChildWorkflowError,
    WorkflowAlreadyStartedError,
)

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        activity_calls,
        agent_calls,
        background,
        contract,
        details,
        fresh_ids,
        inbox,
        input_items,
        loop,
        raw_payloads,
        search_attributes,
        secret_ids,
        step_events,
        tree_approvals,
    )
    from durable_agents.workflows.payloads import (
        AgentInput,
        AgentResult,
        MessageSignal,
        PauseSignal,
        ToolOutcome,
    )
    from durable_agents.workflows.run_items import ToolCall
    from durable_agents.workflows.state import RunState, RunStatus
    from durable_agents.workflows.tree_payloads import SubRunFinished


def gate_taken(said: RawValue) -> bool:
    """The gate's verdict, appended by the workers' interceptor to a signal from a run
    below (`durable_agents.gate_interceptor`), says it was sent by one of our runs (or,
    on a replayer without keys, was not checked)."""
    verdict = raw_payloads.as_json(said)
    given = verdict if isinstance(verdict, dict) else {}
    return given.get(contract.STREAM_VERDICT) in ("taken", "unchecked")


def gate_execution(said: RawValue) -> str:
    """The sender's execution (first execution run id) the gate's tag covers; empty when
    the header named none."""
    verdict = raw_payloads.as_json(said)
    given = verdict.get(contract.SENDER_EXECUTION) if isinstance(verdict, dict) else None
    return given if isinstance(given, str) else ""


def other_execution(child: str, expected: str, said: RawValue) -> str | None:
    """Why a tagged signal from `child` is not from the execution of it this run started
    (`expected`, its first execution run id); None when it is."""
    sent_by = gate_execution(said)
    if sent_by == expected:
        return None
    return (
        f"sent by execution {sent_by[:64]!r} of {child[:200]!r}, not the one this run "
        f"started ({expected[:64]!r}): a signal of an earlier run under that id"
    )


def gate_refusal(said: RawValue) -> str:
    verdict = raw_payloads.as_json(said)
    given = verdict if isinstance(verdict, dict) else {}
    return str(given.get("why", "the gate did not check it"))[:2_000]


async def start_child(
    state: RunState,
    call_id: str,
    task: AgentInput,
    agent: str,
    close: workflow.ParentClosePolicy,
    *,
    starting: Callable[[str], None] = lambda _: None,
) -> tuple[Any, str]:
    """Start the child run of agent call `call_id` (waited for, or in the background), on
    this run's task queue, under its usual id (with a part only the workers' keys make:
    `workflows.secret_ids`); when a workflow this call did not start holds that id (a
    squatter who won the race to it), under a fresh one, recorded with why
    (`RunState.renamed_children`; up to `fresh_ids.TRIES`). The id it started under is
    recorded (`RunState.child_runs`: where clients find it). Its handle and id;
    `starting` is told each id tried before its start."""
    plain = agent_calls.child_id(state.run_id, call_id)
    child = usual = agent_calls.child_id(
        state.run_id, call_id, secret_ids.suffix(state, "child", plain)
    )
    for tried in range(fresh_ids.TRIES + 1):
        if tried:  # held: a fresh id no one can compute (`workflows.fresh_ids`)
            child = agent_calls.rename(state, call_id, usual, await fresh_ids.drawn())
        starting(child)
        try:
            handle = await _start_child(task, agent, child, close)
        except WorkflowAlreadyStartedError:
            if tried == fresh_ids.TRIES:
                raise
            continue
        agent_calls.started(state, call_id, child)
        return handle, child
    raise AssertionError("unreachable")


async def _start_child(
    task: AgentInput, agent: str, child: str, close: workflow.ParentClosePolicy
) -> Any:
    return await workflow.start_child_workflow(
        contract.WORKFLOW_TYPE,
        task,
        id=child,
        result_type=AgentResult,
        task_queue=workflow.info().task_queue,
        parent_close_policy=close,
        static_summary=details.static_summary(
            agent, input_items.text_of(task.input) or "(resumed)"
        ),
        search_attributes=search_attributes.at_start(agent) if task.resume_from is None else None,
    )


class BackgroundRuns:
    """A run's agents in the background (and, a run started in the background, its
    report of its end to its caller)."""

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
        self._watching: list[asyncio.Task[None]] = []
        """What watches each child this workflow run started (kept: a task must be held)."""
        self._watched: set[str] = set()
        """The ids of those children: Temporal tells this workflow run their end."""
        self.starting: set[str] = set()
        """The children whose start is in flight: their first report may come before the
        start resolves (in the same workflow task, signals are applied first)."""
        self._checking: asyncio.Task[None] | None = None
        """What checks on the others now and then (`_check_now_and_then`)."""

    def bind(self, state: RunState) -> None:
        """The run's state exists: the background runs an earlier workflow run started
        (carried by continue-as-new) are checked on while they run."""
        self._checking = asyncio.create_task(self._check_now_and_then(state))

    def _unwatched(self, state: RunState) -> list[str]:
        return sorted(background.running_ids(state) - self._watched)

    async def _check_now_and_then(self, state: RunState) -> None:
        """Every `background.check_every` while a background run this workflow run did not
        start runs, a `caller_check` signal to each: one that cannot be delivered has
        ended without telling (Temporal tells only the workflow run that started it).
        No timer and no signal while none runs."""
        while not state.status.is_final:
            await workflow.wait_condition(lambda: bool(self._unwatched(state)))
            try:
                await workflow.wait_condition(
                    lambda: not self._unwatched(state),
                    timeout=background.check_every(state),
                    timeout_summary="check on agents in the background",
                )
            except TimeoutError:
                await self._check(state, self._unwatched(state))

    async def _check(self, state: RunState, ids: list[str]) -> None:
        handles = [workflow.get_external_workflow_handle(c) for c in ids]
        sent = await asyncio.gather(
            *(h.signal(contract.SIGNAL_CALLER_CHECK) for h in handles), return_exceptions=True
        )
        for child, outcome in zip(ids, sent, strict=True):
            if isinstance(outcome, Exception) and background.unreachable(outcome):
                why = f"{background.GONE}: {outcome}"
                self.take_end(
                    state, SubRunFinished(run_id=child, status=RunStatus.FAILED, error=why)
                )

    async def start(
        self, state: RunState, call: ToolCall, agent: str, made: list[str]
    ) -> ToolOutcome:
        """Start `call`'s agent in the background and answer the call with its id."""
        refused = agent_calls.refusal(state, call, made) or background.refusal(state)
        if refused is not None:
            return agent_calls.not_called(call, agent, refused)
        share = background.budget_share(state, made)  # the run keeps a share: it goes on
        if share is not None and share < 1:
            return agent_calls.not_called(call, agent, "this run's token budget is spent")
        signed = state.start_proof is not None
        task = agent_calls.child_input(state, call, agent, token_budget=share, signed_start=signed)
        if isinstance(task, str):
            return ToolOutcome(call_id=call.call_id, content=task, is_error=True)
        task = task.model_copy(update={"background": True})
        return await self._start(state, call, agent, task, share)

    async def _start(
        self,
        state: RunState,
        call: ToolCall,
        agent: str,
        task: AgentInput,
        share: int | None,
    ) -> ToolOutcome:
        tried: list[str] = []

        def starting(child: str) -> None:  # its first report may come before it resolves
            tried.append(child)
            self.starting.add(child)

        try:
            # it outlives this workflow run (continue-as-new); the run's end stops it
            handle, child = await start_child(
                state,
                call.call_id,
                task,
                agent,
                workflow.ParentClosePolicy.ABANDON,
                starting=starting,
            )
        except WorkflowAlreadyStartedError:
            for held in tried:
                tree_approvals.forget(state, held)  # what a run of that id reported meanwhile
            why = f"the runs with ids {', '.join(tried)} are running already"
            return agent_calls.failed(call, agent, why)
        finally:
            self.starting.difference_update(tried)
        for held in tried[:-1]:
            tree_approvals.forget(state, held)  # what the squatter reported meanwhile
        background.record(state, call, agent, child, share, workflow.now())
        state.background_runs[-1].execution = handle.first_execution_run_id or ""
        self._watched.add(child)  # Temporal tells this workflow run its end: `_watch`
        self._emit(state, step_events.child_started(call, agent, child, in_background=True))
        if state.paused is not None:  # paused while it was starting: so is it
            pause = PauseSignal(by=state.paused.by or None, reason=state.paused.reason)
            await asyncio.gather(
                workflow.get_external_workflow_handle(child).signal(contract.SIGNAL_PAUSE, pause),
                return_exceptions=True,
            )
        self._watching.append(asyncio.create_task(self._watch(state, handle, child)))
        self._publish(state)
        return background.started(call, agent, child)

    async def _watch(self, state: RunState, handle: Any, child: str) -> None:
        """While this workflow run lasts, the child's end as Temporal tells it: the same
        as its `sub_run_finished` (whichever comes first is taken), and the only word of a
        child terminated or timed out."""
        try:
            done: AgentResult = await handle
            end = SubRunFinished(
                run_id=child,
                status=done.status,
                final_output=done.final_output,
                usage=done.usage,
                sub_run_usage=done.sub_run_usage,
            )
        except ChildWorkflowError as err:
            stopped = isinstance(err.cause, CancelledError)
            end = SubRunFinished(
                run_id=child,
                status=RunStatus.CANCELLED if stopped else RunStatus.FAILED,
                error=activity_calls.root_message(err)[:4_000],
            )
        self.take_end(state, end)

    def take_end(self, state: RunState, end: SubRunFinished) -> bool:
        """A background child ended: its output goes to the model as a message (waking
        a run that waits for input or for it). False: not a running child of this run."""
        if state.status.is_final:
            return False
        text = background.take_end(state, end, now=workflow.now())
        if text is None:
            return False
        loop.receive_message(state, text, now=workflow.now())
        self._inbox.woken += 1
        self._emit(state, step_events.child_finished(background.find(state, end.run_id), end))
        self._publish(state)
        return True

    def take_signal(self, state: RunState, args: Sequence[RawValue]) -> None:
        """The `sub_run_finished` signal, the gate's verdict last (a worker's interceptor
        adds it: `durable_agents.gate_interceptor`); what cannot be taken is recorded as
        refused."""
        *args, said = args or [raw_payloads.NONE]
        raw = args[0] if args else raw_payloads.NONE
        if not gate_taken(said):
            why: str | None = gate_refusal(said)
        elif len(args) != 1:
            why = f"{len(args)} arguments; the signal takes one payload"
        else:
            end = raw_payloads.decode(raw, SubRunFinished)
            entry = None if isinstance(end, str) else background.find(state, end.run_id)
            if isinstance(end, str):
                why = end
            elif entry is not None and (
                other := other_execution(end.run_id, entry.execution, said)
            ):
                why = other
            elif self.take_end(state, end) or entry is not None:
                why = None  # taken, or its end came already (as Temporal told it)
            else:
                why = f"{end.run_id[:200]!r} is not a run this run started in the background"
        if why is not None:
            self._inbox.refuse_signal(contract.SIGNAL_SUB_RUN_FINISHED, raw, why)

    async def control(
        self, state: RunState, call: ToolCall, kind: background.Control
    ) -> ToolOutcome:
        """A call of `check_background_agent`, `message_background_agent` or
        `stop_background_agent`."""
        given = background.arguments(call, kind)
        if isinstance(given, str):
            return ToolOutcome(call_id=call.call_id, content=given, is_error=True)
        entry = background.target(state, call, given[0])
        if isinstance(entry, str):
            return ToolOutcome(call_id=call.call_id, content=entry, is_error=True)
        if kind == "check":
            return ToolOutcome(call_id=call.call_id, content=background.status_text(entry))
        if not entry.running:
            text = f"Run {entry.run_id} has ended ({entry.status.value}): nothing to {kind}."
            return ToolOutcome(call_id=call.call_id, content=text, is_error=True)
        handle = workflow.get_external_workflow_handle(entry.run_id)
        try:
            if kind == "message":
                await handle.signal(contract.SIGNAL_SEND_MESSAGE, MessageSignal(content=given[1]))
                text = f"Sent to run {entry.run_id}; it reads it at its next turn."
            else:
                await handle.cancel()
                text = f"Run {entry.run_id} is asked to stop; its end comes to you as a message."
        except Exception as err:
            text = f"Run {entry.run_id} could not be reached: {err}"
            if not background.unreachable(err):  # it may well run: the model may try again
                text += "; it still counts as running, try again later"
                return ToolOutcome(call_id=call.call_id, content=text, is_error=True)
            # it has ended without telling (terminated, say)
            gone = SubRunFinished(run_id=entry.run_id, status=RunStatus.FAILED, error=text)
            self.take_end(state, gone)  # it is counted as ended: nothing waits for it
            return ToolOutcome(call_id=call.call_id, content=text, is_error=True)
        return ToolOutcome(call_id=call.call_id, content=text)

    async def stop_all(self, state: RunState) -> None:
        """The run ends (not by continuing as new): its background runs are stopped."""
        ids = background.stopped_all(state, now=workflow.now())
        if not ids:
            return
        self._publish(state)
        handles = [workflow.get_external_workflow_handle(c) for c in ids]
        await asyncio.gather(*(h.cancel() for h in handles), return_exceptions=True)

    async def resume_children(self, state: RunState) -> None:
        """(A run resumed from a snapshot) start its running background runs again from
        the states the snapshot carries (`RunState.sub_runs`); those it does not carry
        are lost, and the model is told."""
        carried = {s.call_id for s in state.sub_runs}
        for text in background.lost_on_resume(state, carried, now=workflow.now()):
            loop.receive_message(state, text, now=workflow.now())
        for entry in background.running(state):
            call = ToolCall(call_id=entry.call_id, tool=entry.agent, arguments="{}")
            task = agent_calls.resumed_child(
                state,
                call,
                entry.agent,
                signed_start=state.start_proof is not None,
                token_budget=entry.share,
            )
            state.background_runs.remove(entry)
            if task is None:  # the snapshot's child is another agent's: lost
                loop.receive_message(state, background.lost_text(entry), now=workflow.now())
                continue
            task = task.model_copy(update={"background": True})
            outcome = await self._start(state, call, entry.agent, task, entry.share)
            if outcome.is_error:
                loop.receive_message(state, f"[{outcome.content}]", now=workflow.now())

    async def report_end(self, state: RunState) -> None:
        """(A run started in the background) tell the caller's workflow id how it ended;
        a caller that has ended has nobody to tell."""
        parent = workflow.info().parent
        if parent is None or not state.background:
            return
        caller = workflow.get_external_workflow_handle(parent.workflow_id)
        await asyncio.gather(
            caller.signal(contract.SIGNAL_SUB_RUN_FINISHED, background.ended(state)),
            return_exceptions=True,
        )
