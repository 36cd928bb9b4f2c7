"""No signal, update or query can wedge a run: hostile and malformed ones sent from
outside (the `temporal` CLI, a raw client) are answered or recorded as refused, and
the run stays operable (queried, approved, finished). Each case failed before the
dynamic signal handler: the run's every later workflow task failed."""

from __future__ import annotations

import pytest
from durable_agents.workflows import contract, limits
from durable_agents.workflows.audit import REFUSALS_KEPT
from durable_agents.workflows.payloads import DecisionSignal
from durable_agents.workflows.state import RunState, RunStatus
from temporalio.client import (
    WorkflowFailureError,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import CancelledError

from durable_agents.testing import Call, Reply
from tests.support import agents
from tests.support.runs import (
    held,
    requested,
    start,
    state_of,
    temporal_cli,
    wait_for_status,
    workflow_task_failures,
)


def email(call_id: str) -> Call:
    return Call("send_email", {"to": "a", "body": "hi"}, call_id)


async def cli_signal(worker, handle, name: str, *payloads: str) -> None:
    inputs = [arg for payload in payloads for arg in ("--input", payload)]
    await temporal_cli(
        worker, "workflow", "signal", "--workflow-id", handle.id, "--name", name, *inputs
    )


async def approve_and_finish(worker, handle, call_id: str) -> None:
    await cli_signal(worker, handle, "approve", f'{{"call_id": "{call_id}", "approver": "ann"}}')
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert await workflow_task_failures(handle) == 0


@pytest.mark.parametrize("name", ["approve", "reject"])
async def test_decision_signal_with_two_arguments_is_refused_not_wedging(
    worker, model_server, name
):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    decision = '{"call_id": "e1", "approver": "mallory"}'
    await cli_signal(worker, handle, name, decision, '{"a": 1}')
    state = await state_of(handle)  # the run still answers queries
    [refused] = state.refused_decisions
    assert (refused.call_id, refused.approver, refused.decision) == ("e1", "mallory", name)
    assert refused.refused_because == (
        f"invalid {name} payload: 2 arguments; the signal takes one payload"
    )
    assert state.status is RunStatus.AWAITING_APPROVAL  # nothing was decided
    await approve_and_finish(worker, handle, "e1")


@pytest.mark.parametrize(
    ("name", "payloads", "because"),
    [
        ("send_message", ('{"content": "hi"}', '{"content": "again"}'), "2 arguments"),
        ("end_session", ('{"reason": "x"}', "1"), "2 arguments"),
        ("send_message", ('{"text": "hi"}',), "content: Field required"),
        ("send_message", ("[1, 2]",), "(root): Input should be an object"),
        ("send_message", (), "no payload"),
        ("end_session", ('{"reason": 7}',), "reason: Input should be a valid string"),
        ("aprove", ('{"call_id": "e1", "approver": "ann"}',), "unknown signal 'aprove'"),
    ],
    ids=[
        "message-2-args",
        "end-2-args",
        "message-wrong-field",
        "message-array",
        "message-no-payload",
        "end-bad-reason",
        "misspelled-name",
    ],
)
async def test_other_bad_signals_are_recorded_with_their_name(
    worker, model_server, name, payloads, because
):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker, session=False)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await cli_signal(worker, handle, name, *payloads)
    state = await state_of(handle)
    [refused] = state.refused_signals
    assert refused.signal == name
    assert because in refused.refused_because
    if payloads:
        assert refused.payload is not None and refused.payload.startswith(payloads[0][:2])
    assert state.status is RunStatus.AWAITING_APPROVAL and not state.queued_messages
    await approve_and_finish(worker, handle, "e1")


async def test_a_flood_of_bad_signals_keeps_the_state_bounded(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    flood = REFUSALS_KEPT * 3
    for n in range(flood):
        await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id=f"x{n}", approver="m"))
        await handle.signal(f"noise-{n}", {"n": n})
    state = await state_of(handle)
    assert len(state.refused_decisions) == REFUSALS_KEPT
    assert state.refused_decisions_dropped == flood - REFUSALS_KEPT
    assert state.refused_decisions[-1].call_id == f"x{flood - 1}"  # the newest are kept
    assert len(state.refused_signals) == REFUSALS_KEPT
    assert state.refused_signals_dropped == flood - REFUSALS_KEPT
    assert len(state.model_dump_json()) < 40_000
    await approve_and_finish(worker, handle, "e1")


