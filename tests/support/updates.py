"""Updates a test sends, seen from the server: which ids a client sent, and a wait
until the server holds one (admitted), for a test that must place an update before a
worker polls the task that will carry it (no sleep a loaded machine could outlast)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import UpdateWorkflowExecutionLifecycleStage
from temporalio.api.update.v1 import UpdateRef, WaitPolicy
from temporalio.api.workflowservice.v1 import PollWorkflowExecutionUpdateRequest
from temporalio.client import (
    Client,
    Interceptor,
    OutboundInterceptor,
    StartWorkflowUpdateInput,
    WorkflowUpdateHandle,
)
from temporalio.service import RPCError, RPCStatusCode


class UpdateIds(Interceptor):
    """A client interceptor that records the id of every update sent through the
    client (giving one to an update sent without: what the SDK would do itself)."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Recording(next, self.sent)


class _Recording(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, sent: list[str]) -> None:
        super().__init__(next)
        self._sent = sent

    async def start_workflow_update(
        self, input: StartWorkflowUpdateInput
    ) -> WorkflowUpdateHandle[Any]:
        input.update_id = input.update_id or str(uuid.uuid4())
        self._sent.append(input.update_id)
        return await super().start_workflow_update(input)


def recording(client: Client) -> tuple[Client, UpdateIds]:
    """A client like `client` (same connection, namespace and converter) whose updates'
    ids are recorded."""
    ids = UpdateIds()
    config = client.config()
    recorded = Client(
        client.service_client,
        namespace=client.namespace,
        data_converter=client.data_converter,
        interceptors=[*config.get("interceptors", []), ids],
    )
    return recorded, ids


async def admitted(client: Client, workflow_id: str, ids: UpdateIds, timeout: float = 30) -> str:
    """Wait until the server holds the first update recorded in `ids` for the current
    run of `workflow_id` (admitted: it will come with that run's next workflow task);
    its id. The server answers NOT_FOUND for an update it does not hold yet."""
    async with asyncio.timeout(timeout):
        while not ids.sent:
            await asyncio.sleep(0.01)
        request = PollWorkflowExecutionUpdateRequest(
            namespace=client.namespace,
            update_ref=UpdateRef(
                workflow_execution=WorkflowExecution(workflow_id=workflow_id),
                update_id=ids.sent[0],
            ),
            identity=client.identity,
            wait_policy=WaitPolicy(
                lifecycle_stage=UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED
            ),
        )
        while True:
            try:
                await client.workflow_service.poll_workflow_execution_update(
                    request, timeout=timedelta(seconds=5)
                )
                return ids.sent[0]
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise
            await asyncio.sleep(0.02)
