"""External tools answered by people, end to end: the `answer` signal (from the
`temporal` CLI), the `decide` update, refusals, deadlines, short ids (real server,
real worker, the scripted HTTP model)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from durable_agents.workflows import contract, limits
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunStatus
from temporalio.client import WorkflowUpdateFailedError

from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.answer_agents import ANSWER_AGENTS
from tests.support.approver_keys import ALICE
from tests.support.runs import (
    start,
    state_of,
    temporal_cli,
    tool_results,
    wait_for_status,
    workflow_task_failures,
)

GOOD = {"account": "ACC-1", "amount": 12.5, "lines": [{"sku": "A", "quantity": 2}]}


@pytest.fixture
async def asking(env, model_server):
    async with serving(env.client, model_server, extra_agents=ANSWER_AGENTS) as running:
        yield running


def refund_call(call_id: str = "c1") -> Call:
    return Call("ask_refund", {"order_id": "o-1"}, call_id)


async def waiting(worker, model_server, *calls: Call):
    model_server.script(Reply(tool_calls=calls or (refund_call(),)), Reply(content="done"))
    handle = await start(worker, agent="questioner")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    return handle


async def pending(handle) -> list[dict]:
    return await handle.query(contract.QUERY_GET_PENDING_APPROVALS)


def tool_message(request: dict, call_id: str) -> dict:
    return next(
        m for m in request["messages"] if m["role"] == "tool" and m["tool_call_id"] == call_id
    )


async def decide_raw(handle, payload: dict) -> Decision:
    return await handle.execute_update(contract.UPDATE_DECIDE, payload, result_type=Decision)


async def refusal(handle, payload: dict) -> str:
    """Why the `decide` update refuses `payload` (it must)."""
    with pytest.raises(WorkflowUpdateFailedError) as err:
        await decide_raw(handle, payload)
    return str(err.value.cause)


async def test_answer_from_the_temporal_cli_reaches_the_model(asking, model_server):
    handle = await waiting(asking, model_server)
    [item] = await pending(handle)
    assert item["kind"] == "answer" and item["call_id"] == "c1"
    assert item["answer_schema"]["required"] == ["account", "amount"]
    assert "Line" in item["answer_schema"]["$defs"]  # nested fields: the whole schema
    assert len(item["short_id"]) <= 8
    payload = {"call_id": "c1", "result": GOOD, "approver": "ann", "reason": "checked"}
    await temporal_cli(
        asking, "workflow", "signal", "--workflow-id", handle.id,
        "--name", "answer", "--input", json.dumps(payload),
    )  # fmt: skip
    assert (await handle.result()).status is RunStatus.COMPLETED
    sent = tool_message(model_server.requests[-1], "c1")
    assert json.loads(sent["content"]) == GOOD
    state = await state_of(handle)
    [decision] = [i for i in state.items if isinstance(i, Decision)]
    assert (decision.decision, decision.approver, decision.via) == ("answer", "ann", "signal")
    assert decision.result == GOOD and decision.reason == "checked"


@pytest.mark.history("answers")
async def test_answer_by_the_update_from_the_temporal_cli_with_the_short_id(
    asking, model_server, scenario
):
    handle = await waiting(asking, model_server)
    scenario.run(handle)
    [item] = await pending(handle)
    payload = {
        "call_id": item["short_id"],
        "decision": "answer",
        "result": GOOD,
        "approver": "ann",
        "run_id": handle.id,
        "arguments_sha256": item["arguments_sha256"],
    }
    out = await temporal_cli(
        asking, "workflow", "update", "execute", "--workflow-id", handle.id,
        "--name", "decide", "--input", json.dumps(payload),
    )  # fmt: skip
    assert '"decision": "answer"' in out or "answer" in out
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert json.loads(tool_message(model_server.requests[-1], "c1")["content"]) == GOOD
    [decision] = [i for i in (await state_of(handle)).items if isinstance(i, Decision)]
    assert (decision.call_id, decision.short_id, decision.via) == ("c1", item["short_id"], "update")


async def test_refused_answers_leave_no_trace_and_the_call_still_waits(asking, model_server):
    handle = await waiting(
        asking, model_server, refund_call("c1"), Call("send_email", {"to": "a", "body": "b"}, "e1")
    )
    items = {p["call_id"]: p for p in await pending(handle)}
    digest = items["c1"]["arguments_sha256"]
    base = {
        "call_id": "c1",
        "decision": "answer",
        "approver": "ann",
        "result": GOOD,
        "arguments_sha256": digest,
    }
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    cases = [
        ({**base, "result": {"account": "A"}}, "(root): 'amount' is a required property"),
        (
            {**base, "result": {**GOOD, "lines": [{"sku": "A", "quantity": "two"}]}},
            "lines[0].quantity: 'two' is not of type 'integer'",
        ),
        ({**base, "result": "12"}, "(root): '12' is not of type 'object'"),
        ({**base, "arguments_sha256": "0" * 64}, "arguments_sha256 does not match"),
        ({**base, "expires_at": past}, "the decision expired at"),
        ({**base, "call_id": "nope"}, "no tool call nope in run"),
        ({**base, "call_id": "e1"}, "waits for approve or reject, not an answer"),
        ({**base, "decision": "approve", "result": None}, "waits for an answer, not an approval"),
        ({**base, "always": True}, "`always` is refused"),
        ({k: v for k, v in base.items() if k != "result"}, "must carry its `result`"),
        ({**base, "decision": "reject", "call_id": "e1"}, "only an answer carries a `result`"),
    ]
    for payload, why in cases:
        assert why in await refusal(handle, payload), payload
    state = await state_of(handle)
    assert not [i for i in state.items if isinstance(i, Decision)]
    assert state.refused_decisions == [] and state.status is RunStatus.AWAITING_APPROVAL
    await decide_raw(handle, base)
    await decide_raw(handle, {"call_id": "e1", "decision": "approve", "approver": "ann"})
    assert (await handle.result()).status is RunStatus.COMPLETED


async def test_refused_answer_signals_are_recorded_with_the_reason(asking, model_server):
    handle = await waiting(asking, model_server)
    hostile = [
        ({"call_id": "c1", "approver": "m", "result": {"account": 7, "amount": 1}}, "account"),
        ({"call_id": "c1", "approver": "m"}, "result: Field required"),
        ({"call_id": "c1", "approver": "m", "result": "x" * 40_000}, "result: 40,002 bytes"),
        ({"call_id": 5, "approver": "m", "result": 1}, "call_id: Input should be a valid string"),
        (
            {"call_id": "c1", "approver": "m", "result": 1, "decision": "approve"},
            "decision: Input should be 'answer'",
        ),
    ]
    for payload, _ in hostile:
        await handle.signal(contract.SIGNAL_ANSWER, payload)
    deep: object = 1
    for _ in range(limits.MAX_ANSWER_DEPTH + 5):
        deep = {"a": deep}
    await handle.signal(contract.SIGNAL_ANSWER, {"call_id": "c1", "approver": "m", "result": deep})
    state = await state_of(handle)
    refused = [r.refused_because or "" for r in state.refused_decisions]
    assert len(refused) == len(hostile) + 1
    for why, (_, expected) in zip(refused, hostile, strict=False):
        assert expected in why, (expected, why)
    assert "nested 37 deep" in refused[-1]
    assert all(r.decision == "answer" for r in state.refused_decisions)
    assert state.status is RunStatus.AWAITING_APPROVAL
    [item] = await pending(handle)
    await handle.signal(
        contract.SIGNAL_ANSWER, {"call_id": item["short_id"], "approver": "ann", "result": GOOD}
    )
    assert (await handle.result()).status is RunStatus.COMPLETED


async def test_a_signed_answer_is_required_and_taken(asking, model_server):
    handle = await waiting(
        asking, model_server, Call("ask_signed", {"question": "how many?"}, "s1")
    )
    [item] = await pending(handle)
    base = {"call_id": "s1", "decision": "answer", "approver": "alice", "result": 3}
    assert "requires a signed decision" in await refusal(handle, base)
    bound = {
        **base,
        "run_id": item["run_id"],
        "arguments_sha256": item["arguments_sha256"],
        "execution_id": item["execution_id"],
        "expires_at": (datetime.now(UTC) + timedelta(minutes=5)).isoformat(),
    }
    forged = {**ALICE.sign(bound), "result": 300}  # the answer changed after signing
    assert "does not verify" in await refusal(handle, forged)
    recorded = await decide_raw(handle, ALICE.sign(bound))
    assert (recorded.signed_by, recorded.result) == (ALICE.key_id, 3)
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert tool_message(model_server.requests[-1], "s1")["content"] == "3"


async def test_an_unanswered_call_is_rejected_at_its_deadline(asking, model_server):
    handle = await waiting(asking, model_server, Call("ask_quickly", {"question": "?"}, "q1"))
    assert (await handle.result()).status is RunStatus.COMPLETED
    result = tool_results(await state_of(handle))["q1"]
    assert result.is_error and "approval deadline" in result.content
    assert "q1" in json.dumps(tool_message(model_server.requests[-1], "q1"))


async def test_a_rejected_question_tells_the_model(asking, model_server):
    handle = await waiting(asking, model_server)
    [item] = await pending(handle)
    await handle.signal(
        contract.SIGNAL_REJECT,
        {"call_id": item["short_id"], "approver": "ann", "reason": "not our order"},
    )
    assert (await handle.result()).status is RunStatus.COMPLETED
    sent = tool_message(model_server.requests[-1], "c1")["content"]
    assert "rejected by ann: not our order" in sent


async def test_hostile_decide_payloads_are_refused_and_the_run_goes_on(asking, model_server):
    handle = await waiting(asking, model_server)
    deep: object = 1
    for _ in range(150):
        deep = [deep]
    hostile = [
        {"call_id": "c1", "decision": "answer", "approver": "m", "result": deep},
        {"call_id": 1, "decision": "answer", "approver": "m", "result": GOOD},
        {"call_id": "c1", "decision": "answer", "result": GOOD},
        {"call_id": "c1", "decision": "answer", "approver": "m", "result": GOOD, "x": 1},
        {"call_id": "c1", "decision": "maybe", "approver": "m", "result": GOOD},
        {"call_id": "c1", "decision": "answer", "approver": "m", "result": "x" * 40_000},
        [1, 2],
    ]
    for payload in hostile:
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(contract.UPDATE_DECIDE, payload, result_type=Decision)
    for payload in hostile[:2]:  # the same as signals: recorded as refused
        await handle.signal(contract.SIGNAL_ANSWER, payload)
    deepest = '{"call_id": "c1", "approver": "m", "result": ' + "[" * 5000 + "]" * 5000 + "}"
    await temporal_cli(  # deeper than any JSON reader here follows: refused, not a crash
        asking, "workflow", "signal", "--workflow-id", handle.id,
        "--name", "answer", "--input", deepest,
    )  # fmt: skip
    state = await state_of(handle)
    refused = [r.refused_because or "" for r in state.refused_decisions]
    assert len(refused) == 3, refused
    assert "result: nested 150 deep, at most 32" in refused[0]
    assert "call_id: Input should be a valid string" in refused[1]
    assert refused[2].startswith("invalid answer payload:")
    assert not [i for i in state.items if isinstance(i, Decision)]
    await handle.signal(
        contract.SIGNAL_ANSWER, {"call_id": "c1", "approver": "ann", "result": GOOD}
    )
    assert (await handle.result()).status is RunStatus.COMPLETED
    assert await workflow_task_failures(handle) == 0


async def test_numbers_json_cannot_hold_are_refused_from_the_cli_and_the_run_goes_on(
    asking, model_server
):
    """`1e400` is valid JSON, which pydantic reads as inf: taken, no digest of the next
    model request held, and the run failed. Refused now, in an answer and in an
    approval's metadata, sent as written by the `temporal` CLI."""
    handle = await waiting(asking, model_server)
    for text in (
        '{"call_id": "c1", "approver": "m", "result": {"account": "A", "amount": 1e400}}',
        '{"call_id": "c1", "approver": "m", "result": {"account": "A", "amount": -1e400}}',
    ):
        await temporal_cli(
            asking, "workflow", "signal", "--workflow-id", handle.id,
            "--name", "answer", "--input", text,
        )  # fmt: skip
    await temporal_cli(
        asking, "workflow", "signal", "--workflow-id", handle.id, "--name", "reject",
        "--input", '{"call_id": "c1", "approver": "m", "metadata": {"ticket": 1e400}}',
    )  # fmt: skip
    state = await state_of(handle)
    refused = [r.refused_because or "" for r in state.refused_decisions]
    assert len(refused) == 3 and all("not finite" in why for why in refused), refused
    assert state.status is RunStatus.AWAITING_APPROVAL
    await handle.signal(contract.SIGNAL_ANSWER, {"call_id": "c1", "approver": "m", "result": GOOD})
    assert (await handle.result()).status is RunStatus.COMPLETED
