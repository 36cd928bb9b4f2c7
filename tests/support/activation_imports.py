"""Runs a bench.peers runner (`ACTIVATION_IMPORTS_RUNNER`, its own arguments after it) and
appends to `ACTIVATION_IMPORTS_OUT` every module imported on a thread that runs workflow
activations: the work the Temporal SDK's deadlock detector times (2 s per activation).
An import there is a one-time cost a loaded machine can stretch past 2 s (issue 42).

Standard library only: it runs with a peer's own Python (`.bench-venvs/NAME`)."""

from __future__ import annotations

import os
import runpy
import sys
import threading

ACTIVATION_THREADS = "temporal_workflow_"
"""The name prefix of the SDK's activation threads (its default workflow task executor)."""


def _record(out: str):
    def hook(event: str, args: tuple) -> None:
        if event == "import" and threading.current_thread().name.startswith(ACTIVATION_THREADS):
            with open(out, "a") as found:
                found.write(f"{args[0]}\n")

    return hook


if __name__ == "__main__":
    runner = os.environ["ACTIVATION_IMPORTS_RUNNER"]
    sys.addaudithook(_record(os.environ["ACTIVATION_IMPORTS_OUT"]))
    sys.path[0] = os.path.dirname(runner)  # as if the runner were run: not this folder
    sys.argv[0] = runner
    runpy.run_path(runner, run_name="__main__")
