"""Revoking an approver key reaches the `always` rules it signed: a call a signed rule
approves carries the rule's key to the tool's worker, which checks it against the keys
it trusts now, as it checks a call signed itself. Driven from outside: the decision and
the messages are sent with the `temporal` CLI, the key is revoked by restarting the
workers without it."""

from __future__ import annotations

import asyncio
import json
import uuid

from durable_agents.workflows import contract
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import RunStatus

from durable_agents import Agent, ApprovalPolicy, ToolContext, tool
from durable_agents.signing import Trust
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.approver_keys import ALICE, BOB, WORKER_TRUST
from tests.support.runs import (
    start,
    state_of,
    temporal_cli,
    wait_for_status,
    workflow_task_failures,
)

GRANTED: list[str] = []
"""The call ids of every `grant` that ran in this process."""
ACCESS = {"user": "bob", "days": 1}


@tool(needs_approval=ApprovalPolicy(require_signature=True, approvers=["alice"]))
def grant(user: str, days: int, ctx: ToolContext) -> str:
    """Grant a user access for some days; alice's signed decision (or her rule) only."""
    GRANTED.append(ctx.call_id)
    return f"granted {user} {days} days"


granter = Agent(name="granter", instructions="Grant access.", model="gpt-4o-mini", tools=[grant])


async def cli_signal(worker, run_id: str, name: str, payload: object) -> None:
    await temporal_cli(
        worker, "workflow", "signal", "--workflow-id", run_id, "--name", name,
        "--input", json.dumps(payload),
    )  # fmt: skip


async def until(check, what: str) -> None:
    for _ in range(600):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"never: {what}")


async def test_revoking_the_key_of_a_signed_always_rule_asks_its_next_call_again(env, model_server):
    """alice signs `always` on g1; the rule approves g2 and g3, which run. Her key is
    revoked (the workers restart without it); the next call the rule covers (g4) does
    not run: the rule's approval is taken back, the rule decides no more, her key
    approves nothing more in the run, and g4 waits for a decision again, saying why."""
    GRANTED.clear()
    model_server.script(
        Reply(tool_calls=(Call("grant", ACCESS, "g1"),)),
        Reply(content="granted once"),
        Reply(tool_calls=(Call("grant", ACCESS, "g2"), Call("grant", ACCESS, "g3"))),
        Reply(content="granted twice more"),
        Reply(tool_calls=(Call("grant", ACCESS, "g4"),)),
        Reply(content="never reached"),
    )
    queue = f"rules-{uuid.uuid4().hex[:8]}"
    async with serving(
        env.client, model_server, task_queue=queue, extra_agents=[granter]
    ) as before:
        handle = await start(before, "grant bob", agent="granter", session=True)
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        [item] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
        decision = ALICE.sign(
            {
                "call_id": "g1",
                "decision": "approve",
                "approver": "alice",
                "always": True,
                "run_id": handle.id,
                "execution_id": item["execution_id"],
                "arguments_sha256": arguments_sha256(ACCESS),
                "expires_at": "2099-01-01T00:00:00Z",
            }
        )
        await cli_signal(before, handle.id, contract.SIGNAL_APPROVE, decision)
        await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        await cli_signal(before, handle.id, contract.SIGNAL_SEND_MESSAGE, {"content": "more"})

        async def two_more_ran() -> bool:
            return GRANTED == ["g1", "g2", "g3"]

        await until(two_more_ran, "g2 and g3 ran under the rule")
        await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        by_rule = [
            i for i in (await state_of(handle)).items if isinstance(i, Decision) and i.via == "rule"
        ]
        assert [(d.call_id, d.signed_by) for d in by_rule] == [
            ("g2", ALICE.key_id),
            ("g3", ALICE.key_id),
        ]
    without_alice = Trust(approver_keys=[BOB.public()], snapshot_keys=WORKER_TRUST.snapshot_keys)
    async with serving(
        env.client, model_server, task_queue=queue, trust=without_alice, extra_agents=[granter]
    ) as after:
        await cli_signal(after, handle.id, contract.SIGNAL_SEND_MESSAGE, {"content": "again"})

        async def asked_again() -> bool:
            state = await state_of(handle)
            return any(r.via == "revoked" and r.call_id == "g4" for r in state.refused_decisions)

        await until(asked_again, "g4 asked again")
        await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
        [item] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
        state = await state_of(handle)
    assert GRANTED == ["g1", "g2", "g3"]  # g4 never ran
    assert item["call_id"] == "g4"
    assert "`always` rule" in item["reopened_because"]
    assert "no longer trusts" in item["reopened_because"]
    assert "g1" in state.revoked_rules  # the rule decides no further calls
    assert ALICE.key_id not in {k.key_id for k in state.agent.approver_keys}
    assert not any(isinstance(i, Decision) and i.call_id == "g4" for i in state.items)
    # what ran stays recorded as it was
    kept = {i.call_id for i in state.items if isinstance(i, Decision)}
    assert kept == {"g1", "g2", "g3"}
    assert await workflow_task_failures(handle) == 0
    await handle.terminate("test over")
