"""What the approval gate costs: `python -m bench.approval_gate [--flood]`.

Times, in process (the code the workflow runs, without Temporal around it):
- checking one signed decision (`decisions.check`: digest of the
  call's arguments, binding, Ed25519 verification against the run's keys);
- the same decision unsigned (digest and binding only);
Prints the median of several rounds, in microseconds per decision.

`--flood` also sends a waiting run, through a real dev server and a `worker.py`
process, 24 `reject` signals whose `reason` is 1.9 MB (the issue's flood; 24 keeps
the history under the dev server's 50 MB limit, which refuses more signals), and
prints the worker's RSS and the run's state size before and after.
"""

from __future__ import annotations

import json
import statistics
import time
from datetime import UTC, datetime

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import decisions, loop
from durable_agents.workflows.agent_spec import AgentSpec, ApprovalPolicy, ToolSpec
from durable_agents.workflows.payloads import AgentInput, DecideInput, ModelReply, ModelToolCall
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import RunState

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


def per_decision(request: DecideInput, *, rounds: int = 7, n: int = 2000) -> float:
    state = waiting_state()
    if request.signature is None:
        state.agent.tools[0].approval.require_signature = False
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(n):
            decisions.check(state, request, now=NOW)
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
    print("decision check, median µs per decision (7 rounds of 2,000)")
    print(f"  signed (Ed25519 verify + binding): {per_decision(signed):8.1f}")
    print(f"  bound, unsigned:                   {per_decision(unsigned):8.1f}")


async def flood(signals: int = 24, reason_bytes: int = 1_900_000) -> None:
    from durable_agents.workflows import contract

    from bench import common
    from bench.worker_process import worker_process
    from durable_agents.testing import Call, Reply

    def respond(request: dict) -> Reply:
        asked = any(m["role"] == "assistant" for m in request["messages"])
        return Reply(content="done") if asked else Reply(tool_calls=(Call("stamp", {}, "s1"),))

    async with common.dev_server(common.converter()) as env:
        target = env.client.service_client.config.target_host
        with common.scripted_model(respond) as model:
            queue = common.task_queue("flood")
            with worker_process(target, str(model.base_url), queue) as worker:
                handle = await common.start_run(env.client, "approval", queue)
                while (await handle.query(contract.QUERY_GET_STATUS))["status"] != (
                    "awaiting_approval"
                ):
                    await asyncio.sleep(0.1)

                async def state_bytes() -> int:
                    state = await read_state(querying(handle))
                    return len(state.model_dump_json())

                before = (common.rss_mb(worker.pid), await state_bytes())
                reason = "r" * reason_bytes
                for n in range(signals):
                    payload = {"call_id": f"x{n}", "approver": "m", "reason": reason}
                    await handle.signal(contract.SIGNAL_REJECT, payload)
                after = (common.rss_mb(worker.pid), await state_bytes())
                peak = common.rss_mb(worker.pid, "VmHWM")
                await handle.terminate("bench over")
    print(f"flood: {signals} reject signals, reason {reason_bytes:,} bytes each")
    print(f"  worker RSS before {before[0]:.0f} MB, after {after[0]:.0f} MB, peak {peak:.0f} MB")
    print(f"  run state before {before[1]:,} bytes, after {after[1]:,} bytes")


if __name__ == "__main__":
    import asyncio
    import sys

    main()
    if "--flood" in sys.argv[1:]:
        asyncio.run(flood())
