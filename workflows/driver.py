"""The one driver of the pure loop: asks `workflows.loop` for the next step and has an
`LoopIO` perform it, until the run ends or the I/O says to stop.

`AgentWorkflow` drives a run with Temporal I/O (activities, durable waits,
continue-as-new); `client.local_run` with in-process I/O (one attempt per call, a
callback for decisions). Both go through this loop, so the order of steps is the
same by construction. Pure: no `temporalio` import; all I/O, time included, is
injected.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from durable_agents.workflows import budget, context, guardrails, interrupts, loop
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
        """The model's reply; None: the run has failed (recorded) and the loop stops."""
        ...

    def record_reply(self, state: RunState, reply: ModelReply) -> None:
        """Fold the reply into the state (`loop.record_model_reply`)."""
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

    async def list_tools(self, state: RunState, step: loop.ListTools) -> None:
        """List the run's MCP tools again and record it (`mcp_tools.record_listing`)."""
        ...

    async def redefine(self, state: RunState, step: loop.Redefine) -> None:
        """Ask for the agent's definition and take it if it changed
        (`workflows.definitions.take`)."""
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
        loop.deliver_messages(state, now=io.stamp())
        step = loop.next_step(state)
        state.status = loop.status_for(step)
        io.step_chosen(state, step)
        if isinstance(step, loop.Finish):
            loop.finish(state, step.status, now=io.stamp())
            io.finished(state)
            return
        await io.before_step(state, step)
        if isinstance(step, loop.CallModel):
            reply = await io.call_model(state, step)
            if reply is None:  # failed (the run ends), or to be made again once compacted
                if state.status.is_final:
                    return
                continue
            io.record_reply(state, reply)
        elif isinstance(step, loop.Compact):
            context.record(state, step.compaction, now=io.stamp())
        elif isinstance(step, loop.Summarize):
            summary = await io.call_model(state, loop.CallModel(step.request))
            if summary is None:
                if state.status.is_final:
                    return
                continue
            context.record(state, step.compaction, now=io.stamp(), summary=summary)
        elif isinstance(step, loop.RunTools):
            outcomes = await io.run_tools(state, step.calls)
            loop.record_tool_outcomes(state, outcomes, now=io.stamp())
        elif isinstance(step, loop.AwaitInput):
            if not await io.await_input(state):
                return
        elif isinstance(step, loop.AwaitChildren):
            if not await io.await_children(state):
                return
        elif isinstance(step, loop.AwaitResume):
            if not await io.await_resume(state):
                return
        elif isinstance(step, loop.ListTools):
            await io.list_tools(state, step)
        elif isinstance(step, loop.Redefine):
            await io.redefine(state, step)
        elif isinstance(step, loop.AskBudget):
            budget.ask(state, step.request, now=io.stamp())
        elif isinstance(step, loop.CheckGuardrails):
            verdicts = await io.check_guardrails(state, step)
            guardrails.record(state, step.kind, verdicts, now=io.stamp(), item=step.item)
        elif not await io.await_decisions(state, step):
            return