async def test_decide_update_with_extra_arguments_is_refused_and_the_run_goes_on(
    worker, model_server
):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    payload = {"call_id": "e1", "decision": "approve", "approver": "ann"}
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(contract.UPDATE_DECIDE, args=[payload, {"a": 1}])
    with pytest.raises(WorkflowUpdateFailedError):
        await handle.execute_update(contract.UPDATE_DECIDE, "not an object")
    # A query with arguments it does not take is refused, with the reason; it changes
    # nothing (its optional argument: tests/unit/test_state_pages.py).
    for args in ([1, 2], [1], [{"from_item": "0"}]):
        with pytest.raises(WorkflowQueryFailedError) as refused:
            await handle.query(contract.QUERY_GET_STATE, args=args, result_type=RunState)
        assert "Traceback" not in str(refused.value) and "/" not in str(refused.value)
    assert "Input should be a valid dictionary" in str(await query_refusal(handle, [1]))
    assert (await state_of(handle)).status is RunStatus.AWAITING_APPROVAL
    await approve_and_finish(worker, handle, "e1")


async def query_refusal(handle, args) -> WorkflowQueryFailedError:
    try:
        await handle.query(contract.QUERY_GET_STATE, args=args)
    except WorkflowQueryFailedError as refused:
        return refused
    raise AssertionError(f"get_state with {args} was answered")


async def test_bad_signals_before_the_run_has_a_state_are_kept(worker, model_server):
    release = held(model_server, Reply(content="done"))  # the run is open for the signals
    handle = await start(worker)
    await handle.signal("aprove", {"call_id": "c1"})
    await handle.signal(contract.SIGNAL_APPROVE, args=[{"call_id": "c1"}, 2])
    release.set()
    assert (await handle.result()).status is RunStatus.COMPLETED
    state = await state_of(handle)
    assert [r.signal for r in state.refused_signals] == ["aprove"]
    assert [r.refused_because for r in state.refused_decisions] == [
        "invalid approve payload: 2 arguments; the signal takes one payload"
    ]
    assert await workflow_task_failures(handle) == 0


async def test_oversized_decisions_are_refused_without_keeping_their_bulk(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    huge = "x" * 1_900_000
    await handle.signal(
        contract.SIGNAL_REJECT, DecisionSignal(call_id="e1", approver="m", reason=huge)
    )
    await handle.signal(contract.SIGNAL_APPROVE, DecisionSignal(call_id="e1", approver=huge))
    state = await state_of(handle)
    long_reason, long_approver = state.refused_decisions
    assert long_reason.refused_because == (
        f"invalid reject payload: reason: 1,900,000 characters, at most {limits.MAX_REASON_CHARS:,}"
    )
    assert long_reason.reason is None and len(long_approver.approver) == limits.MAX_ID_CHARS
    assert len(state.model_dump_json()) < 20_000  # none of the 3.8 MB was kept
    decide = {"call_id": "e1", "decision": "approve", "approver": "ann", "reason": huge}
    with pytest.raises(WorkflowUpdateFailedError) as refused:
        await handle.execute_update(contract.UPDATE_DECIDE, decide)
    assert "reason: 1,900,000 characters" in str(refused.value.cause)
    await approve_and_finish(worker, handle, "e1")


async def test_held_decisions_and_queued_messages_are_capped(worker, model_server):
    release = held(model_server, Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker, session=True)
    await requested(model_server)  # the model answers once the signals are in
    extra = 5
    for n in range(limits.MAX_HELD + extra):  # while the model answers: held for its reply
        await handle.signal(contract.SIGNAL_REJECT, DecisionSignal(call_id=f"c{n}", approver="m"))
    state = await state_of(handle)
    release.set()
    assert len(state.held_decisions) == limits.MAX_HELD
    assert [r.refused_because.endswith("are held already") for r in state.refused_decisions] == [
        True
    ] * extra
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    for n in range(limits.MAX_QUEUED_MESSAGES + extra):
        await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": f"m{n}"})
    too_long = limits.MAX_MESSAGE_CHARS + 1
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, {"content": "y" * too_long})
    state = await state_of(handle)
    assert len(state.queued_messages) == limits.MAX_QUEUED_MESSAGES
    assert [r.refused_because for r in state.refused_signals][-2:] == [
        f"{limits.MAX_QUEUED_MESSAGES} messages are queued already",
        f"content: {too_long:,} characters, at most {limits.MAX_MESSAGE_CHARS:,}",
    ]


