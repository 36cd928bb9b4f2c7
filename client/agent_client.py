"""AgentClient: typed calls for starting, watching and deciding on agent runs.

Every name comes from `workflows.contract` and every payload is a pydantic model
from `workflows.payloads`, so what this client sends is exactly what a service
in another language would send.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal, TypeVar
from uuid import uuid4

from pydantic import JsonValue, ValidationError
from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.runtime import Runtime
from temporalio.service import RPCError

from client.connect import connect
from client.errors import (
    AgentClientError,
    DecisionRefused,
    failure_message,
    from_rpc_error,
    run_ended,
    run_failed,
)
from workflows import contract
from workflows.payloads import (
    AgentInput,
    AgentResult,
    DecideInput,
    DecisionSignal,
    PendingApproval,
    StatusView,
)
from workflows.state import Decision, RunState

_M = TypeVar("_M", AgentInput, DecideInput, DecisionSignal)

SUMMARY_INPUT_CHARS = 60
"""How much of the user's input goes into the run's summary in the Temporal UI."""


class AgentClient:
    """Start agent runs and talk to them: queries, approve/reject signals, `decide` update."""

    def __init__(self, client: Client, *, task_queue: str = contract.DEFAULT_TASK_QUEUE) -> None:
        self.client = client
        """The Temporal client (must use the pydantic data converter)."""
        self.task_queue = task_queue
        """Task queue new runs are started on."""

    @classmethod
    async def connect(
        cls,
        *,
        profile: str | None = None,
        address: str | None = None,
        namespace: str | None = None,
        task_queue: str = contract.DEFAULT_TASK_QUEUE,
        runtime: Runtime | None = None,
    ) -> AgentClient:
        """Connect (see `client.connect`) and wrap the new Temporal client."""
        temporal = await connect(
            profile=profile, address=address, namespace=namespace, runtime=runtime
        )
        return cls(temporal, task_queue=task_queue)

    # --- starting ----------------------------------------------------------------

    async def start(
        self,
        agent: str,
        input: str,
        *,
        context: JsonValue = None,
        max_turns: int | None = None,
        run_id: str | None = None,
    ) -> str:
        """Start a run of `agent` on `input`; returns its id (the workflow id)."""
        agent_input = _agent_input(agent, input, context=context, max_turns=max_turns)
        workflow_id = run_id or f"{agent}-{uuid4().hex[:12]}"
        with self._translating(workflow_id):
            await self.client.start_workflow(
                contract.WORKFLOW_TYPE,
                agent_input,
                id=workflow_id,
                task_queue=self.task_queue,
                static_summary=f"{agent}: {input[:SUMMARY_INPUT_CHARS]}",
            )
        return workflow_id

    # --- reading -------------------------------------------------------------------

    async def status(self, run_id: str) -> StatusView:
        """Status, agent, turn, pending approvals and usage of a run."""
        with self._translating(run_id):
            return await self._handle(run_id).query(
                contract.QUERY_GET_STATUS, result_type=StatusView
            )

    async def state(self, run_id: str) -> RunState:
        """The whole RunState of a run."""
        with self._translating(run_id):
            return await self._handle(run_id).query(contract.QUERY_GET_STATE, result_type=RunState)

    async def pending(self, run_id: str) -> list[PendingApproval]:
        """The tool calls of a run waiting for a decision."""
        with self._translating(run_id):
            return await self._handle(run_id).query(
                contract.QUERY_GET_PENDING_APPROVALS, result_type=list[PendingApproval]
            )

    async def export(self, run_id: str) -> str:
        """The RunState snapshot as JSON text (exactly what `get_state` returns)."""
        return (await self.state(run_id)).model_dump_json(indent=2)

    async def result(self, run_id: str) -> AgentResult:
        """Wait for the run to end; raises `RunFailed` if it failed or was cancelled."""
        with self._translating(run_id):
            try:
                handle = self.client.get_workflow_handle(run_id, result_type=AgentResult)
                return await handle.result()
            except WorkflowFailureError as err:
                raise run_failed(run_id, err.cause) from err

    # --- deciding ------------------------------------------------------------------

    async def approve(
        self,
        run_id: str,
        call_id: str,
        *,
        approver: str,
        reason: str | None = None,
        always: bool = False,
    ) -> None:
        """Send the `approve` signal (fire-and-forget; use `decide` to get an answer)."""
        await self._signal(run_id, contract.SIGNAL_APPROVE, call_id, approver, reason, always)

    async def reject(
        self,
        run_id: str,
        call_id: str,
        *,
        approver: str,
        reason: str | None = None,
        always: bool = False,
    ) -> None:
        """Send the `reject` signal; the model gets the reason as the call's result."""
        await self._signal(run_id, contract.SIGNAL_REJECT, call_id, approver, reason, always)

    async def decide(
        self,
        run_id: str,
        call_id: str,
        decision: Literal["approve", "reject"],
        *,
        approver: str,
        reason: str | None = None,
        always: bool = False,
    ) -> Decision:
        """Approve or reject through the `decide` update; returns the recorded decision.

        Raises `DecisionRefused` when the workflow refuses it (unknown or already
        decided call, run ended).
        """
        payload = _checked(
            DecideInput,
            call_id=call_id,
            decision=decision,
            approver=approver,
            reason=reason,
            always=always,
        )
        with self._translating(run_id):
            try:
                return await self._handle(run_id).execute_update(
                    contract.UPDATE_DECIDE, payload, result_type=Decision
                )
            except WorkflowUpdateFailedError as err:
                raise DecisionRefused(run_id, call_id, failure_message(err.cause)) from err
            except RPCError as err:
                if run_ended(err):
                    raise DecisionRefused(run_id, call_id, "the run has already ended") from err
                raise

    async def _signal(
        self,
        run_id: str,
        signal: str,
        call_id: str,
        approver: str,
        reason: str | None,
        always: bool,
    ) -> None:
        payload = _checked(
            DecisionSignal, call_id=call_id, approver=approver, reason=reason, always=always
        )
        with self._translating(run_id):
            await self._handle(run_id).signal(signal, payload)

    # --- plumbing ------------------------------------------------------------------

    def _handle(self, run_id: str) -> WorkflowHandle:
        return self.client.get_workflow_handle(run_id)

    @contextmanager
    def _translating(self, run_id: str) -> Iterator[None]:
        """Turn the SDK's errors into one-line `AgentClientError`s."""
        try:
            yield
        except AgentClientError:
            raise
        except WorkflowAlreadyStartedError as err:
            raise AgentClientError(f"a run with id {run_id!r} already exists") from err
        except RPCError as err:
            raise from_rpc_error(run_id, self.client.namespace, err) from err
        except WorkflowQueryFailedError as err:
            raise AgentClientError(f"query on run {run_id!r} failed: {err.message}") from err
        except WorkflowQueryRejectedError as err:
            raise AgentClientError(f"query on run {run_id!r} rejected: {err}") from err


def _agent_input(
    agent: str, input: str, *, context: JsonValue, max_turns: int | None
) -> AgentInput:
    """The workflow input, refused here (not by the workflow) if it is not valid JSON data."""
    problem = _json_problem(context, "context")
    if problem:
        raise AgentClientError(f"context must be JSON data: {problem}")
    return _checked(AgentInput, agent=agent, input=input, context=context, max_turns=max_turns)


def _json_problem(value: object, path: str) -> str | None:
    """Where `value` stops being plain JSON data (None if it is JSON all through)."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} is {value}, not a JSON number"
    if isinstance(value, list):
        problems = (_json_problem(v, f"{path}[{i}]") for i, v in enumerate(value))
        return next((p for p in problems if p), None)
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r}; JSON keys are strings"
            if problem := _json_problem(item, f"{path}.{key}"):
                return problem
        return None
    return (
        f"{path} is of type {type(value).__name__}; use dict, list, str, int, float, bool or None"
    )


def _checked(model: type[_M], **fields: object) -> _M:
    """Build a payload model; a validation error becomes one readable line."""
    try:
        return model(**fields)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in err.errors()
        )
        raise AgentClientError(f"invalid {model.__name__}: {problems}") from err
