"""`python worker.py` with other `build_worker` options, to measure a tuning without
editing worker.py: `python -m bench.tuned_worker OPTION -- WORKER.PY ARGS`, where
OPTION names one of `OPTIONS`."""

from __future__ import annotations

import sys
from unittest import mock

from temporalio.worker import PollerBehaviorAutoscaling, PollerBehaviorSimpleMaximum

from bench import common
from durable_agents import worker

OPTIONS: dict[str, dict[str, object]] = {
    "cache-0": {"max_cached_workflows": 0},
    "cache-250": {"max_cached_workflows": 250},
    "cache-600": {"max_cached_workflows": 600},
    "pollers-20": {
        "workflow_task_poller_behavior": PollerBehaviorSimpleMaximum(20),
        "activity_task_poller_behavior": PollerBehaviorSimpleMaximum(20),
    },
    "workflow-pollers-10": {"workflow_task_poller_behavior": PollerBehaviorSimpleMaximum(10)},
    "workflow-pollers-20": {"workflow_task_poller_behavior": PollerBehaviorSimpleMaximum(20)},
    "activity-pollers-20": {"activity_task_poller_behavior": PollerBehaviorSimpleMaximum(20)},
    "pollers-autoscaling": {
        "workflow_task_poller_behavior": PollerBehaviorAutoscaling(),
        "activity_task_poller_behavior": PollerBehaviorAutoscaling(),
    },
    "sticky-ratio-1": {"nonsticky_to_sticky_poll_ratio": 1.0},
    "eager-off": {"disable_eager_activity_execution": True},
}
"""Options by name: `build_worker` keyword options or `Worker(...)` arguments (`common.tuned`)."""


def command(option: str) -> list[str]:
    """The command line of a worker process with `option` (a key of OPTIONS)."""
    return [sys.executable, "-m", "bench.tuned_worker", option, "--"]


def main() -> int:
    option, rest = sys.argv[1], [a for a in sys.argv[2:] if a != "--"]
    with mock.patch.object(worker, "build_worker", common.tuned(OPTIONS[option])):
        return worker.main(rest)


if __name__ == "__main__":
    sys.exit(main())
