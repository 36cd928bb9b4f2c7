"""What the adapter maps onto issue 46's native features, with an SDK agent written as
the SDK's documentation writes it (tests/support/sdk_native_agents.py), served by a real
worker against the dev server and the scripted model server."""

from __future__ import annotations

import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import RunFailed
from durable_agents.workflows.state import RunStatus

from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support import sdk_native_agents
from tests.support.runs import tool_results


@pytest.fixture
async def desk(env, model_server):
    sdk_native_agents.ASKED.clear()
    sdk_native_agents.ESCALATED.clear()
    served = [sdk_native_agents.helper, sdk_native_agents.native_triage]
    async with serving(env.client, model_server, extra_agents=served) as running:
        yield running


async def test_the_sdk_s_dynamic_instructions_are_asked_with_its_typed_context(desk, model_server):
    model_server.script(Reply(content="Hello Ann."))
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("sdk_helper", "hi", context={"name": "Ann", "uid": "u1"})).id
    assert (await client.result(run_id)).final_output == "Hello Ann."
    [request] = model_server.requests
    assert request["messages"][0] == {
        "role": "system",
        "content": "The user's name is Ann. Help them with their questions.",
    }
    assert sdk_native_agents.ASKED == ["Ann"]
    state = await client.state(run_id)
    assert state.agent.instructions_function == (
        "tests.support.sdk_native_agents.dynamic_instructions"
    )


@pytest.mark.parametrize(
    ("context", "reason"),
    [
        ({"name": "Bob", "uid": "banned"}, "raised PermissionError: Bob may not use sdk_helper"),
        ({"name": "Bob"}, "raised ValidationError"),  # not the context type: uid missing
        ("a string", "raised ValidationError"),
    ],
)
async def test_a_context_its_function_refuses_fails_the_run_before_any_model_call(
    desk, model_server, context, reason
):
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("sdk_helper", "hi", context=context)).id
    with pytest.raises(
        RunFailed, match=f"the instructions function of agent 'sdk_helper' {reason}"
    ):
        await client.result(run_id)
    assert model_server.requests == []
    assert (await client.state(run_id)).status is RunStatus.FAILED


SEAT = {"confirmation_number": "X1", "new_seat": "3F"}


async def test_the_sdk_s_update_seat_writes_the_run_s_context(desk, model_server):
    model_server.script(
        Reply(
            tool_calls=(Call("update_seat", {"confirmation_number": "X1", "new_seat": "3F"}, "u1"),)
        ),
        Reply(
            tool_calls=(Call("update_seat", {"confirmation_number": "X1", "new_seat": "3F"}, "u2"),)
        ),
        Reply(content="Done."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    start = {"passenger_name": "Ann", "flight_number": "FLT-123"}
    run_id = (await client.start("sdk_native_seat_booking", "3F please", context=start)).id
    assert (await client.result(run_id)).final_output == "Done."
    state = await client.state(run_id)
    assert state.context == {
        "passenger_name": "Ann",
        "confirmation_number": "X1",
        "seat_number": "3F",
        "flight_number": "FLT-123",
    }
    first, second = (i for i in state.items if getattr(i, "type", "") == "tool_result")
    assert (first.content, first.context_changed) == (
        "Updated seat to 3F for confirmation number X1",
        True,
    )
    assert second.context_changed is False  # the same seat again: nothing changed


async def test_an_sdk_tool_that_fails_after_writing_the_context_keeps_the_write_as_the_sdk(
    desk, model_server
):
    """The SDK's `update_seat` writes the context, then its assertion fails: the SDK turns
    the failure into a tool result and its context object keeps the writes; so does ours."""
    model_server.script(
        Reply(tool_calls=(Call("update_seat", SEAT, "u1"),)),
        Reply(content="Sorry."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    start = {"passenger_name": "Bo"}  # no flight number: the tool's assertion fails
    run_id = (await client.start("sdk_native_seat_booking", "3F", context=start)).id
    assert (await client.result(run_id)).final_output == "Sorry."
    state = await client.state(run_id)
    assert state.context == {
        "passenger_name": "Bo",
        "confirmation_number": "X1",
        "seat_number": "3F",
        "flight_number": None,
    }
    [result] = [i for i in state.items if getattr(i, "type", "") == "tool_result"]
    assert result.content.startswith("An error occurred while running the tool")  # the SDK's
    assert result.context_changed


async def test_the_sdk_s_on_handoff_hooks_run_on_the_worker_and_set_the_context(desk, model_server):
    model_server.script(
        Reply(tool_calls=(Call("transfer_to_sdk_native_escalation", {"reason": 7}, "e1"),)),
        Reply(tool_calls=(Call("transfer_to_sdk_native_seat_booking", {}, "h1"),)),
        Reply(tool_calls=(Call("update_seat", SEAT, "u1"),)),
        Reply(content="Seat 3F on FLT-123."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    start = {"passenger_name": "Ann"}
    run_id = (await client.start("sdk_native_triage", "change my seat", context=start)).id
    assert (await client.result(run_id)).final_output == "Seat 3F on FLT-123."
    state = await client.state(run_id)
    results = tool_results(state)
    assert results["e1"].is_error and "reason" in results["e1"].content  # bad input: refused
    assert sdk_native_agents.ESCALATED == []
    assert results["h1"].context_changed
    assert results["u1"].content == "Updated seat to 3F for confirmation number X1"
    assert state.context == {
        "passenger_name": "Ann",
        "confirmation_number": "X1",
        "seat_number": "3F",
        "flight_number": "FLT-123",
    }


ESCALATE = "transfer_to_sdk_native_escalation"


async def test_the_sdk_s_hook_with_an_input_type_gets_the_model_s_input(desk, model_server):
    model_server.script(
        Reply(
            tool_calls=(Call("transfer_to_sdk_native_escalation", {"reason": "lost bag"}, "e1"),)
        ),
        Reply(content="Escalated."),
    )
    client = AgentClient(desk.client, task_queue=desk.task_queue)
    run_id = (await client.start("sdk_native_triage", "my bag", context={})).id
    assert (await client.result(run_id)).final_output == "Escalated."
    assert sdk_native_agents.ESCALATED == ["lost bag"]
    state = await client.state(run_id)
    assert state.agent.name == "sdk_native_escalation"
    assert model_server.requests[1]["model"] == "escalation-model"
