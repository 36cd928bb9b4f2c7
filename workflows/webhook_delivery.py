"""`AgentWebhookDelivery`: one run event delivered to one webhook endpoint, beside the
run rather than as a step of it.

The run starts one per event and endpoint as a child workflow whose parent-close
policy is ABANDON: the run never waits for a receiver, and one that completes or
continues as new loses no delivery (an activity of the run would be cancelled with
it; a long-lived per-endpoint workflow fed by signals would need its own history
management for a queue this workflow does not have). Each attempt is one
`deliver_webhook` activity (tried once: the retry decision depends on the answer and
its `Retry-After`, which only the activity sees); between attempts a durable timer.
A worker killed mid-attempt times the attempt out and the next one goes out with
the same `webhook-id`. After each attempt the run is told how it went (the
`webhook_delivery` signal), best effort: an ended run is not told.

Workflow code (deterministic).
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract, metrics
    from durable_agents.workflows.activity_calls import root_message
    from durable_agents.workflows.webhook_payloads import (
        DeliveryJob,
        DeliveryReport,
        DeliveryRequest,
        DeliveryResult,
    )

ATTEMPT_TIMEOUT = timedelta(seconds=30)
"""One attempt, connection and answer included (the activity's own HTTP timeout is
shorter)."""
AFTER_A_LOST_ATTEMPT = timedelta(seconds=5)
"""The wait after a first attempt that did not report (its worker died, or did not
know the endpoint); doubling up to `LONGEST_LOST_WAIT`."""
LONGEST_LOST_WAIT = timedelta(minutes=10)
MAX_LOST_ATTEMPTS = 50
"""Attempts that do not report before the delivery gives up (no worker can run the
activity: misconfigured, or gone for good): about 7 hours."""


@workflow.defn(
    name=contract.WORKFLOW_WEBHOOK_DELIVERY, sandboxed=False
)  # as AgentWorkflow: see there
class WebhookDeliveryWorkflow:
    @workflow.run
    async def run(self, job: DeliveryJob) -> DeliveryReport:
        first_try_at = workflow.now()
        attempt = lost = 0
        while True:
            attempt += 1
            request = DeliveryRequest(
                endpoint=job.endpoint,
                webhook_id=job.webhook_id,
                event=job.event,
                attempt=attempt,
                first_try_at=first_try_at,
            )
            try:
                result: DeliveryResult = await workflow.execute_activity(
                    contract.ACTIVITY_DELIVER_WEBHOOK,
                    request,
                    result_type=DeliveryResult,
                    start_to_close_timeout=ATTEMPT_TIMEOUT,
                    retry_policy=RetryPolicy(maximum_attempts=1),
                    summary=f"webhook {job.endpoint}: {job.event.get('type')} "
                    f"#{job.event.get('seq')}, attempt {attempt}",
                )
            except ActivityError as err:  # timed out (worker gone), or no such endpoint here
                lost += 1
                outcome = "retry" if lost < MAX_LOST_ATTEMPTS else "gave_up"
                wait = AFTER_A_LOST_ATTEMPT * 2 ** min(lost - 1, 7)
                result = DeliveryResult(
                    outcome=outcome,
                    error=root_message(err)[:500],
                    retry_in_seconds=min(wait, LONGEST_LOST_WAIT).total_seconds(),
                )
            metrics.webhook_attempt(job.endpoint, result.outcome, result.code)
            report = _report(job, attempt, result)
            await _tell(job, report)
            if result.outcome != "retry":
                return report
            await workflow.sleep(
                timedelta(seconds=result.retry_in_seconds or 0),
                summary=f"webhook {job.endpoint}: next try",
            )


def _report(job: DeliveryJob, attempt: int, result: DeliveryResult) -> DeliveryReport:
    status = {"delivered": "delivered", "refused": "refused", "gave_up": "gave_up"}.get(
        result.outcome, "failing"
    )
    next_try = None
    if result.outcome == "retry":
        wait = timedelta(seconds=result.retry_in_seconds or 0)
        next_try = (workflow.now() + wait).isoformat().replace("+00:00", "Z")
    return DeliveryReport(
        endpoint=job.endpoint,
        webhook_id=job.webhook_id,
        event=str(job.event.get("type", "?"))[:50],
        status=status,  # type: ignore[arg-type]
        attempts=attempt,
        code=result.code if result.code is not None and 100 <= result.code <= 599 else None,
        error=result.error,
        next_try_at=next_try,
    )


async def _tell(job: DeliveryJob, report: DeliveryReport) -> None:
    """Tell the run how the delivery goes; an ended run cannot be told, and that is
    no reason to stop delivering."""
    try:
        await workflow.get_external_workflow_handle(job.run_id).signal(
            contract.SIGNAL_WEBHOOK_DELIVERY, report
        )
    except Exception:  # the run has ended (or never existed): nobody to tell
        workflow.logger.info("run %s not told of webhook %s", job.run_id, job.webhook_id)
