"""Where the recorded histories live and the workflow id each was recorded under.

Each release keeps the scenario histories recorded from it in a folder of its own
(`tests/histories/1.0/`), recorded once and never edited; CI replays every folder, so
a change that alters what a run of a supported release writes, made without a
`workflow.patched` (`workflows/patches.py`), fails `make test`. The scenarios are
integration tests marked `@pytest.mark.history(NAME)`; `make record-histories` runs
them in record mode into the built release's folder (`tests/support/recording.py`)."""

from __future__ import annotations

import base64
import json
import tomllib
from pathlib import Path

from durable_agents.workflows import agent_calls
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, WorkflowReplayResult

from durable_agents import gate
from durable_agents.gate import GateKeys
from durable_agents.gate_interceptor import GateInterceptor
from tests.support import recording

RELEASES = Path(__file__).resolve().parents[1] / "histories"
"""One folder per release, named MAJOR.MINOR."""
RELEASE = "1.0"
"""The latest release: its folder holds the newest recorded histories."""
HISTORIES = RELEASES / RELEASE


def built_release() -> str:
    """The release this checkout builds: pyproject's version, MAJOR.MINOR."""
    project = tomllib.loads((RELEASES.parents[1] / "pyproject.toml").read_text())["project"]
    return ".".join(project["version"].split(".")[:2])


def recorded() -> list[Path]:
    """Every release's recorded histories, oldest release first."""
    folders = sorted(RELEASES.iterdir(), key=lambda p: tuple(map(int, p.name.split("."))))
    return [path for folder in folders for path in sorted(folder.glob("*.json"))]


def recorded_id(path: Path) -> str:
    """The workflow id the run was recorded under. A run's id is part of its logic: a
    decision bound to another run's id is refused, so a history replays only under its
    own. A folder recorded by the tests' scenarios holds each file's id in its
    `ids.jsonl` (`recording.stored_ids`).

    1.0's folder has none: its recorder named each run `history-<name>`
    (`<name>.runN.json` is run N of `history-<name>`). A child run's
    file has `__` where its id has `/` (`<name>__c1.json` is the child of call c1 of
    `history-<name>`, whose id ends in the part the recording's gate key, the
    development key, made: `workflows.secret_ids`); `webhook_delivery.json` is the first
    delivery `webhooks` started, under the id it started it under."""
    stored = recording.stored_ids(path.parent)
    if stored is not None:
        if path.name not in stored:
            raise LookupError(f"{path.name} has no workflow id in {path.parent / recording.IDS}")
        return stored[path.name]
    name = path.stem.split(".")[0]
    if name == "webhook_delivery":  # the first delivery of `webhooks`, under its id there
        events = json.loads((path.parent / "webhooks.json").read_text())["events"]
        key = "startChildWorkflowExecutionInitiatedEventAttributes"
        return next(e[key]["workflowId"] for e in events if key in e)
    if "__" not in name:
        return f"history-{name}"

    caller, call_id = f"history-{name}".split("__", 1)
    plain = agent_calls.child_id(caller, call_id)
    part = gate.id_part(gate.GateKeys.development(), "dev", ["child", "default", caller, plain])
    return agent_calls.child_id(caller, call_id, f"~dev.{part}")


def replayed_workflows() -> list[type]:
    """The workflow classes the recorded histories are histories of, with what a worker
    serving MCP agents imports at start (`mcp_connections.mcp_plugin`): imported in a
    replayed workflow task instead, it can pass the SDK's 2 s deadlock limit on a
    loaded machine."""
    from durable_agents.workflows.agent_workflow import AgentWorkflow
    from durable_agents.workflows.webhook_delivery import WebhookDeliveryWorkflow
    from temporalio.mcp import TemporalMCPClient  # noqa: F401

    return [AgentWorkflow, WebhookDeliveryWorkflow]


async def replayed(path: Path) -> WorkflowReplayResult:
    """`path`'s history replayed on the current workflow code under the id it was
    recorded under, as a worker with the recording's keys (the development key) replays
    it: the ids of the children and deliveries a run started have a part only the keys
    make again, and every result's tag is checked."""
    history = WorkflowHistory.from_json(recorded_id(path), path.read_text())
    replayer = Replayer(
        namespace="default",
        interceptors=[GateInterceptor(GateKeys.development())],
        workflows=replayed_workflows(),
        data_converter=pydantic_data_converter,
    )
    return await replayer.replay_workflow(history, raise_on_replay_failure=False)


def payloads_of(node: object) -> list[dict[str, bytes]]:
    """Every payload of a history in its JSON form (`WorkflowHistory.to_json()`,
    parsed), its data and message type decoded: what a test searches for what must
    not be in history, since the JSON holds payloads base64-encoded."""
    found = []
    if isinstance(node, dict):
        if "data" in node and isinstance(node.get("metadata"), dict):
            kind = node["metadata"].get("messageType", "")
            found.append({"data": base64.b64decode(node["data"]), "type": base64.b64decode(kind)})
        for value in node.values():
            found += payloads_of(value)
    elif isinstance(node, list):
        for value in node:
            found += payloads_of(value)
    return found


def patch_markers(events: list[dict]) -> list[tuple[str, int]]:
    """The patch ids of a history's markers (its `WorkflowHistory.to_json()` events),
    and the workflow task each came with."""
    found = []
    for event in events:
        marker = event.get("markerRecordedEventAttributes", {})
        if marker.get("markerName") == "core_patch":
            [data] = payloads_of(marker["details"]["patch-data"])
            found.append(
                (json.loads(data["data"])["id"], int(marker["workflowTaskCompletedEventId"]))
            )
    return found


def after_local_tool(events: list[dict]) -> str:
    """The event right after the history's one local activity marker: a workflow task
    scheduled when the task that ran it was completed early to answer a query (the
    tool's result then reached the workflow in the next task)."""
    [at] = [
        n
        for n, e in enumerate(events)
        if e.get("markerRecordedEventAttributes", {}).get("markerName") == "core_local_activity"
    ]
    return events[at + 1]["eventType"]


RESULT_IN_NEXT_TASK = "EVENT_TYPE_WORKFLOW_TASK_SCHEDULED"
"""`after_local_tool` of a task completed early to answer a query."""
