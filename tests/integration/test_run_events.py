"""A run's events (Workflow Streams topic `events`) against the real dev server, worker
and scripted model: in order, numbered, each once, followed live and read once, across
continue-as-new, from an offset; only the run writes them (a forged publish is
refused); followers are bounded and released when the run ends."""

from __future__ import annotations

import asyncio
import json
import os
import pty
from datetime import timedelta

import pytest
from durable_agents.client import AgentClientError
from durable_agents.workflows import contract, event_stream
from durable_agents.workflows.event_models import RUN_EVENT
from durable_agents.workflows.signed_decisions import arguments_sha256
from durable_agents.workflows.state import RunStatus
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowUpdateFailedError
from temporalio.contrib.workflow_streams import PollInput, PollResult

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from tests.support.cli_support import AGENTCTL, bound_to, error_lines
from tests.support.histories import patch_markers
from tests.support.runs import start, state_of, wait_for_status

REFUND = Call("refund", {"order": "A12", "amount": 250}, call_id="r1")


def types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


async def collect(iterator, *, timeout: float = 30) -> list[dict]:
    async with asyncio.timeout(timeout):
        return [e async for e in iterator]


@pytest.mark.history("run_events")
async def test_a_follower_sees_a_run_with_a_tool_and_an_approval_in_order(
    worker, model_server, scenario
):
    model_server.script(Reply(tool_calls=(REFUND,)), Reply("refunded"))
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "refund A12", agent="assistant")
    scenario.run(handle)
    seen: list[dict] = []

    async def follow() -> None:
        async for event in agents.events(handle.id):
            seen.append(event)

    follower = asyncio.create_task(follow())
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    async with asyncio.timeout(30):
        while "approval_requested" not in types(seen):
            await asyncio.sleep(0.05)
    asked = seen[-1]
    assert asked["call_id"] == "r1" and asked["tool"] == "refund"
    assert asked["args"] == {"order": "A12", "amount": 250}
    assert "temporal workflow signal" in asked["answer"]["temporal_cli"]["approve"]
    await agents.approve(handle.id, "r1", approver="ann")
    async with asyncio.timeout(20):
        await follower
    assert types(seen) == [
        "run_started",
        "turn_started",
        "model_finished",
        "tool_proposed",
        "approval_requested",
        "approval_decided",
        "tool_started",
        "tool_finished",
        "turn_started",
        "model_finished",
        "run_finished",
    ]
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
    for event in seen:
        assert list(event)[:5] == ["seq", "type", "at", "run_id", "agent"]
        assert event["run_id"] == handle.id and event["agent"] == "assistant"
        RUN_EVENT.validate_python(event)  # the published schema, strictly
    by_type = {e["type"]: e for e in seen}
    assert by_type["tool_proposed"]["call"] == "refund(order=A12, amount=250)"
    assert by_type["tool_proposed"]["needs_approval"] is True
    assert by_type["approval_decided"]["approver"] == "ann"
    assert by_type["tool_finished"]["result"] == "refunded 250.0 on A12"
    assert by_type["run_finished"]["status"] == "completed"
    assert by_type["run_finished"]["final_output"] == "refunded"
    assert seen[2]["usage"]["total_tokens"] > 0
    # Read once, after the end: the same events, and from an offset, the rest.
    again = await collect(agents.events(handle.id, follow=False))
    assert again == seen
    tail = await collect(agents.events(handle.id, after=8, follow=False))
    assert tail == seen[8:]
    followed_after_end = await collect(agents.events(handle.id, after=9))
    assert followed_after_end == seen[9:]


async def test_seq_stays_monotonic_across_continue_as_new(worker, model_server):
    # concierge continues as new every 2 model calls (and makes 4 at most).
    model_server.script(
        *(Reply(tool_calls=(Call("add", {"a": i, "b": 1}, call_id=f"a{i}"),)) for i in range(3)),
        Reply("done"),
    )
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "count", agent="concierge")
    seen = await collect(agents.events(handle.id), timeout=30)
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
    assert types(seen).count("continued_as_new") == 1
    assert types(seen).index("continued_as_new") == types(seen).index("tool_finished", 6) + 1
    assert types(seen).count("run_started") == 1
    assert types(seen)[-1] == "run_finished"
    assert types(seen).count("tool_finished") == 3
    assert seen[-1]["status"] == "completed" and seen[-1]["turn"] == 4
    # Read once after the end (the last workflow run's log carries the earlier ones).
    assert await collect(agents.events(handle.id, follow=False)) == seen
    # No workflow run of the chain writes a patch marker: 1.0 has no patch (patches.ORDER).
    for run_id in (handle.first_execution_run_id, None):
        run = worker.client.get_workflow_handle(handle.id, run_id=run_id)
        events = json.loads((await run.fetch_history()).to_json())["events"]
        assert patch_markers(events) == []


