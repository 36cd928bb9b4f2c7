"""How the embedded dev server is started by `worker.py --dev`, the test suite and
the bench: the server's own defaults but one.

The dev server runs one history shard, and a shard reads its transfer queue (where
a workflow task waits to be handed to a worker) at most
`history.transferProcessorMaxPollRPS` times a second, 20 by default. Every workflow
task that follows an activity then waits up to 50 ms for the next read: on the
2-core reference machine a 10-turn run of two plain activities a turn took 105 ms a
turn on the server's defaults and 35-47 ms at 200 reads a second (bench/RESULTS.md, ANALYSIS.md).
Every Temporal server reads each of its shards at most that often (a shard holds
many runs); beside model calls of a second or more the wait is small.
"""

from __future__ import annotations

DEV_SERVER_CONFIG: dict[str, int] = {"history.transferProcessorMaxPollRPS": 200}
"""Dynamic config set on the dev server, by key."""


def dev_server_args() -> list[str]:
    """`temporal server start-dev` arguments setting DEV_SERVER_CONFIG."""
    return [
        arg
        for key, value in DEV_SERVER_CONFIG.items()
        for arg in ("--dynamic-config-value", f"{key}={value}")
    ]
