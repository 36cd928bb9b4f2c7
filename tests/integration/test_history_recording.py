"""The scenario recording hook (`tests/support/recording.py`, `make record-histories`)
end to end: a run a test makes is written as its scenario's history with the id it
replays under, replays as test_replay replays a release's histories, and is never
overwritten; what a test names is checked before anything is written. (The whole set:
`make record-histories HISTORIES_INTO=/tmp/hist`, then replay that folder.)"""

from __future__ import annotations

import json
import re

import pytest
from durable_agents.workflows.state import RunStatus

from durable_agents import gate
from durable_agents.testing import Call, Reply
from tests.conftest import NO_DRAIN, serving
from tests.support.histories import recorded_id, replayed
from tests.support.recording import HistoryRecorder, recorded_already, stored_ids
from tests.support.runs import start


async def test_a_scenarios_run_is_written_once_and_replays_under_its_own_id(
    env, model_server, tmp_path, monkeypatch
):
    monkeypatch.setenv(gate.ENV, gate.DEVELOPMENT_KEY_ID)  # as record mode runs workers
    model_server.script(Reply(tool_calls=(Call("add", {"a": 1, "b": 2}, "a1"),)), Reply("3"))
    async with serving(env.client, model_server, drain=NO_DRAIN) as worker:
        handle = await start(worker)
        assert (await handle.result()).status is RunStatus.COMPLETED
    recorder = HistoryRecorder(name="mailed", client=env.client)
    recorder.run(handle)

    written = await recorder.save(tmp_path)

    assert [p.name for p in written] == ["mailed.json"]
    assert stored_ids(tmp_path) == {"mailed.json": handle.id}
    assert recorded_id(tmp_path / "mailed.json") == handle.id
    assert (await replayed(tmp_path / "mailed.json")).replay_failure is None
    events = json.loads((tmp_path / "mailed.json").read_text())["events"]
    assert events[-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"
    assert recorded_already(tmp_path, "mailed") == [tmp_path / "mailed.json"]

    # recorded again (a second record run, a scenario named twice): refused, nothing touched
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(FileExistsError, match="never overwritten"):
        await recorder.save(tmp_path)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before

    # a folder of histories recorded before the hook (1.0's): never added to
    old = tmp_path / "1.0"
    old.mkdir()
    (old / "approvals.json").write_text('{"events": []}')
    with pytest.raises(FileExistsError, match="recorded before this hook"):
        await recorder.save(old)
    assert [p.name for p in old.iterdir()] == ["approvals.json"]


async def test_what_a_scenario_names_is_checked_before_anything_is_written(env, tmp_path):
    """Hostile or mistaken names never reach the file system: a name or child part
    that is not a plain stem (a path, `__`, upper case, too long), a run named twice,
    something that is not a run; a scenario that names no run writes nothing."""
    recorder = HistoryRecorder(name="probe", client=env.client)
    handle = env.client.get_workflow_handle("probe-run")
    for part in ("../escape", "a/b", "c__1", "C1", "x" * 65, "", " c1"):
        if part:
            with pytest.raises(ValueError, match="a child part must match"):
                recorder.run(handle, child=part)
    with pytest.raises(TypeError, match="takes a WorkflowHandle"):
        recorder.run("probe-run")  # type: ignore[arg-type]
    recorder.run(handle)
    with pytest.raises(ValueError, match="the root is named twice"):
        recorder.run(handle)
    with pytest.raises(ValueError, match="named no run"):
        await HistoryRecorder(name="empty", client=env.client).save(tmp_path)
    with pytest.raises(ValueError, match=re.escape("no @pytest.mark.history name")):
        await HistoryRecorder(name=None, client=env.client).save(tmp_path)
    assert list(tmp_path.iterdir()) == []