async def test_a_forged_publish_is_refused_and_adds_no_event(worker, model_server):
    model_server.script(Reply(tool_calls=(REFUND,)))
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "refund A12", agent="assistant")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    forged = {
        "items": [{"topic": "events", "data": "bm90IGEgcGF5bG9hZA=="}],
        "publisher_id": "mallory",
        "sequence": 1,
    }
    await handle.signal(contract.STREAM_PUBLISH_SIGNAL, forged)
    await handle.signal(contract.STREAM_PUBLISH_SIGNAL, "garbage")
    state = await state_of(handle)
    refused = [r for r in state.refused_signals if r.signal == contract.STREAM_PUBLISH_SIGNAL]
    gate = "not published by a model call of this deployment's workers"
    assert [r.refused_because for r in refused] == [
        f"{gate} (no gate tag)",
        f"{gate} (not a batch)",
    ]
    events = await collect(agents.events(handle.id, follow=False))
    assert types(events)[-1] == "approval_requested"
    assert all(e["agent"] == "assistant" for e in events)
    await handle.cancel()


def poll(handle, offset: int):
    return handle.execute_update(
        contract.STREAM_POLL,
        PollInput(topics=["events"], from_offset=offset),
        result_type=PollResult,
    )


async def updates_accepted(handle) -> int:
    """The updates the run has accepted so far (a waiting poll is one)."""
    accepted = EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    return sum([e.event_type == accepted async for e in handle.fetch_history_events()])


async def test_followers_are_bounded_and_hostile_polls_are_answered(
    worker, model_server, monkeypatch
):
    monkeypatch.setattr(event_stream, "POLL_WAIT", timedelta(seconds=2))
    model_server.script(Reply(tool_calls=(REFUND,)), Reply("refunded"))
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "refund A12", agent="assistant")
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    end = len(await collect(agents.events(handle.id, follow=False)))
    for hostile in (end + 1, 10_000, -1):
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await poll(handle, hostile)
        assert f"not an offset of this run's events (0 to {end})" in str(refused.value.cause)
    with pytest.raises(WorkflowUpdateFailedError):  # not a poll request at all
        await handle.execute_update(contract.STREAM_POLL, "garbage")
    accepted = await updates_accepted(handle)
    waiting = [asyncio.create_task(poll(handle, end)) for _ in range(4)]
    async with asyncio.timeout(30):  # the four wait in the run: in its history, not slept on
        while await updates_accepted(handle) < accepted + 4:
            await asyncio.sleep(0.05)
    with pytest.raises(AgentClientError, match="4 followers already wait"):
        await collect(agents.events(handle.id), timeout=10)
    # Once a waiting poll is older than POLL_WAIT, a new follower takes its place: the
    # oldest is answered with no event (a follower that went away frees its place).
    await asyncio.sleep(2.5)
    newcomer = asyncio.create_task(poll(handle, end))
    async with asyncio.timeout(30):
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    assert [t.result().items for t in done] == [[]]
    # A decision still gets through (its update slot was kept), and the run ends: the
    # waiting polls are answered with the events since.
    await agents.decide(handle.id, "r1", "approve", approver="ann")
    result = await handle.result()
    assert result.status is RunStatus.COMPLETED
    async with asyncio.timeout(30):
        answers = await asyncio.gather(*waiting, newcomer)
    assert all(isinstance(a, PollResult) for a in answers)
    assert answers[-1].items and answers[-1].items[0].offset == end


async def test_a_poll_answer_is_bounded_and_the_rest_follows(worker, model_server, monkeypatch):
    monkeypatch.setattr(event_stream, "POLL_ANSWER_EVENTS", 3)
    model_server.script(Reply("hello"))
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "hi", agent="assistant", session=True)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    model_server.script(Reply("again"))
    await agents.message(handle.id, "more")
    async with asyncio.timeout(30):  # 5 events: the second answer is in
        while len(await collect(agents.events(handle.id, follow=False))) < 5:
            await asyncio.sleep(0.05)
    first = await poll(handle, 0)
    assert [i.offset for i in first.items] == [0, 1, 2] and first.more_ready
    assert first.next_offset == 3
    await agents.end_session(handle.id)
    seen = await collect(agents.events(handle.id, follow=False))
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
    assert types(seen)[-1] == "run_finished"


async def test_an_unknown_run_is_a_clear_error(worker):
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    with pytest.raises(AgentClientError, match="no-such-run"):
        await collect(agents.events("no-such-run", follow=False))
    with pytest.raises(AgentClientError, match="after must be"):
        await collect(agents.events("no-such-run", after=-1))