async def test_max_turns_from_the_input_can_lower_the_agents_limit_not_lift_it(
    worker, model_server
):
    model_server.script(Reply(content="a"), Reply(content="b"))
    lifted = await start(worker, max_turns=10**12)
    lowered = await start(worker, max_turns=2)
    assert (await lifted.result()).status is RunStatus.COMPLETED
    assert (await lowered.result()).status is RunStatus.COMPLETED
    assert (await state_of(lifted)).max_turns == agents.assistant.max_turns
    assert (await state_of(lowered)).max_turns == 2


async def test_a_call_that_repeats_an_argument_is_answered_never_shown_for_approval(
    worker, model_server
):
    sneaky = '{"order": "A12", "amount": 1, "amount": 100000}'
    model_server.script(Reply(tool_calls=(Call("refund", sneaky, "r1"),)), Reply(content="ok"))
    handle = await start(worker)
    assert (await handle.result()).status is RunStatus.COMPLETED
    state = await state_of(handle)
    [result] = [i for i in state.items if i.type == "tool_result"]
    assert result.is_error and "name the key 'amount' more than once" in result.content
    assert not any(i.type == "decision" for i in state.items)
    assert [c for c in agents.CALLS if c[0] == "refund"] == []  # the tool never ran


async def test_signals_whose_payload_is_not_json_are_recorded_not_raised(worker, model_server):
    """Raw bytes (`binary/plain`) under an unknown name, as a message, as an extra
    argument: each refused with what arrived (encoding and size), the run goes on."""
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker, session=False)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    await handle.signal("noise", b"\x00\xffraw")
    await handle.signal(contract.SIGNAL_SEND_MESSAGE, b"\x00\xffraw")
    await handle.signal(contract.SIGNAL_END_SESSION, args=[b"\x00", b"\x01"])
    state = await state_of(handle)
    assert [(r.signal, r.payload) for r in state.refused_signals] == [
        ("noise", "<binary/plain, 5 bytes>"),
        (contract.SIGNAL_SEND_MESSAGE, "<binary/plain, 5 bytes>"),
        (contract.SIGNAL_END_SESSION, "<binary/plain, 1 bytes>"),
    ]
    await approve_and_finish(worker, handle, "e1")


async def test_a_malformed_decision_with_huge_fields_is_kept_clipped(worker, model_server):
    model_server.script(Reply(tool_calls=(email("e1"),)), Reply(content="ok"))
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    huge = "z" * 1_000_000
    await handle.signal(contract.SIGNAL_APPROVE, {"call_id": huge, "approver": huge, "x": 1})
    await handle.signal("n" * 300, {"call_id": "e1"})  # the server refuses far longer names
    state = await state_of(handle)
    [refused] = state.refused_decisions
    assert len(refused.call_id) == len(refused.approver) == limits.MAX_ID_CHARS
    assert len(state.refused_signals[0].signal) == limits.MAX_ID_CHARS
    assert len(state.model_dump_json()) < 20_000
    await approve_and_finish(worker, handle, "e1")


@pytest.mark.history("cancel_during_model_call")
async def test_a_run_cancelled_during_its_model_call_ends_cancelled(worker, model_server, scenario):
    release = held(model_server, Reply(content="late"))
    handle = await start(worker)
    scenario.run(handle)
    await requested(model_server)  # the model call is in flight, answering only when told
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as ended:
        await handle.result()
    release.set()  # (the worker's teardown waits for the call it runs)
    assert isinstance(ended.value.cause, CancelledError)
    assert (await state_of(handle)).status is RunStatus.CANCELLED
