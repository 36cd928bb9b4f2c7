"""Steering a run while it works (issue 48), as the workflow performs it: a model call
or a batch of tool calls runs until it ends or an interrupt is asked
(`RunState.interrupt`), and is then cancelled as a cancel of the run cancels it (an
activity hears of it at its next heartbeat; one cancelled with
`WAIT_CANCELLATION_COMPLETED` is waited for, so nothing it does comes after the
interrupt is reported; a child run is cancelled and waited for). `workflows.interrupts`
holds the pure part.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows.state import RunState

T = TypeVar("T")


class Cut:
    """The work was stopped by an interrupt."""

    def __repr__(self) -> str:
        return "CUT"


CUT: Final = Cut()


async def unless_interrupted(
    state: RunState,
    work: Coroutine[Any, Any, T],
    *,
    cutting: Callable[[], None] | None = None,
) -> T | Cut:
    """`work`'s result, or CUT once an interrupt is asked before it ends (it is then
    cancelled and waited for; `cutting` is called just before). Nothing starts while an
    interrupt is pending. A cancel of the run cancels `work` too, as an await would."""
    if state.interrupt is not None:
        work.close()
        return CUT
    task = asyncio.create_task(work)
    try:
        await workflow.wait_condition(lambda: task.done() or state.interrupt is not None)
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    if not task.done():
        if cutting is not None:
            cutting()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        if task.cancelled():
            return CUT
    return task.result()  # it ended first (or would not stop): its result, or its error