async def read_until(master: int, marker: str, seen: bytearray, timeout: float = 30) -> str:
    """Read the pseudo-terminal until `marker` shows (the output so far)."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout):
        while marker not in seen.decode(errors="replace"):
            try:
                chunk = await loop.run_in_executor(None, os.read, master, 4096)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            seen.extend(chunk)
    return seen.decode(errors="replace")


async def test_agentctl_watch_follow_in_a_terminal_prints_events_live(worker, model_server):
    model_server.script(Reply(tool_calls=(REFUND,)), Reply("refunded \x1b[2J for you"))
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "refund A12", agent="assistant")
    master, slave = pty.openpty()
    process = await asyncio.create_subprocess_exec(
        AGENTCTL,
        "--address",
        worker.address,
        "--namespace",
        worker.namespace,
        "--task-queue",
        worker.task_queue,
        "watch",
        handle.id,
        "--follow",
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    seen = bytearray()
    try:
        shown = await read_until(master, "APPROVAL NEEDED", seen)
        assert process.returncode is None  # still following: the run waits
        assert "#4 proposed refund(order=A12, amount=250) [r1] · needs approval" in shown
        await read_until(master, "--reason R", seen)
        await agents.approve(handle.id, "r1", approver="ann")
        shown = await read_until(master, "run completed", seen)
        async with asyncio.timeout(10):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
        os.close(master)
    lines = shown.replace("\r\n", "\n").splitlines()
    seen_digest = arguments_sha256({"order": "A12", "amount": 250})[:16]  # what was shown
    approve = f"agentctl approve {handle.id} r1 --sha256 {seen_digest}"
    assert f"{approve}  |  agentctl reject {handle.id} r1 --reason R" in lines[5].strip()
    assert "approved refund [r1] by ann" in shown
    assert 'refund [r1] returned: "refunded 250.0 on A12"' in shown
    assert "\x1b" not in shown and "\\u{1b}[2J" in shown  # the model cannot drive the terminal
    assert lines[-1].endswith('run completed at turn 2 · "refunded \\u{1b}[2J for you"')


async def test_agentctl_watch_follow_json_prints_the_pinned_objects(worker, model_server):
    model_server.script(Reply("hello"))
    ctl = bound_to(worker)
    handle = await start(worker, "hi", agent="assistant")
    followed = await ctl("watch", handle.id, "--follow", "--json", "--timeout", "20")
    assert followed.code == 0, followed.stderr
    events = [json.loads(line) for line in followed.stdout.splitlines()]
    assert types(events) == ["run_started", "turn_started", "model_finished", "run_finished"]
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    assert events == await collect(agents.events(handle.id, follow=False))
    after = await ctl("watch", handle.id, "--after", "2", "--json")
    assert [json.loads(line)["seq"] for line in after.stdout.splitlines()] == [3, 4]
    bad = await ctl("watch", handle.id, "--follow", "--after", "-1")
    assert bad.code == 2 and "must be at least 0" in bad.stderr
    unknown = await ctl("watch", "no-such-run", "--follow")
    assert unknown.code == 1
    assert error_lines(unknown.stderr) and "no-such-run" in unknown.stderr


async def test_old_events_are_trimmed_and_a_late_reader_is_told(worker, model_server, monkeypatch):
    monkeypatch.setattr(event_stream, "EVENTS_KEPT", 4)
    model_server.script(
        Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, call_id="a1"),)), Reply("3")
    )
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    handle = await start(worker, "add", agent="assistant")
    await handle.result()
    kept = await collect(agents.events(handle.id, follow=False))
    assert kept[0]["type"] == "truncated"
    first_kept = kept[1]["seq"]
    assert kept[0] == {**kept[0], "seq": first_kept - 1, "missed": first_kept - 1}
    assert [e["type"] for e in kept[1:]] == [
        "tool_finished",
        "turn_started",
        "model_finished",
        "run_finished",
    ]
    assert await collect(agents.events(handle.id, after=first_kept - 1, follow=False)) == kept[1:]
    late = await collect(agents.events(handle.id, after=2))  # following: told the same way
    assert late[0]["type"] == "truncated" and late[0]["missed"] == first_kept - 3
    assert late[1:] == kept[1:]


async def test_a_session_across_continue_as_new_keeps_seq_monotonic(worker, model_server):
    model_server.script(Reply("one"), Reply("two"), Reply("three"))
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    run = await agents.start("concierge", "first", session=True)  # a new run every 2 calls
    handle = worker.client.get_workflow_handle(run.id)
    for text in ("second", "third"):
        await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        await agents.message(run.id, text)
    await wait_for_status(handle, RunStatus.AWAITING_INPUT)
    await agents.end_session(run.id)
    seen = await collect(agents.events(run.id))
    assert [e["seq"] for e in seen] == list(range(1, len(seen) + 1))
    assert types(seen).count("continued_as_new") >= 1 and types(seen)[-1] == "run_finished"
    assert [e["text"] for e in seen if e["type"] == "model_finished"] == ["one", "two", "three"]
