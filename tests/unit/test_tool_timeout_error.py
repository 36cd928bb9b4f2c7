"""A tool cut off at its attempt's deadline tells the model it timed out, whichever side
noticed first: the worker (`run_tool`'s own deadline, `ToolTimeout`) or the server (a
start-to-close timeout, whose cause is the previous attempt's failure).

On a quiet machine the server's timer fires first; on a loaded one the worker's deadline
can win the race, and its failure then reached the model as "Application error" (the
message-less asyncio timeout it was chained to was the innermost cause, issue 42)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.run_tool import ToolActivities
from durable_agents.workflows.activity_calls import failure_type, root_message
from durable_agents.workflows.contract import ERROR_TOOL_TIMEOUT
from durable_agents.workflows.payloads import ToolRequest
from temporalio.api.enums.v1 import TimeoutType
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter
from temporalio.exceptions import ApplicationError, TimeoutError
from temporalio.testing import ActivityEnvironment

TOOLS = ToolActivities(AgentRegistry.from_modules(["tests.support.ops_agents"]))
SAID = "tool 'stall' ran past its 0.2s timeout"


async def _cut_off_on_the_worker() -> ApplicationError:
    """What `run_tool` raises when its own deadline ends the attempt."""
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, start_to_close_timeout=timedelta(seconds=0.2))
    request = ToolRequest(
        run_id="r",
        agent="napper",
        tool="stall",
        call_id="c1",
        arguments='{"seconds": 30}',
        idempotency_key="r/c1",
    )
    with pytest.raises(ApplicationError) as caught:
        await env.run(TOOLS.run_tool, request)
    return caught.value


def _sent(err: BaseException) -> Failure:
    """`err` as the worker reports it to the server (the default failure converter)."""
    failure = Failure()
    converter = DataConverter.default
    converter.failure_converter.to_failure(err, converter.payload_converter, failure)
    return failure


def _received(failure: Failure) -> BaseException:
    """`failure` as the workflow reads it from history."""
    converter = DataConverter.default
    return converter.failure_converter.from_failure(failure, converter.payload_converter)


async def test_the_worker_cutting_a_tool_off_tells_the_model_it_timed_out():
    raised = await _cut_off_on_the_worker()
    assert raised.type == ERROR_TOOL_TIMEOUT and raised.message == SAID

    seen = _received(_sent(raised))

    assert root_message(seen) == SAID
    assert failure_type(seen) == ERROR_TOOL_TIMEOUT


async def test_a_server_timeout_after_a_worker_cut_off_still_says_timeout():
    """The server's timeout of the last attempt carries the previous attempt's failure as
    its cause: the model reads that attempt's message, not a message-less wrapper."""
    server_said = Failure(message="activity StartToClose timeout")
    server_said.timeout_failure_info.timeout_type = TimeoutType.TIMEOUT_TYPE_START_TO_CLOSE
    server_said.cause.CopyFrom(_sent(await _cut_off_on_the_worker()))

    seen = _received(server_said)

    assert isinstance(seen, TimeoutError)
    assert root_message(seen) == SAID


def test_a_user_tool_error_raised_from_a_message_less_one_reaches_the_model_with_its_message():
    """`raise ToolFailed("card declined") from SomeError()` whose inner error has no
    message: the innermost message is the SDK's placeholder, the model reads the tool's."""

    class Declined(Exception):
        pass

    try:
        try:
            raise Declined()
        except Declined as inner:
            raise ApplicationError("card declined") from inner
    except ApplicationError as raised:
        seen = _received(_sent(raised))

    assert root_message(seen) == "card declined"
    assert root_message(_received(_sent(ApplicationError("")))) == "Application error"
