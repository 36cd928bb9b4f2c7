"""`python worker.py` with extra `Worker(...)` options, to measure a tuning without
editing worker.py: `python -m bench.tuned_worker [--max-cached-workflows N]
[--unsandboxed | --passthrough-workflows] -- WORKER.PY ARGS`."""

from __future__ import annotations

import argparse
import functools
import sys
from unittest import mock

from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

import worker

PASSTHROUGH_WORKFLOWS = SandboxedWorkflowRunner(
    restrictions=SandboxRestrictions.default.with_passthrough_modules("workflows")
)
"""The sandbox on, but the `workflows` package (AgentWorkflow's own module included)
imported once per process instead of once per workflow run."""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-cached-workflows", type=int)
    parser.add_argument("--unsandboxed", action="store_true")
    parser.add_argument("--passthrough-workflows", action="store_true")
    ours, rest = parser.parse_known_args()
    options: dict[str, object] = {}
    if ours.max_cached_workflows is not None:
        options["max_cached_workflows"] = ours.max_cached_workflows
    if ours.unsandboxed:
        options["workflow_runner"] = UnsandboxedWorkflowRunner()
    if ours.passthrough_workflows:
        options["workflow_runner"] = PASSTHROUGH_WORKFLOWS
    with mock.patch.object(worker, "Worker", functools.partial(Worker, **options)):
        return worker.main([a for a in rest if a != "--"])


if __name__ == "__main__":
    sys.exit(main())
