"""Every malformed signal, update, query and start payload we could find, sent from
outside (the `temporal` CLI, a raw client): each is answered with a clear error or
recorded as refused, nothing is lost, and the run stays operable."""

from __future__ import annotations

import json
import uuid

import pytest
from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import contract
from durable_agents.workflows.state import RunStatus
from temporalio.client import (
    WorkflowFailureError,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError

from durable_agents.worker import temporal_binary
from tests.chaos.conftest import plan
from tests.chaos.harness import wait_until
from tests.chaos.runs import start, status, task_failures

SIGNALS = [
    # (what, signal name, CLI --input values; [] sends none)
    ("approve with two arguments", "approve", ['{"call_id": "X", "approver": "m"}', "2"]),
    ("approve with a null payload", "approve", ["null"]),
    ("approve with a string", "approve", ['"yes"']),
    ("approve with a wrong type", "approve", ['{"call_id": "X", "approver": "m", "always": "1"}']),
    ("approve with an unknown field", "approve", ['{"call_id": "X", "approver": "m", "x": 1}']),
    ("approve with no payload", "approve", []),
    ("reject without approver", "reject", ['{"call_id": "X"}']),
    ("approve for an unknown call", "approve", ['{"call_id": "nope", "approver": "m"}']),
    ("send_message with two arguments", "send_message", ['{"content": "a"}', '{"content": "b"}']),
    ("send_message with a wrong field", "send_message", ['{"text": "a"}']),
    ("end_session with a number reason", "end_session", ['{"reason": 7}']),
    ("a misspelled signal name", "aprove", ['{"call_id": "X", "approver": "m"}']),
]


async def cli(server, *args: str) -> tuple[int, str]:
    import asyncio

    process = await asyncio.create_subprocess_exec(
        temporal_binary(),
        *args,
        "--address",
        server.address,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode()


async def test_malformed_payloads_are_answered_and_the_run_stays_operable(
    client, server, workers, report
):
    await workers.start("a")
    handle = await start(
        client, workers.task_queue, plan("approved_charge", {"amount": 1, "seconds": 0})
    )
    await wait_until(lambda: _awaiting(handle), 30, "the run to wait for approval")
    pending = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    call_id = pending[0]["call_id"]
    answered: list[str] = []
    for what, name, inputs in SIGNALS:
        inputs = [i.replace('"X"', json.dumps(call_id)) for i in inputs]
        args = [a for i in inputs for a in ("--input", i)]
        code, out = await cli(server, "workflow", "signal", "-w", handle.id, "--name", name, *args)
        assert code == 0, out
        answered.append(what)
    state = await read_state(querying(handle))
    refusals = len(state.refused_decisions) + len(state.refused_signals)
    assert refusals == len(SIGNALS)  # each recorded, with its reason
    assert all(r.refused_because for r in [*state.refused_decisions, *state.refused_signals])

    updates = [
        (
            "decide with two arguments",
            [{"call_id": call_id, "decision": "approve", "approver": "m"}, 1],
        ),
        ("decide 'maybe'", [{"call_id": call_id, "decision": "maybe", "approver": "m"}]),
        ("decide an unknown call", [{"call_id": "nope", "decision": "approve", "approver": "m"}]),
        ("decide with a string", ["approve"]),
    ]
    for what, args in updates:
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(contract.UPDATE_DECIDE, args=args)
        answered.append(what)
    with pytest.raises(WorkflowQueryFailedError, match="get_stat"):
        await handle.query("get_stat")
    answered.append("an unknown query")

    view = await status(handle)
    assert view is not None and view.status is RunStatus.AWAITING_APPROVAL
    await handle.execute_update(
        contract.UPDATE_DECIDE, {"call_id": call_id, "decision": "approve", "approver": "ann"}
    )
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert await task_failures(handle) == 0

    starts = [
        ("start input that is a string", '"hi"', "invalid AgentWorkflow input"),
        ("start with an unknown agent", '{"agent": "nosuch", "input": "x"}', "unknown agent"),
        ("start with a number as input", '{"agent": "chaos", "input": 7}', "input"),
        ("start without input", '{"agent": "chaos"}', "input: Field required"),
        ("start with max_turns 0", '{"agent": "chaos", "input": "x", "max_turns": 0}', "max_turns"),
        (
            "start with a garbage snapshot",
            '{"agent": "chaos", "input": "", "resume_from": {"a": 1}}',
            "resume_from",
        ),
    ]
    for what, payload, reason in starts:
        run_id = f"bad-start-{uuid.uuid4().hex[:8]}"
        code, out = await cli(
            server,
            "workflow",
            "start",
            "--type",
            contract.WORKFLOW_TYPE,
            "--task-queue",
            workers.task_queue,
            "-w",
            run_id,
            "--input",
            payload,
        )
        assert code == 0, out
        with pytest.raises(WorkflowFailureError) as failed:
            outcome = await client.get_workflow_handle(run_id).result()
            pytest.fail(f"{what}: started, and ended {outcome}")
        assert reason in str(failed.value.cause), (what, failed.value.cause)
        answered.append(what)
    report.add(
        f"{len(answered)} kinds of malformed signal, update, query and start input",
        "each refused with its reason (signals recorded in the run); the run then completed",
        "; ".join(answered),
    )


async def _awaiting(handle) -> bool:
    view = await status(handle)
    return view is not None and view.status is RunStatus.AWAITING_APPROVAL


async def test_a_signal_for_a_run_that_does_not_exist_is_an_error(client):
    with pytest.raises(RPCError, match="not found"):
        await client.get_workflow_handle("no-such-run").signal("approve", {"call_id": "x"})
