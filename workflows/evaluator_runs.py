"""Evaluators at work (`workflows.evaluations` decides what they are asked and what
their answers do): each waiting call whose policy names one gets an `evaluate_call`
activity of its own, started as the call starts to wait, while people can already
decide it. Its answer is recorded whenever it comes; the run's wait then looks again.
An answer the gate refuses (completed from outside) is not taken: it is recorded as
such in the evaluation, and a person decides (the evaluator runs beside the run, so
the refusal is audited there rather than failing the run's workflow task).
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, CancelledError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract, evaluations, inbox
    from durable_agents.workflows.activity_calls import root_message
    from durable_agents.workflows.check_payloads import EvaluationRequest, EvaluationResult
    from durable_agents.workflows.payloads import Evaluating, PendingApproval
    from durable_agents.workflows.run_items import ToolCall
    from durable_agents.workflows.state import RunState

    from durable_agents.gate_interceptor import GateRefused

ONE_ATTEMPT = RetryPolicy(maximum_attempts=1)
"""An evaluator is asked once: a failure escalates to a person (who is waited for
anyway), it is not retried."""


class EvaluatorRuns:
    """The evaluators of a run's waiting calls, asked concurrently."""

    def __init__(self, signals: inbox.Inbox) -> None:
        self._inbox = signals
        self._running: dict[str, asyncio.Task[None]] = {}
        self._asked: dict[str, Evaluating] = {}
        """What each running evaluator is, and since when (`get_pending_approvals`)."""

    @property
    def busy(self) -> bool:
        """Some evaluator has not answered yet (the run does not continue as new then)."""
        return bool(self._running)

    def shown(self, state: RunState, pending: list[PendingApproval]) -> list[PendingApproval]:
        """`pending` with the run's own calls an evaluator decides now marked so."""
        return [
            p.model_copy(update={"evaluating": self._asked[p.call_id]})
            if p.call_id in self._asked and p.run_id in (None, state.run_id)
            else p
            for p in pending
        ]

    def start_due(self, state: RunState) -> None:
        """Ask the evaluators of the calls that wait and have not been asked (none while
        the run is paused or over: nothing new starts then)."""
        if state.paused is not None or state.status.is_final:
            return
        for call in evaluations.due(state, set(self._running)):
            prepared = evaluations.prepare(state, call)
            if isinstance(prepared, str):
                evaluations.escalate(state, call, prepared, now=workflow.now())
                continue
            task = asyncio.create_task(self._evaluate(state, call, prepared))
            self._running[call.call_id] = task
            self._asked[call.call_id] = _evaluating(state, call, workflow.now())

    async def _evaluate(self, state: RunState, call: ToolCall, request: EvaluationRequest) -> None:
        policy = evaluations.policy_of(state, call)
        assert policy is not None and policy.evaluator is not None
        result: EvaluationResult | None = None
        failure = None
        asking = workflow.start_activity(
            contract.ACTIVITY_EVALUATE_CALL,
            request,
            result_type=EvaluationResult,
            start_to_close_timeout=policy.evaluator_timeout,
            retry_policy=ONE_ATTEMPT,
            summary=f"evaluator {policy.evaluator.name} on {call.tool} {call.call_id}",
        )
        settled = asyncio.create_task(
            workflow.wait_condition(lambda: not evaluations.waiting(state, call))
        )
        try:
            await workflow.wait([asking, settled], return_when=asyncio.FIRST_COMPLETED)
            if not asking.done():  # a person (or the deadline) decided first: it is told
                asking.cancel()  # to stop; a late verdict would be ignored anyway
                failure = "its answer was not waited for"
            else:
                result = await asking
        except GateRefused as err:  # completed from outside: audited, a person decides
            failure = f"{err}; a person decides"
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):  # the run is being cancelled
                raise asyncio.CancelledError() from err
            timed_out = isinstance(err.cause, TimeoutError)
            failure = (
                f"the evaluator did not answer within {policy.evaluator_timeout}: a person decides"
                if timed_out
                else f"the evaluator failed ({root_message(err)}): a person decides"
            )
        finally:
            settled.cancel()
            self._running.pop(call.call_id, None)
            self._asked.pop(call.call_id, None)
        evaluations.record(state, call, result, failure=failure, now=workflow.now())
        self._inbox.woken += 1  # the run's wait looks again


def _evaluating(state: RunState, call: ToolCall, now: datetime) -> Evaluating:
    policy = evaluations.policy_of(state, call)
    assert policy is not None and policy.evaluator is not None
    return Evaluating(
        evaluator=policy.evaluator.name,
        kind=policy.evaluator.kind,
        since=now,
        timeout_at=now + policy.evaluator_timeout,
    )
