"""`AgentStoreGC`: one collection of the payload store, as a workflow, so that a
Temporal Schedule can run it (`agentctl store gc --schedule`): the operator sees each
collection, its report as the result, in the Temporal UI, and its failures there.

The work is the `collect_store_garbage` activity on a worker (the store is the
worker's own, the one its converter writes to: a worker whose store differs from
its peers' collects its own, which is safe, since only blobs no run refers to go;
give collections a task queue of their own to choose the worker); it is tried 3
times. Workflow code (deterministic).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract
    from durable_agents.workflows.payloads import StoreGCInput

COLLECTION_TIMEOUT = timedelta(hours=2)
"""One collection reads every history the namespace keeps: it may take a while."""
HEARTBEAT_TIMEOUT = timedelta(minutes=5)
"""The collecting worker heartbeats while it works: one that died is noticed in this
long, and its collection tried again elsewhere."""


@workflow.defn(name=contract.WORKFLOW_STORE_GC, sandboxed=False)  # as AgentWorkflow: see there
class StoreGCWorkflow:
    @workflow.run
    async def run(self, request: StoreGCInput) -> dict[str, Any]:
        report: dict[str, Any] = await workflow.execute_activity(
            contract.ACTIVITY_COLLECT_STORE_GARBAGE,
            request,
            result_type=dict,
            start_to_close_timeout=COLLECTION_TIMEOUT,
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=3),
            summary=f"collect the payload store{' (dry run)' if request.dry_run else ''}",
        )
        return report
