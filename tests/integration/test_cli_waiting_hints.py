"""What agentctl says when a run has no call for `pending` or `approve` yet: where the run
is and what to type next (client/waiting_hints.py). A newcomer types `pending` right after
`start`, while the model still answers; a bare "no pending approvals" there read as a bug.
Against a real worker, through the real console script."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from durable_agents.testing import Call, Hang, Reply
from tests.support.cli_support import Ctl, bound_to, error_lines, wait_for_status

EMAIL = Call("send_email", {"to": "a@b.c", "body": "hi"}, call_id="call_email")


async def until_asked(model_server, count: int) -> None:
    """Until the model server has been asked `count` times (the run's model call is out)."""
    async with asyncio.timeout(60):
        while len(model_server.requests) < count:
            await asyncio.sleep(0.05)


@pytest.fixture
def ctl(worker) -> Ctl:
    return bound_to(worker)


async def test_pending_and_approve_on_a_run_whose_model_still_answers_say_so(ctl, model_server):
    asked = len(model_server.requests)
    model_server.script(Hang(600))  # the model call stays out until the server stops
    run_id = f"hint-{uuid.uuid4().hex[:8]}"
    assert (await ctl("start", "assistant", "mail a@b.c", "--id", run_id)).code == 0
    await until_asked(model_server, asked + 1)

    pending = await ctl("pending", run_id)
    assert pending.code == 0, pending.stderr
    assert pending.stdout.strip() == (
        f"no pending approvals: run {run_id} is running: the model or a tool is "
        f"still at work; `agentctl watch {run_id}` waits until the run needs a decision"
    )
    assert (await ctl("pending", run_id, "--json")).json() == []  # JSON stays the list

    early = await ctl("approve", run_id, "r1", "--as", "ann")
    assert early.code == 1
    assert error_lines(early.stderr) == [
        f"agentctl: error: approval of call r1 refused here: it is not pending in run "
        f"{run_id}: run {run_id} is running: the model or a tool is still at "
        f"work; `agentctl watch {run_id}` waits until the run needs a decision"
    ]
    assert (await ctl("cancel", run_id)).code == 0


async def test_a_call_id_that_is_not_the_waiting_one_names_those_that_wait(ctl, model_server):
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="done"))
    run_id = (await ctl("start", "assistant", "mail", "--json")).json()["run_id"]
    await wait_for_status(ctl, run_id, "awaiting_approval")

    # a hostile call id: escape sequences and a right-to-left override, shown inert
    wrong = await ctl("approve", run_id, "r1\x1b[2J\u202e", "--as", "ann")
    assert wrong.code == 1
    assert error_lines(wrong.stderr) == [
        "agentctl: error: approval of call r1\\u{1b}[2J\\u{202e} refused here: it is not "
        f"pending in run {run_id}; waiting there: call_email (`agentctl pending {run_id}` "
        "shows them)"
    ]
    assert (await ctl("approve", run_id, "call_email", "--as", "ann")).code == 0
    assert "completed" in (await ctl("result", run_id)).stdout

    ended = await ctl("pending", run_id)
    assert ended.stdout.strip() == (
        f"no pending approvals: run {run_id} has ended (completed, turn 2)"
    )
    late = await ctl("approve", run_id, "call_other", "--as", "ann")
    assert late.code == 1
    assert error_lines(late.stderr)[0].endswith(
        f"it is not pending in run {run_id}: run {run_id} has ended (completed, turn 2)"
    )


async def test_pending_on_a_session_waiting_for_a_message_says_how_to_send_one(ctl, model_server):
    model_server.script(Reply(content="hello"))
    run_id = (await ctl("start", "assistant", "hi", "--session", "--json")).json()["run_id"]
    await wait_for_status(ctl, run_id, "awaiting_input")

    pending = await ctl("pending", run_id)
    assert pending.stdout.strip() == (
        f"no pending approvals: run {run_id} is awaiting_input: it waits for a "
        f"message (`agentctl message {run_id} TEXT`)"
    )
    assert (await ctl("end", run_id)).code == 0
