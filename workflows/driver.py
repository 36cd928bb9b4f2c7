"""The one driver of the pure loop: asks `workflows.reducer` for the next step, has a
`LoopIO` perform it and folds what it gave back in, until the run ends or the I/O says to
stop.

`AgentWorkflow` drives a run with Temporal I/O (activities, durable waits,
continue-as-new); `client.local_run` with in-process I/O (one attempt per call, a
callback for decisions). Both go through this loop, so the order of steps is the
same by construction. Pure: no `temporalio` import; all I/O, time included, is
injected.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from durable_agents.workflows import interrupts, loop, reducer
from durable_agents.workflows.agent_spec import AgentSpec
from durable_agents.workflows.check_payloads import GuardrailVerdict
from durable_agents.workflows.interrupt_models import Interruption
from durable_agents.workflows.payloads import ModelReply, ToolOutcome
from durable_agents.workflows.run_items import ToolCall
from durable_agents.workflows.state import RunState


class LoopIO(Protocol):
    """What performing the loop's steps takes."""

    def stamp(self) -> datetime:
        """The time to stamp on what is recorded (in a workflow: `workflow.now()`)."""
        ...

    def step_chosen(self, state: RunState, step: loop.Step) -> None:
        """The next step is known and `state.status` says it (e.g. publish it)."""
        ...

    def finished(self, state: RunState) -> None:
        """The run has ended (`state.status` is final)."""
        ...

    async def before_step(self, state: RunState, step: loop.Step) -> None:
        """About to perform `step` (e.g. continue as new first)."""
        ...

    def interrupted(self, state: RunState, interruption: Interruption) -> None:
        """An interrupt was applied (`interrupts.settle`): say so (an event, the UI)."""
        ...

    async def call_model(self, state: RunState, step: loop.CallModel) -> ModelReply | None:
        """The model's reply; None: none to record (the run failed, an interrupt cut the
        call, or it is made again once the conversation is compacted)."""
        ...

    def replied(self, state: RunState) -> None:
        """The model's reply is in the state (`loop.last_reply`): say so (events, metrics)."""
        ...

    async def run_tools(self, state: RunState, calls: tuple[ToolCall, ...]) -> list[ToolOutcome]:
        """The outcomes of the calls, in their order."""
        ...

    async def await_decisions(self, state: RunState, step: loop.AwaitDecisions) -> bool:
        """Wait for decisions; False: stop here (the run waits on)."""
        ...

    async def await_input(self, state: RunState) -> bool:
        """Wait for the session's next message; False: stop here."""
        ...

    async def await_children(self, state: RunState) -> bool:
        """Wait until something changes the state (the end of an agent the run started in
        the background, above all); False: stop here."""
        ...

    async def await_resume(self, state: RunState) -> bool:
        """Wait while the run is paused (until it is resumed or something else changes
        it); False: stop here."""
        ...

    async def list_tools(self, state: RunState, step: loop.ListTools) -> AgentSpec | str:
        """The agent with its MCP tools listed again, or why they could not be."""
        ...

    async def redefine(self, state: RunState, step: loop.Redefine) -> reducer.Redefined:
        """The agent's definition as a worker serves it now, or why none could be had."""
        ...

    async def check_guardrails(
        self, state: RunState, step: loop.CheckGuardrails
    ) -> list[GuardrailVerdict]:
        """The verdicts of the agent's guardrails of `step.kind` on `step.value`, in the
        agent's order (one that failed counts as tripped)."""
        ...


async def drive(state: RunState, io: LoopIO, *, max_steps: int | None = None) -> None:
    """Run `state` forward until it ends, the I/O stops it, or after `max_steps` steps."""
    taken = 0
    while max_steps is None or taken < max_steps:
        taken += 1
        interruption = interrupts.settle(state, now=io.stamp())
        if interruption is not None:
            io.interrupted(state, interruption)
        step = reducer.advance(state, now=io.stamp())
        io.step_chosen(state, step)
        if isinstance(step, loop.Finish):
            loop.finish(state, step.status, now=io.stamp())
            io.finished(state)
            return
        await io.before_step(state, step)
        try:
            event = await _perform(state, step, io)
        except _Stop:
            return
        if event is not None:
            reducer.fold(state, event, now=io.stamp())
            if isinstance(event, reducer.Replied):
                io.replied(state)


class _Stop(Exception):
    """The I/O stopped the run here (it waits on, or it failed)."""


async def _perform(state: RunState, step: loop.Step, io: LoopIO) -> reducer.Event | None:
    """Perform `step`: the event it gave, if any (None: look at the state again)."""
    if isinstance(step, loop.CallModel | loop.Summarize):
        reply = await io.call_model(state, loop.CallModel(step.request))
        if reply is None:  # failed (the run ends), or to be made again once compacted
            if state.status.is_final:
                raise _Stop
            return None
        if isinstance(step, loop.Summarize):
            return reducer.Compacted(step.compaction, summary=reply)
        return reducer.Replied(reply)
    if isinstance(step, loop.Compact):
        return reducer.Compacted(step.compaction)
    if isinstance(step, loop.RunTools):
        return reducer.ToolsRan(tuple(await io.run_tools(state, step.calls)))
    if isinstance(step, loop.ListTools):
        asked = state.tools_refresh  # a request made while they are listed stays open
        return reducer.ToolsListed(await io.list_tools(state, step), step.reason, asked)
    if isinstance(step, loop.Redefine):
        return await io.redefine(state, step)
    if isinstance(step, loop.AskBudget):
        return reducer.BudgetAsked(step.request)
    if isinstance(step, loop.CheckGuardrails):
        verdicts = tuple(await io.check_guardrails(state, step))
        return reducer.GuardrailsChecked(step.kind, verdicts, item=step.item)
    if isinstance(step, loop.AwaitInput):
        waited = await io.await_input(state)
    elif isinstance(step, loop.AwaitChildren):
        waited = await io.await_children(state)
    elif isinstance(step, loop.AwaitResume):
        waited = await io.await_resume(state)
    elif isinstance(step, loop.AwaitDecisions):
        waited = await io.await_decisions(state, step)
    else:  # Finish: ended by the driver, never performed
        raise AssertionError(f"{step} is not performed")
    if not waited:
        raise _Stop
    return None
