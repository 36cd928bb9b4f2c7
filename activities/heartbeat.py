"""Heartbeats while an activity works, sent for it.

With a heartbeat timeout, Temporal notices an attempt whose worker died within
that timeout (not at its start-to-close timeout, minutes later) and retries it
on another worker; and a cancel of the run reaches the attempt only through a
heartbeat's answer. So model and tool activities heartbeat on their own, from a
task beside the work, with whatever progress the work last reported.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from temporalio import activity

BEATS_PER_TIMEOUT = 3
"""Heartbeats sent per heartbeat timeout: a beat or two may be late without the
attempt being taken for dead."""


class Progress:
    """The details the next heartbeat carries (set from any thread)."""

    def __init__(self) -> None:
        self.details: tuple[Any, ...] = ()


@contextlib.asynccontextmanager
async def heartbeating(progress: Progress | None = None) -> AsyncIterator[None]:
    """Heartbeat while the body runs, if the attempt has a heartbeat timeout."""
    timeout = activity.info().heartbeat_timeout if activity.in_activity() else None
    if not timeout:
        yield
        return

    def beat() -> None:
        activity.heartbeat(*(progress.details if progress is not None else ()))

    async with periodically(timeout.total_seconds() / BEATS_PER_TIMEOUT, beat):
        yield


@contextlib.asynccontextmanager
async def periodically(seconds: float, action: Callable[[], object]) -> AsyncIterator[None]:
    """Call `action` at once, then every `seconds`, from a task beside the body."""

    async def repeat() -> None:
        while True:
            action()
            await asyncio.sleep(seconds)

    task = asyncio.create_task(repeat())
    try:
        yield
    finally:
        task.cancel()
        # Not `suppress(CancelledError)`: a cancel of the body arriving meanwhile
        # must still propagate; the task's own cancellation is a result here.
        await asyncio.gather(task, return_exceptions=True)
