"""What the approval gate costs inside a workflow task: `python -m bench.approval_gate`.

Times, in process (the code the workflow runs, without Temporal around it):
- checking one signed decision (`decisions.check` with `bound=True`: digest of the
  call's arguments, binding, Ed25519 verification against the run's keys);
- the same decision unsigned (digest and binding only);
- the check before the approval gate (`bound=False`), for contrast.
Prints the median of several rounds, in microseconds per decision.
"""

from __future__ import annotations

import json
import statistics
import time
from datetime import UTC, datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from durable_agents.workflows import decisions, loop
from durable_agents.workflows.payloads import AgentInput, DecideInput, ModelReply, ModelToolCall
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import AgentSpec, ApprovalPolicy, RunState, ToolSpec

from durable_agents.signing import SigningKey

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY = SigningKey("bench", "alice", Ed25519PrivateKey.from_private_bytes(bytes(32)))
ARGUMENTS = {"order": "A12", "amount": 150.5, "note": "x" * 200, "items": list(range(20))}


def waiting_state() -> RunState:
    spec = AgentSpec(
        name="bench",
        instructions="",
        model="m",
        tools=[
            ToolSpec(
                name="pay",
                description="",
                parameters={"type": "object"},
                needs_approval=True,
                approval=ApprovalPolicy(require_signature=True),
            )
        ],
        approver_keys=[KEY.public()],
    )
    state = loop.new_state(spec, AgentInput(agent="bench", input="go"), run_id="r", now=NOW)
    call = ModelToolCall(call_id="c1", tool="pay", arguments=json.dumps(ARGUMENTS))
    loop.record_model_reply(state, ModelReply(tool_calls=[call]), now=NOW)
    return state


def per_decision(request: DecideInput, *, bound: bool, rounds: int = 7, n: int = 2000) -> float:
    state = waiting_state()
    if request.signature is None:
        state.agent.tools[0].approval.require_signature = False
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(n):
            decisions.check(state, request, now=NOW, bound=bound)
        samples.append((time.perf_counter() - started) / n * 1e6)
    return statistics.median(samples)


def main() -> None:
    base = {"call_id": "c1", "decision": "approve", "approver": "alice"}
    binding = {
        "run_id": "r",
        "arguments_sha256": arguments_sha256(ARGUMENTS),
        "expires_at": "2099-01-01T00:00:00Z",
    }
    signed = DecideInput.model_validate(KEY.sign({**base, **binding}))
    unsigned = DecideInput.model_validate({**base, **binding})
    plain = DecideInput.model_validate(base)
    print("decision check, median µs per decision (7 rounds of 2,000)")
    print(f"  signed (Ed25519 verify + binding): {per_decision(signed, bound=True):8.1f}")
    print(f"  bound, unsigned:                   {per_decision(unsigned, bound=True):8.1f}")
    print(f"  before the gate (bound=False):     {per_decision(plain, bound=False):8.1f}")


if __name__ == "__main__":
    main()
