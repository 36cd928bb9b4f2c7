"""Floods: a thousand signals at one run; two hundred runs approved at once; two
hundred runs waiting out a model outage on one endpoint."""

from __future__ import annotations

import asyncio
import time

import pytest
from durable_agents.client.state_reader import querying, read_state
from durable_agents.workflows import contract
from durable_agents.workflows.audit import REFUSALS_KEPT
from durable_agents.workflows.payloads import DecisionSignal
from durable_agents.workflows.state import RunStatus

from durable_agents.testing import Fault
from tests.chaos import ledger
from tests.chaos.conftest import plan, responder
from tests.chaos.harness import wait_until
from tests.chaos.runs import start, status

pytestmark = pytest.mark.chaos_slow


async def _awaiting(handles) -> bool:
    views = await asyncio.gather(*(status(h) for h in handles))
    return all(v is not None and v.status is RunStatus.AWAITING_APPROVAL for v in views)


async def test_a_thousand_signals_at_one_run(client, workers, ledger_path, report):
    await workers.start("a")
    handle = await start(
        client, workers.task_queue, plan("approved_charge", {"amount": 1, "seconds": 0})
    )
    await wait_until(lambda: _awaiting([handle]), 30, "the approval")
    began = time.monotonic()
    for batch in range(10):
        await asyncio.gather(
            *(
                handle.signal(
                    contract.SIGNAL_APPROVE, DecisionSignal(call_id=f"x{batch}-{n}", approver="m")
                )
                for n in range(100)
            )
        )
    sent = time.monotonic() - began
    state = await read_state(querying(handle))
    assert len(state.refused_decisions) == REFUSALS_KEPT
    assert state.refused_decisions_dropped == 1000 - REFUSALS_KEPT
    size = len(state.model_dump_json())
    [pending] = await handle.query(contract.QUERY_GET_PENDING_APPROVALS)
    await handle.signal(
        contract.SIGNAL_APPROVE, DecisionSignal(call_id=pending["call_id"], approver="ann")
    )
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert len(ledger.effects(ledger_path, handle.id)) == 1
    report.add(
        "1,000 refused decision signals at one run",
        "state bounded, run then approved and completed",
        f"sent in {sent:.1f} s; state {size / 1000:.1f} KB "
        f"({REFUSALS_KEPT} refusals kept, {state.refused_decisions_dropped} counted)",
    )


async def test_two_hundred_runs_approved_at_once(client, workers, ledger_path, report):
    await workers.start("a")
    await workers.start("b")
    text = plan("approved_charge", {"amount": 2, "seconds": 0})
    handles = await asyncio.gather(*(start(client, workers.task_queue, text) for _ in range(200)))
    await wait_until(lambda: _awaiting(handles), 120, "200 approvals", interval=1)
    pendings = await asyncio.gather(
        *(h.query(contract.QUERY_GET_PENDING_APPROVALS) for h in handles)
    )
    began = time.monotonic()
    await asyncio.gather(
        *(
            h.signal(
                contract.SIGNAL_APPROVE, DecisionSignal(call_id=p[0]["call_id"], approver="ann")
            )
            for h, p in zip(handles, pendings, strict=True)
        )
    )
    results = await asyncio.gather(*(h.result() for h in handles))
    drained = time.monotonic() - began
    assert all(r.status is RunStatus.COMPLETED for r in results)
    effects = ledger.effects(ledger_path)
    assert len(effects) == 200 and len({e[0] for e in effects}) == 200  # each exactly once
    report.add(
        "200 runs, each approved at once (2 workers)",
        "all completed, each side effect exactly once",
        f"approvals sent to all 200 completed in {drained:.1f} s",
    )


async def test_two_hundred_runs_wait_out_a_model_outage(client, workers, endpoint, report):
    limit = 8
    await workers.start("a", "--max-model-calls", str(limit))
    await workers.start("b", "--max-model-calls", str(limit))
    endpoint.responder = lambda body: Fault(503, "provider outage")
    text = plan("charge", {"amount": 3, "seconds": 0}, model_delay=0.5)  # answers take 0.5 s
    handles = await asyncio.gather(*(start(client, workers.task_queue, text) for _ in range(200)))
    await asyncio.sleep(20)
    failed_requests = len(endpoint.requests)
    endpoint.max_in_flight = 0
    endpoint.responder = responder
    back = time.monotonic()
    results = await asyncio.gather(*(h.result() for h in handles))
    drained = time.monotonic() - back
    assert all(r.status is RunStatus.COMPLETED for r in results)
    assert endpoint.max_in_flight <= 2 * limit  # each worker keeps to its limit
    assert endpoint.max_in_flight > limit  # and the limit, not the load, bounded it
    report.add(
        "200 runs, model endpoint down for 20 s then back (2 workers, --max-model-calls 8)",
        f"all completed; at most {endpoint.max_in_flight} requests in flight (limit 16)",
        f"{failed_requests} refused requests during the outage (jittered backoff, cap 2 s); "
        f"all 200 completed {drained:.1f} s after the endpoint came back",
    )
