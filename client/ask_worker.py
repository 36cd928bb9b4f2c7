"""Ask a worker something only it knows (its agents' tools, its webhook endpoints) by
running one of its activities as a standalone activity: no workflow, nothing in any
run's history. The Temporal server must allow standalone activities (the dev server
does; elsewhere the dynamic config `activity.enableStandalone`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import uuid4

from durable_agents.client.errors import AgentClientError
from temporalio.client import ActivityFailureError, Client
from temporalio.common import RetryPolicy
from temporalio.service import RPCError, RPCStatusCode

TIMEOUT = timedelta(seconds=30)
"""How long one question may take, queued and run."""


class WorkerUnavailable(AgentClientError):
    """The worker (or what it asked in turn) could not answer."""


async def ask_worker(
    client: Client, queue: str, activity: str, arg: object, result_type: type, what: str
) -> Any:
    """Run `activity` once on a worker of `queue` and return its result; `what` names
    who answers, for the errors (WorkerUnavailable)."""
    try:
        return await client.execute_activity(
            activity,
            arg,
            id=f"agentctl-{uuid4().hex[:12]}",
            task_queue=queue,
            result_type=result_type,
            schedule_to_close_timeout=TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
            summary=f"agentctl: {activity}",
        )
    except ActivityFailureError as err:
        cause: BaseException = err
        while cause.__cause__ is not None:
            cause = cause.__cause__
        message = getattr(cause, "message", None) or str(cause)
        raise WorkerUnavailable(f"{what} did not answer: {message}") from None
    except RPCError as err:
        hint = (
            "; this runs a standalone activity, which this Temporal server must allow "
            "(dynamic config activity.enableStandalone)"
            if err.status in (RPCStatusCode.UNIMPLEMENTED, RPCStatusCode.FAILED_PRECONDITION)
            or "standalone" in err.message.lower()
            else ""
        )
        raise WorkerUnavailable(f"cannot ask {what}: {err.message}{hint}") from None
    except (ValueError, TypeError) as err:  # an answer this client cannot read
        raise WorkerUnavailable(
            f"cannot read the answer of {what} (a worker of another build?): {err}"
        ) from None
