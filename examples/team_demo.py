"""The multi-agent demo behind `make demo-team`: triage asks a researcher (a run of its
own) and hands the customer over to billing, whose refund waits for a person.

It starts `python worker.py --dev` with the agents of `examples/team_agent.py`, then
drives a run with the `agentctl` commands a person would type: the run waiting on
billing's refund, its tree (the researcher's run under it), the approval, the result.
"""

from __future__ import annotations

import json
import uuid

from examples.demo import SHOWN_AGENTCTL, DemoError, _wait_for_status, agentctl, serve_and_run

QUESTION = "My order A12 arrived damaged. Can I get my money back?"


def main(argv: list[str] | None = None) -> int:
    return serve_and_run(
        argv,
        description=__doc__.splitlines()[0],
        agents="examples.team_agent",
        run=run_demo,
    )


def run_demo(*, address: str, ui_port: int) -> None:
    """A run through three agents, approved once."""
    run_id = f"triage-demo-{uuid.uuid4().hex[:6]}"
    ctl = ["--address", address]
    agentctl(*ctl, "start", "triage", QUESTION, "--id", run_id)
    _wait_for_status(ctl, run_id, "awaiting_approval")
    print(
        "\nTriage asked the researcher (a run of its own, below it) and handed the customer "
        f"over to billing, whose refund waits for a person. In the UI: "
        f"http://localhost:{ui_port}/namespaces/default/workflows/{run_id}"
    )
    agentctl(*ctl, "status", run_id)
    agentctl(*ctl, "tree", run_id)
    pending = json.loads(agentctl(*ctl, "pending", run_id, "--json", show=False))
    if len(pending) != 1 or pending[0]["tool"] != "issue_refund":
        raise DemoError(f"expected one pending issue_refund call, got {pending}")
    agentctl(*ctl, "pending", run_id)
    agentctl(*ctl, "approve", run_id, pending[0]["call_id"], "--as", "demo-operator")
    agentctl(*ctl, "result", run_id)
    result = json.loads(agentctl(*ctl, "result", run_id, "--json", show=False))
    if result["status"] != "completed":
        raise DemoError(f"the run ended as {result['status']}")
    print(f"\nDone. Every step, handoff included: {SHOWN_AGENTCTL} {' '.join(ctl)} state {run_id}")


if __name__ == "__main__":
    raise SystemExit(main())
