"""The moment a worker of this test process begins to stop, as a cause a test can wait
on: the Temporal SDK logs "Beginning worker shutdown" right before it tells the
worker's pollers to stop, in the same step of the event loop. Whatever a test lets go
on that cue (a held model reply, a held workflow task completion) reaches the worker
after its pollers were told to stop, however slow the machine: no delay to outlast."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

SDK_LOGGER = "temporalio.worker._worker"
"""The SDK module that logs the start of a worker's shutdown."""
BEGINNING = "Beginning worker shutdown"
"""How that line begins."""


class _ShutdownBegan(logging.Handler):
    def __init__(self, event: threading.Event) -> None:
        super().__init__(logging.INFO)
        self._event = event

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(BEGINNING):
            self._event.set()


@contextlib.contextmanager
def shutdown_began(event: threading.Event) -> Iterator[None]:
    """Within it, `event` is set when a worker of this process begins to stop (the
    first one to: a worker's helper workers stop after it)."""
    sdk = logging.getLogger(SDK_LOGGER)
    handler, level = _ShutdownBegan(event), sdk.level
    sdk.addHandler(handler)
    if not sdk.isEnabledFor(logging.INFO):
        sdk.setLevel(logging.INFO)
    try:
        yield
    finally:
        sdk.removeHandler(handler)
        sdk.setLevel(level)
