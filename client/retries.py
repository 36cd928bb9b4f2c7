"""What a run's activities are retrying, from Temporal's pending-activity information.

A workflow learns of an activity only when it completes, so while a model or
tool call is retried (the endpoint is down, answers 500 or 429) the run's own
status still says `running`. Temporal knows more: `DescribeWorkflowExecution`
lists each pending activity with its attempt, its last failure and when the
next attempt starts (the UI's "Pending Activities" view shows the same).
`agentctl status` and `agentctl watch` show it, one line per activity.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.client import WorkflowExecutionDescription
from temporalio.converter import DataConverter

ERROR_CHARS = 300
"""The last error is shown on one line of at most this many characters."""


class ActivityRetry(BaseModel):
    """A pending activity that has failed at least once."""

    activity: str
    """The activity type: `call_model`, `run_tool`, ..."""
    activity_id: str
    attempt: int
    """The attempt running or due next (2: the first retry)."""
    maximum_attempts: int | None = None
    """None: unlimited (until the activity's timeout or retry budget)."""
    last_error: str | None = None
    """The last failure's message (the activity's own error), on one line."""
    next_attempt_at: datetime | None = None
    """When the next attempt starts; None while one runs."""


async def retrying(
    description: WorkflowExecutionDescription, converter: DataConverter
) -> list[ActivityRetry]:
    """The run's pending activities that have failed at least once, oldest first."""
    found = []
    for pending in description.raw_description.pending_activities:
        if pending.attempt <= 1 and not pending.HasField("last_failure"):
            continue
        found.append(
            ActivityRetry(
                activity=pending.activity_type.name,
                activity_id=pending.activity_id,
                attempt=pending.attempt,
                maximum_attempts=pending.maximum_attempts or None,
                last_error=await _last_error(pending, converter),
                next_attempt_at=(
                    pending.next_attempt_schedule_time.ToDatetime(tzinfo=UTC)
                    if pending.HasField("next_attempt_schedule_time")
                    else None
                ),
            )
        )
    return found


async def _last_error(pending: PendingActivityInfo, converter: DataConverter) -> str | None:
    if not pending.HasField("last_failure"):
        return None
    try:  # a codec may have encrypted the message: the client's converter decodes it
        error = await converter.decode_failure(pending.last_failure)
    except Exception:  # undecodable (another key): what Temporal holds, as is
        return one_line(pending.last_failure.message)
    return one_line(str(getattr(error, "message", None) or error))


def one_line(text: str) -> str:
    """`text` on one line of at most ERROR_CHARS characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= ERROR_CHARS else flat[: ERROR_CHARS - 1] + "…"
