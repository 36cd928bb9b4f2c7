"""What a run announces: its events, numbered, on its event stream (Workflow Streams,
`workflows.event_stream`), and the approval, pause and end events sent to the webhooks
subscribed to them, one delivery workflow per event and endpoint
(`workflows.webhook_delivery`; `workflows.run_events` holds the pure part).
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio import workflow
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        contract,
        event_stream,
        fresh_ids,
        run_events,
        secret_ids,
        step_events,
    )
    from durable_agents.workflows.payloads import AgentInput
    from durable_agents.workflows.state import RunState
    from durable_agents.workflows.webhook_payloads import DeliveryJob


class Announcer:
    """Publishes a run's events and starts its webhook deliveries."""

    def __init__(self, stream: event_stream.RunStream) -> None:
        self.stream = stream
        """The run's events (`workflows.event_stream`)."""

    @classmethod
    def for_input(cls, given: AgentInput | None) -> Announcer:
        """The announcer of a run started with `given`: the events a continued run
        carried over, numbered on from where it left them."""
        carried = given.resume_from if given is not None else None
        announced = carried.notices if carried is not None else None
        continued = announced is not None and workflow.info().continued_run_id
        return cls(
            event_stream.RunStream(
                given.events if given is not None else None,
                announced=announced.seq if continued and announced is not None else 0,
            )
        )

    async def close(self, state: RunState) -> None:
        """The run ends: its last events go out and its followers are let go."""
        await self.announce(state)
        await self.release_followers()

    def emit(self, state: RunState, *events: dict[str, Any]) -> None:
        """Publish `events` on the run's event stream, numbered."""
        for event in events:
            seq = self.stream.next_seq
            self.stream.publish(step_events.stamped(state, event, seq=seq, now=workflow.now()))

    async def release_followers(self) -> None:
        """The run ends: followers waiting for events get what there is and go."""
        self.stream.release_followers()
        await workflow.wait_condition(workflow.all_handlers_finished)

    async def announce(self, state: RunState) -> None:
        """Publish the approval, pause and end events since the last announcement on
        the event stream, and send them to the webhooks subscribed to them: one
        delivery workflow per event and endpoint, abandoned by the run (it never waits
        for a receiver, and ending or continuing as new loses nothing)."""
        webhooks = run_events.subscribed(state.agent)
        announced = run_events.due(state, now=workflow.now(), first_seq=self.stream.next_seq)
        for event in announced:
            self.stream.publish(event)
        if not webhooks:
            return
        jobs: list[tuple[DeliveryJob, str]] = []
        for event in announced:
            for endpoint in run_events.endpoints_for(state, event):
                webhook_id = run_events.webhook_id(state, event["seq"])
                plain = f"{webhook_id}_{endpoint}"  # nobody can hold it: `secret_ids`
                delivery = plain + secret_ids.suffix(state, "delivery", plain)
                run_events.record_sending(
                    state, endpoint, webhook_id, event, now=workflow.now(), workflow_id=delivery
                )
                job = DeliveryJob(
                    endpoint=endpoint,
                    webhook_id=webhook_id,
                    run_id=state.run_id,
                    event=run_events.addressed(event, endpoint),
                )
                jobs.append((job, delivery))
        # All at once, so the run waits for one round trip, not one per delivery. An id
        # already taken is not this run's delivery (a run starts each once): someone who
        # read the start from history won the race to it. The delivery goes out under
        # another id (the same webhook-id), once; the run's state says so.
        taken = await self._start_deliveries(state, jobs)
        if not taken:
            return
        fresh = await fresh_ids.drawn()  # not `workflow.uuid4()`: anyone can compute that
        retried = [(job, f"{wid}_{fresh[:12]}") for job, wid in taken]
        for job, wid in retried:
            note = f"{run_events.ID_TAKEN}: started as {wid}"
            run_events.record_sending(
                state,
                job.endpoint,
                job.webhook_id,
                job.event,
                now=workflow.now(),
                note=note,
                workflow_id=wid,
            )
        for job, _ in await self._start_deliveries(state, retried):
            why = "its delivery workflow ids were taken by other workflows, twice"
            run_events.record_not_started(state, job, why, now=workflow.now())

    async def _start_deliveries(
        self, state: RunState, jobs: list[tuple[DeliveryJob, str]]
    ) -> list[tuple[DeliveryJob, str]]:
        """Start a delivery workflow per job (a child, left running when the run ends);
        the jobs whose id was taken. A start that fails otherwise is recorded."""
        starts = [
            workflow.start_child_workflow(
                contract.WORKFLOW_WEBHOOK_DELIVERY,
                job,
                id=child_id,
                task_queue=workflow.info().task_queue,
                parent_close_policy=workflow.ParentClosePolicy.ABANDON,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,  # sent once, ever
                static_summary=f"webhook {job.endpoint}: {job.event.get('type')} "
                f"#{job.event.get('seq')}",
            )
            for job, child_id in jobs
        ]
        outcomes = await asyncio.gather(*starts, return_exceptions=True)
        taken = []
        for (job, child_id), started in zip(jobs, outcomes, strict=True):
            if isinstance(started, asyncio.CancelledError):
                raise started
            if isinstance(started, WorkflowAlreadyStartedError):
                taken.append((job, child_id))
            elif isinstance(started, Exception):  # recorded, never in the run's way
                run_events.record_not_started(state, job, str(started), now=workflow.now())
        return taken
