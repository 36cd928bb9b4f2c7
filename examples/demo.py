"""The demo behind `make demo`: dev server + worker + a run that waits for approval.

It starts `python worker.py --dev` (Temporal dev server with its UI, and a
worker for the example support agent), then drives the run with the same
`agentctl` commands a person would type, printing each one.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AGENTCTL = Path(sys.executable).parent / "agentctl"


def as_typed(path: Path | str) -> str:
    """`path` as a person types it in the repository's folder (where `make demo` runs):
    `.venv/bin/agentctl`, not a bare `agentctl` that is on no PATH."""
    path = Path(path).absolute()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


SHOWN_AGENTCTL = as_typed(AGENTCTL)
QUESTION = "My order A12 arrived damaged. Can I get my money back?"


def main(argv: list[str] | None = None) -> int:
    return serve_and_run(
        argv,
        description=__doc__.splitlines()[0],
        agents="examples.support_agent",
        run=run_demo,
    )


def serve_and_run(
    argv: list[str] | None,
    *,
    description: str,
    agents: str,
    run: Callable[..., None],
    env: Mapping[str, str] | None = None,
) -> int:
    """A demo: `python worker.py --dev` serving the agents of module `agents` (a scripted,
    offline model without OPENAI_API_KEY), then `run(address=, ui_port=)` driving it;
    `env`: more of the worker's environment (shown on its command line)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, default=7233)
    parser.add_argument("--ui-port", type=int, default=8233)
    parser.add_argument("--dev-db", default=str(ROOT / ".temporal" / "dev.db"))
    parser.add_argument("--exit", action="store_true", help="stop the worker at the end")
    args = parser.parse_args(argv)

    worker_cmd = [
        sys.executable,
        str(ROOT / "worker.py"),
        "--dev",
        "--port",
        str(args.port),
        "--ui-port",
        str(args.ui_port),
        "--dev-db",
        args.dev_db,
        "--agents",
        agents,
    ]
    if not os.environ.get("OPENAI_API_KEY"):
        worker_cmd += ["--scripted-model", f"{agents}:scripted_model"]
        print(
            "demo: OPENAI_API_KEY is not set, so the model is a scripted, offline "
            "OpenAI-compatible endpoint (set OPENAI_API_KEY to use a real model)."
        )
    shown_env = "".join(f"{k}={v} " for k, v in (env or {}).items())
    shown = [as_typed(sys.executable), as_typed(worker_cmd[1]), *worker_cmd[2:]]
    print("$ " + shown_env + " ".join(_quote(a) for a in shown))
    worker = subprocess.Popen(
        worker_cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    try:
        _wait_for_line(worker, "worker: serving", timeout=90)
        run(address=f"localhost:{args.port}", ui_port=args.ui_port)
        if not args.exit and sys.stdin.isatty():
            print("\nThe worker and the Temporal UI keep running. Ctrl-C to stop.")
            worker.wait()
    except KeyboardInterrupt:
        pass
    except DemoError as err:
        print(f"demo: error: {err}", file=sys.stderr)
        return 1
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=60)
    return 0


class DemoError(Exception):
    """A demo step did not do what it should."""


def run_demo(*, address: str, ui_port: int) -> None:
    """Start a run, show it waiting, approve it with agentctl, show the result."""
    run_id = f"support-demo-{uuid.uuid4().hex[:6]}"
    ctl = ["--address", address]
    agentctl(*ctl, "start", "support", QUESTION, "--id", run_id)
    status = _wait_for_status(ctl, run_id, "awaiting_approval")
    print(
        f"\nThe run waits for a person's decision (turn {status['turn']}). "
        f"See it in the UI: http://localhost:{ui_port}/namespaces/default/workflows/{run_id}"
    )
    agentctl(*ctl, "status", run_id)
    agentctl(*ctl, "pending", run_id)
    pending = json.loads(agentctl(*ctl, "pending", run_id, "--json", show=False))
    if len(pending) != 1 or pending[0]["tool"] != "issue_refund":
        raise DemoError(f"expected one pending issue_refund call, got {pending}")
    print("\nApproving it, as a person would (or any service: see README for the temporal CLI):")
    agentctl(
        *ctl,
        "approve",
        run_id,
        pending[0]["call_id"],
        "--as",
        "demo-operator",
        "--reason",
        "damaged on delivery",
    )
    agentctl(*ctl, "result", run_id)
    result = json.loads(agentctl(*ctl, "result", run_id, "--json", show=False))
    if result["status"] != "completed":
        raise DemoError(f"the run ended as {result['status']}")
    print(f"\nDone. Its whole conversation: {SHOWN_AGENTCTL} {' '.join(ctl)} state {run_id}")


def agentctl(*args: str, show: bool = True) -> str:
    """Run agentctl, echoing the command and its output; fail on a non-zero exit."""
    if show:
        print(f"\n$ {SHOWN_AGENTCTL} " + " ".join(_quote(a) for a in args if a))
    done = subprocess.run([str(AGENTCTL), *args], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise DemoError(
            f"agentctl {args[2] if len(args) > 2 else ''} failed: {done.stderr.strip()}"
        )
    if show:
        print(done.stdout.rstrip())
    return done.stdout


def _wait_for_status(ctl: list[str], run_id: str, wanted: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = json.loads(agentctl(*ctl, "status", run_id, "--json", show=False))
        if status["status"] == wanted:
            return status
        if status["status"] not in ("running", wanted):
            raise DemoError(f"run {run_id} is {status['status']}, expected {wanted}")
        time.sleep(0.2)
    raise DemoError(f"run {run_id} did not reach {wanted} within {timeout:.0f}s")


def _wait_for_line(process: subprocess.Popen, marker: str, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    for line in process.stdout:
        print(line.rstrip())
        if marker in line:
            # Keep draining the worker's output so it never blocks on a full pipe.
            threading.Thread(target=_echo, args=(process.stdout,), daemon=True).start()
            return
        if time.monotonic() > deadline:
            break
    raise DemoError(f"the worker did not start (exit code {process.poll()}); see its output above")


def _echo(stream) -> None:
    for line in stream:
        print(f"  [worker] {line.rstrip()}")


def _quote(arg: str) -> str:
    """`arg` as a shell takes it back (the demo's lines are meant to be pasted)."""
    return shlex.quote(arg)


if __name__ == "__main__":
    raise SystemExit(main())
