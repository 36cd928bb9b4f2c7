"""A run asks its patches when it starts (`patches.ask_at_start`): the level, which
counts every patch before it, then each patch added after the level; nothing later."""

from __future__ import annotations

import json

from durable_agents.workflows import patches
from durable_agents.workflows.state import RunStatus

from durable_agents.testing import Call, Reply
from tests.support.histories import patch_markers
from tests.support.runs import start


async def test_a_new_run_writes_its_markers_when_it_starts(worker, model_server):
    """Its level's, and one for each patch added after the level (`guarded-returns`):
    all in its first workflow task, none later."""
    model_server.script(Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "c1"),)), Reply("3"))
    handle = await start(worker, "add", agent="assistant")
    assert (await handle.result()).status is RunStatus.COMPLETED
    events = json.loads((await handle.fetch_history()).to_json())["events"]
    first_task = next(
        int(e["eventId"]) for e in events if "workflowTaskCompletedEventAttributes" in e
    )
    assert patch_markers(events) == [(p, first_task) for p in patches.written_at_start()]
    assert patches.written_at_start()[0] == patches.LEVELS[-1]


async def test_a_patch_added_after_the_level_is_asked_right_after_it(
    worker, model_server, monkeypatch
):
    """As a build with a patch newer than the level would run it (workflows run
    unsandboxed in the worker, so the worker reads the patched `ORDER`)."""
    later = "a-later-patch"
    monkeypatch.setattr(patches, "ORDER", (*patches.ORDER, later))
    monkeypatch.setattr(patches, "_RANK", {p: n for n, p in enumerate(patches.ORDER)})
    model_server.script(Reply("hello"))
    handle = await start(worker, "hi", agent="assistant")
    assert (await handle.result()).status is RunStatus.COMPLETED
    events = json.loads((await handle.fetch_history()).to_json())["events"]
    markers = patch_markers(events)
    assert [p for p, _ in markers] == patches.written_at_start()  # the later one included
    [(level, task), *_, (asked, same_task)] = markers
    assert (level, asked, same_task) == (patches.LEVELS[-1], later, task)
