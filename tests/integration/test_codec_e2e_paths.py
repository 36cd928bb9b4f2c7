"""Encryption end to end, the other ways content reaches history: a session with
context, an approval decided by update with a reason and edited arguments, the
next user message, the end reason, and a run that fails with a model error that
echoes the prompt. None of it may be readable in what the server stores, search
attributes included; a control run without the codec shows the search finds it.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.client.errors import RunFailed
from durable_agents.workflows.state import RunStatus
from temporalio.api.workflowservice.v1 import DescribeWorkflowExecutionRequest

from durable_agents.testing import Call, Fault, Reply
from tests.integration.test_codec_e2e import (
    KEYS,
    CodecWorker,
    _raw_history_and_description,
    _wait_for_pending,
    _worker,
)
from tests.support.secret_agents import (
    ARGUMENT_MARKER,
    CONTEXT_MARKER,
    DECISION_MARKER,
    EDITED_MARKER,
    END_MARKER,
    MESSAGE_MARKER,
    PROMPT_MARKER,
    REFUSAL_MARKER,
    SESSION_MARKERS,
)


@pytest.fixture(params=["encrypted", "plain"])
async def running(request, env, model_server):
    """A worker and client with the codec on, and the control with it off."""
    async with _worker(env, model_server, KEYS if request.param == "encrypted" else None) as it:
        yield it


def _encrypted(running: CodecWorker) -> bool:
    return running.client.data_converter.payload_codec.keys is not None


def _found(raw: bytes, markers: tuple[str, ...]) -> list[str]:
    return [m for m in markers if m.encode() in raw]


async def _wait_for_turn(running: CodecWorker, run_id: str, turn: int) -> None:
    for _ in range(300):
        view = await running.agents.status(run_id)
        if view.status is RunStatus.AWAITING_INPUT and view.turn >= turn:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run_id} never waited for input after turn {turn}")


async def _session_run(running: CodecWorker, model_server) -> str:
    model_server.script(
        Reply(tool_calls=(Call("disclose", {"topic": ARGUMENT_MARKER}, call_id="d1"),)),
        Reply(content="disclosed"),
        Reply(content="anything else?"),
    )
    agents = running.agents
    run_id = (
        await agents.start(
            "keeper",
            f"tell me about {PROMPT_MARKER}",
            context={"account": CONTEXT_MARKER},
            session=True,
        )
    ).id
    await _wait_for_pending(agents, run_id)
    await agents.decide(
        run_id,
        "d1",
        "approve",
        approver="ops",
        reason=DECISION_MARKER,
        arguments={"topic": EDITED_MARKER},
    )
    await _wait_for_turn(running, run_id, 2)
    await agents.message(run_id, f"and what about {MESSAGE_MARKER}?")
    await _wait_for_turn(running, run_id, 3)
    await agents.end_session(run_id, reason=END_MARKER)
    assert (await agents.result(run_id)).status is RunStatus.COMPLETED
    return run_id


async def _search_attribute_values(env, run_id: str) -> list[str]:
    description = await env.client.workflow_service.describe_workflow_execution(
        DescribeWorkflowExecutionRequest(
            namespace=env.client.namespace, execution={"workflow_id": run_id}
        )
    )
    fields = description.workflow_execution_info.search_attributes.indexed_fields
    assert {"AgentName", "AgentStatus", "AgentTurn"} <= set(fields)
    return [json.dumps(json.loads(p.data)) for p in fields.values()]


async def test_session_decisions_and_messages_leave_no_plaintext(env, running, model_server):
    run_id = await _session_run(running, model_server)
    raw = await _raw_history_and_description(env, run_id)
    values = await _search_attribute_values(env, run_id)
    assert not [m for m in SESSION_MARKERS if any(m in v for v in values)]
    if not _encrypted(running):
        assert _found(raw, SESSION_MARKERS) == list(SESSION_MARKERS)  # the search works
        return
    assert _found(raw, SESSION_MARKERS) == []
    # Readable with the keys: the decision, the edited call, the message, the end.
    state = await running.agents.state(run_id)
    text = state.model_dump_json()
    for marker in (CONTEXT_MARKER, DECISION_MARKER, EDITED_MARKER, MESSAGE_MARKER, END_MARKER):
        assert marker in text, marker


async def test_a_model_refusal_that_echoes_the_prompt_fails_the_run_unreadably(
    env, running, model_server
):
    model_server.script(Fault(400, f"content policy: the prompt {REFUSAL_MARKER} is refused"))
    run_id = (await running.agents.start("keeper", f"tell me about {PROMPT_MARKER}")).id
    with pytest.raises(RunFailed) as failed:
        await running.agents.result(run_id)
    assert REFUSAL_MARKER in failed.value.message  # the client, with the keys, reads it
    raw = await _raw_history_and_description(env, run_id)
    values = await _search_attribute_values(env, run_id)
    assert not [v for v in values if REFUSAL_MARKER in v or PROMPT_MARKER in v]
    markers = (PROMPT_MARKER, REFUSAL_MARKER)
    if not _encrypted(running):
        assert _found(raw, markers) == list(markers)
        return
    assert _found(raw, markers) == []
    history = await env.client.get_workflow_handle(run_id).fetch_history()
    [failed_event] = [
        e for e in history.events if e.HasField("workflow_execution_failed_event_attributes")
    ]
    failure = failed_event.workflow_execution_failed_event_attributes.failure
    assert failure.message == "Encoded failure"
