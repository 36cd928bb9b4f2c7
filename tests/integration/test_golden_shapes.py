"""The golden fixtures against what a real export writes today: for each shape
(`tests.support.snapshot_golden.SHAPES`), a fresh export of a run on a real worker
has no key its fixture lacks, so a fixture cannot fall behind the model unnoticed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from durable_agents.client import AgentClient
from durable_agents.workflows.state import SCHEMA_VERSION, RunStatus

from durable_agents.testing import Call, Reply
from tests.integration.test_snapshots_e2e import EMAIL, wait_for, waiting_run
from tests.integration.test_tree_approvals import mailer_replies, pending_below
from tests.support.multi_agents import by_model
from tests.support.snapshot_golden import golden_text


@pytest.fixture
def client(worker) -> AgentClient:
    return AgentClient(worker.client, task_queue=worker.task_queue)


def key_paths(document: dict[str, Any], root: str = "$") -> set[str]:
    """The keys RunState's models write in a snapshot document, as paths: an item's
    under its type, a tool's and a sub-run's under `[]`, a sub-run's state as the root
    (it is a RunState too). User data (context, arguments, schemas) is not a shape."""
    found = {f"{root}.{key}" for key in document}
    found |= {f"{root}.integrity.{key}" for key in document.get("integrity", {})}
    found |= {f"{root}.agent.{key}" for key in document["agent"]}
    found |= {f"{root}.agent.tools[].{key}" for tool in document["agent"]["tools"] for key in tool}
    found |= {f"{root}.items[{item['type']}].{key}" for item in document["items"] for key in item}
    for sub in document.get("sub_runs", []):
        found |= {f"{root}.sub_runs[].{key}" for key in sub}
        found |= key_paths(sub["state"], root)
    return found


def assert_shape_of(shape: str, exported: str) -> None:
    fresh, golden = json.loads(exported), json.loads(golden_text(shape))
    assert fresh["schema_version"] == golden["schema_version"] == SCHEMA_VERSION
    missing = key_paths(fresh) - key_paths(golden)
    assert not missing, (
        f"a fresh export writes keys the {shape!r} golden fixture lacks: {sorted(missing)}; "
        "add them to the fixture, then run python -m tests.support.snapshot_golden"
    )


def test_a_key_the_fixture_lacks_is_found():
    document = json.loads(golden_text("tree"))
    document["sub_runs"][0]["state"]["items"][0]["mood"] = "new"
    assert "$.items[user_message].mood" in key_paths(document) - key_paths(
        json.loads(golden_text("tree"))
    )


async def test_a_fresh_single_and_paused_export_have_the_shape_of_their_fixtures(
    client, model_server
):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    run_id, single = await waiting_run(client)
    assert_shape_of("single", single)
    await client.pause(run_id, by="oncall", reason="audit")
    await wait_for(client, run_id, RunStatus.PAUSED)
    assert_shape_of("paused", await client.export(run_id))


async def test_a_fresh_tree_export_has_the_shape_of_its_fixture(team, model_server):
    model_server.responder = by_model(
        {
            "lead-model": [
                Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),)),
                Reply(content="Done."),
            ],
            "mail-model": mailer_replies("n1"),
        }
    )
    client = AgentClient(team.client, task_queue=team.task_queue)
    run_id = (await client.start("lead", "tell ann")).id
    await pending_below(client, run_id, 1)
    exported = await client.export(run_id)
    assert [sub["call_id"] for sub in json.loads(exported)["sub_runs"]] == ["c1"]
    assert_shape_of("tree", exported)
