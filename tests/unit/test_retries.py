"""What `agentctl status` shows of a call being retried (client.retries), from the
pending-activity information Temporal answers, in any local time zone."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime

import pytest
from durable_agents.client.retries import ERROR_CHARS, one_line, retrying
from google.protobuf.timestamp_pb2 import Timestamp
from temporalio.api.workflow.v1 import PendingActivityInfo
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionResponse
from temporalio.client import WorkflowExecutionDescription
from temporalio.contrib.pydantic import pydantic_data_converter


@pytest.fixture
def in_tokyo():
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    yield
    if before is None:
        os.environ.pop("TZ")
    else:
        os.environ["TZ"] = before
    time.tzset()


async def described(*pending: PendingActivityInfo) -> WorkflowExecutionDescription:
    raw = DescribeWorkflowExecutionResponse(pending_activities=list(pending))
    raw.workflow_execution_info.execution.workflow_id = "w"
    raw.workflow_execution_info.execution.run_id = "r"
    return await WorkflowExecutionDescription._from_raw_description(
        raw, namespace="default", converter=pydantic_data_converter
    )


async def test_the_next_attempt_is_the_servers_moment_whatever_the_local_zone(in_tokyo):
    due = Timestamp()
    due.FromDatetime(datetime(2026, 1, 1, 12, 0, tzinfo=UTC))
    retry = PendingActivityInfo(activity_id="2", attempt=3, maximum_attempts=4)
    retry.activity_type.name = "call_model"
    retry.next_attempt_schedule_time.CopyFrom(due)
    retry.last_failure.message = "model unavailable:\n HTTP 503"
    first_try = PendingActivityInfo(activity_id="3", attempt=1)
    [found] = await retrying(await described(retry, first_try), pydantic_data_converter)
    assert found.next_attempt_at == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert (found.activity, found.attempt, found.maximum_attempts) == ("call_model", 3, 4)
    assert found.last_error == "model unavailable: HTTP 503"


def test_an_error_is_one_bounded_line():
    assert one_line("a\n\tb   c") == "a b c"
    long = one_line("x" * 10_000)
    assert len(long) == ERROR_CHARS and long.endswith("…")
