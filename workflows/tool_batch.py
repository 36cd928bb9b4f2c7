"""A reply's tool calls, performed: each as an activity, an agent called as a tool as a
child run (`workflows.run_tree`), a handoff as the switch to another agent; the calls
of the same reply approved while others run are started as their decisions come.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, cast

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        activity_calls,
        agent_calls,
        background,
        handoffs,
        inbox,
        interrupts,
        loop,
        mcp_tools,
        run_start,
        run_tree,
        steering,
        step_events,
    )
    from durable_agents.workflows.payloads import ToolOutcome
    from durable_agents.workflows.run_items import ToolCall
    from durable_agents.workflows.state import RunState


T = TypeVar("T")


def _ended(task: asyncio.Task[Any]) -> bool:
    """The task finished, with a result or a failure (not cancelled)."""
    return task.done() and not task.cancelled()


async def _whole(work: Coroutine[Any, Any, T]) -> tuple[T, bool]:
    """`work`'s outcome, and whether the caller was cancelled meanwhile: `work` itself is
    not. The start of an agent in the background is not cut by an interrupt (nor by the
    run's cancel): the agent works outside the turn, and a start cancelled half-way
    (Temporal's SDK then starts the child and cancels it) would leave the model told of
    a run that never worked. Once started it is recorded, so the run's end stops it."""
    task = asyncio.create_task(work)
    cancelled = False
    while not task.done():
        try:
            await workflow.wait_condition(task.done)
        except asyncio.CancelledError:
            cancelled = True
    return task.result(), cancelled


class ToolBatch:
    """Runs the tool calls of a run's replies."""

    def __init__(
        self,
        signals: inbox.Inbox,
        tree: run_tree.RunTree,
        *,
        emit: Callable[[RunState, dict[str, Any]], None],
        fail: run_tree.Fail,
    ) -> None:
        self._inbox = signals
        self._tree = tree
        self._emit = emit
        self._fail = fail
        self._running: dict[str, ToolCall] = {}
        """The calls of the batch under way that have started, by call id."""
        self._ended: dict[str, ToolOutcome] = {}
        """Their outcomes that came before an interrupt stopped the batch."""
        self._late: dict[str, ToolOutcome] = {}
        """Outcomes that came after (the call did not stop in time)."""
        self._cut = False

    async def run(self, state: RunState, calls: tuple[ToolCall, ...]) -> list[ToolOutcome]:
        """The outcomes of `calls`, and of the calls of the same reply approved while
        they run (each started as its decision comes), in the reply's order; the images
        they bring within the run's room, together. An interrupt stops the calls still
        running (`workflows.steering`): the outcomes that came before it are kept, and
        those that came while they were being stopped (the call finished anyway; not a
        cancelled child run's end); what is known of the others is noted for
        `interrupts.settle`."""
        self._running, self._ended, self._late, self._cut = {}, {}, {}, False
        done = await steering.unless_interrupted(
            state, self._run_batch(state, calls), cutting=self._cutting
        )
        if isinstance(done, list):  # without the calls asked again (no outcome yet)
            return mcp_tools.within_image_room(state, [o for o in done if not o.asked_again])
        pending = state.interrupt
        if pending is not None:
            for call in self._running.values():
                if call.call_id in self._ended:
                    continue
                late = self._late.get(call.call_id)
                child = agent_calls.child_of(state, call.call_id)
                waited = agent_calls.target(state, call) and not background.is_background(
                    state, call
                )
                below = child if waited else None  # a background start is never cut
                if below is not None and late is not None and late.is_error:
                    late = None  # the child's end as the cancel made it (a cancelled run)
                spec = state.agent.tool(call.tool)
                ran = activity_calls.tool_settings(state.agent.name, spec) if spec else None
                heard = ran is not None and ran.heartbeat_timeout_seconds is not None
                pending.notes[call.call_id] = interrupts.stopped_note(
                    pending, spec, late, below, heartbeats=heard
                )
                if below is not None and spec is not None and spec.child_takes_no_interrupts:
                    pending.notes[call.call_id] = (
                        f"{interrupts.prefix(pending)} while it ran: its run {below} takes no "
                        "interrupts (allow_interrupt=False), so it was left to finish; its "
                        "end is not waited for."
                    )
                if late is not None:  # it finished anyway: its real outcome is its result
                    self._ended[call.call_id] = late
        reply = loop.last_reply(state)
        order = {c.call_id: n for n, c in enumerate(reply.tool_calls if reply else [])}
        ended = [o for o in self._ended.values() if not o.asked_again]
        kept = sorted(ended, key=lambda o: order.get(o.call_id, len(order)))
        return mcp_tools.within_image_room(state, kept)

    def _cutting(self) -> None:
        self._cut = True

    async def _run_batch(self, state: RunState, calls: tuple[ToolCall, ...]) -> list[ToolOutcome]:
        reply = loop.last_reply(state)
        proposed = reply.tool_calls if reply is not None else list(calls)
        chosen = handoffs.taken(state, proposed)
        made = agent_calls.agent_call_ids(state, proposed)
        started = {c.call_id for c in calls}
        waiting = any(c.call_id not in started for c in loop.unanswered_calls(state))
        if not waiting or chosen is not None:  # a handoff answers the others "not run"
            return list(
                await asyncio.gather(*(self._run_tool(state, c, chosen, made) for c in calls))
            )
        tasks = [asyncio.create_task(self._run_tool(state, c, chosen, made)) for c in calls]
        try:
            while not all(t.done() for t in tasks):
                fresh = self._decided_meanwhile(state, started)
                if fresh:
                    started.update(c.call_id for c in fresh)
                    tasks += [
                        asyncio.create_task(self._run_tool(state, c, chosen, made)) for c in fresh
                    ]
                    continue

                def moved(
                    seen: int = self._inbox.woken,
                    ended: int = sum(map(_ended, tasks)),
                    running: tuple[asyncio.Task[ToolOutcome], ...] = tuple(tasks),
                ) -> bool:  # a decision, or one more call ended
                    return self._inbox.woken > seen or sum(map(_ended, running)) > ended

                await workflow.wait_condition(moved)
                failed = next((t for t in tasks if _ended(t) and t.exception()), None)
                if failed is not None:  # as a gather: the first failure, the others run on
                    raise cast(BaseException, failed.exception())
        except asyncio.CancelledError:
            for task in tasks:  # as a gather: every call is cancelled, and waited for
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        order = {c.call_id: n for n, c in enumerate(proposed)}
        return sorted((t.result() for t in tasks), key=lambda o: order.get(o.call_id, len(order)))

    def _decided_meanwhile(self, state: RunState, started: set[str]) -> tuple[ToolCall, ...]:
        """The calls of the reply approved since the batch began, to start now (none
        while the run is paused: nothing new starts then)."""
        if state.paused is not None or state.interrupt is not None:
            return ()
        waiting = [c for c in loop.unanswered_calls(state) if c.call_id not in started]
        return tuple(loop.runnable_calls(state, waiting))

    async def _run_tool(
        self, state: RunState, call: ToolCall, chosen: ToolCall | None, made: list[str]
    ) -> ToolOutcome:
        self._emit(state, step_events.tool_started(state, call))
        self._running[call.call_id] = call
        to_agent = handoffs.target(state, call)
        sub_agent = agent_calls.target(state, call)
        control = background.control_of(state, call)
        cancelled = False
        reopened = None
        taken = to_agent is not None and chosen is not None and chosen.call_id == call.call_id
        if taken or sub_agent is not None:  # no activity of their own checks its approvals
            reopened = await activity_calls.approvals_trusted(state, call)
        if reopened is not None:
            outcome = reopened
        elif to_agent is not None:
            outcome = await self._hand_off(state, call, chosen, to_agent)
        elif sub_agent is not None and background.is_background(state, call):
            start = self._tree.background.start(state, call, sub_agent, made)
            outcome, cancelled = await _whole(start)
        elif control is not None:
            outcome = await self._tree.background.control(state, call, control)
        elif sub_agent is not None:
            outcome = await self._tree.run_agent(state, call, sub_agent, made, self._fail)
        else:
            outcome = await activity_calls.run_tool(state, call)
        (self._late if self._cut else self._ended)[call.call_id] = outcome
        self._emit(state, step_events.tool_finished(call, outcome))
        if cancelled:  # the start had to end first: the cancel goes on now
            raise asyncio.CancelledError
        return outcome

    async def _hand_off(
        self, state: RunState, call: ToolCall, chosen: ToolCall | None, to_agent: str
    ) -> ToolOutcome:
        """A handoff call: the first of its reply is taken (the agent it names, as a
        worker serves it now, comes back in the outcome: `loop.record_tool_outcomes`
        switches to it); the others, one whose agent no worker serves and one that
        would break the run's budgets are answered to the model."""
        if chosen is None or call.call_id != chosen.call_id:
            taken_to = handoffs.target(state, chosen) if chosen is not None else None
            text = handoffs.not_taken(call, chosen or call, taken_to or to_agent)
            return ToolOutcome(call_id=call.call_id, content=text, is_error=True)
        try:
            spec = await run_start.described(to_agent)
        except ApplicationError as err:
            text = f"The handoff to {to_agent} failed: {err.message}"
            return ToolOutcome(call_id=call.call_id, content=text, is_error=True)
        spec = mcp_tools.returning(spec, state)
        refused = handoffs.refusal(state, spec)
        if refused is not None:
            text = f"The handoff to {to_agent} is refused: {refused}."
            return ToolOutcome(call_id=call.call_id, content=text, is_error=True)
        hooked = None  # `handoff(..., on_handoff=FUNCTION)`: run first, on the worker
        hook = state.agent.require_tool(call.tool)
        if hook.on_handoff is not None or hook.input_filter_function is not None:
            hooked = await activity_calls.run_tool(state, call)
            if hooked.is_error:
                what = "on_handoff hook" if hook.input_filter_function is None else "hooks"
                text = f"The handoff to {to_agent} failed: its {what}: {hooked.content}"
                return ToolOutcome(call_id=call.call_id, content=text, is_error=True)
        self._emit(state, step_events.handoff(state, call, to_agent))
        return ToolOutcome(
            call_id=call.call_id,
            content=handoffs.result(to_agent),
            handoff_to=spec,
            context_update=hooked.context_update if hooked is not None else None,
            left_out=hooked.left_out if hooked is not None else None,
        )
