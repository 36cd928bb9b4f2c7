"""Ids for a workflow whose usual id someone else holds (a sub-agent's run): the random
part comes from the `fresh_id` local activity, not from `workflow.uuid4()`, whose seed
Temporal's core derives from the run id any namespace reader sees (so a squatter could
compute the fresh id and hold it too). A local activity's result reaches history (a
marker) in the same workflow task completion as the start that uses it, so nobody knows
it before the start is asked for."""

from __future__ import annotations

import re
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import contract

TRIES = 3
"""Fresh ids tried for one start (one more after the usual id): a squatter who reads
the history as the start is asked for and wins the race to it is tried past."""
_HEX = re.compile(r"[0-9a-f]{16}")


async def drawn() -> str:
    """16 hex digits no one can compute from the run's history."""
    fresh = await workflow.execute_local_activity(
        contract.ACTIVITY_FRESH_ID,
        result_type=str,
        start_to_close_timeout=timedelta(seconds=10),
        retry_policy=RetryPolicy(maximum_attempts=3),
        summary="a fresh id",
    )
    if not isinstance(fresh, str) or not _HEX.fullmatch(fresh):
        raise ApplicationError(
            f"fresh_id gave {str(fresh)[:40]!r}, not 16 hex digits",
            type=contract.ERROR_RUN_FAILED,
            non_retryable=True,
        )
    return fresh
