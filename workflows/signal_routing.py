"""Where each of AgentWorkflow's signals goes, by name: the event stream's publications
(`workflows.event_stream`), the parent/child protocol's (`workflows.run_tree`), the rest
to the inbox (`workflows.inbox`); a pause or resume the run took is passed down to the
runs it waits on."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from temporalio import workflow
from temporalio.common import RawValue

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract, inbox, raw_payloads, visibility
    from durable_agents.workflows.event_stream import RunStream
    from durable_agents.workflows.run_tree import RunTree
    from durable_agents.workflows.state import RunState


async def route(
    name: str,
    args: Sequence[RawValue],
    *,
    state: RunState | None,
    to: inbox.Inbox,
    tree: RunTree,
    stream: RunStream,
    publish: Callable[[RunState], None],
) -> None:
    """Take signal `name` with `args`, whatever they are: nothing here raises (what the
    run cannot use is recorded as refused)."""
    raw = args[0] if args else raw_payloads.NONE
    if name == contract.STREAM_PUBLISH_SIGNAL and state is not None:
        why = stream.take_published(args, state, now=workflow.now())
        if why is not None:  # as the inbox
            to.refuse_signal(name, raw, why)
        return
    if state is not None and await tree.take_signal(state, name, args):
        return
    paused = state is not None and state.paused is not None
    to.receive(name, args)
    if state is None:
        return
    pausing = name in (contract.SIGNAL_PAUSE, contract.SIGNAL_RESUME)
    if pausing and (state.paused is not None) != paused:
        # taken by this run (a pause or resume it refused is not passed on)
        await tree.pass_pause_down(name, inbox.pause_payload(name, raw))
    if name == contract.SIGNAL_WEBHOOK_DELIVERY:
        publish(state)  # the UI's details say how deliveries go
    elif name in inbox.DECISION_SIGNALS:
        # a signal gets no answer: the UI's details say why one was refused (the
        # details only, no command: the search attributes follow with the loop)
        visibility.show_details(state)
