"""`get_state` is readable by any client at any size (workflows.state_pages): the
`temporal` CLI, with no converter of ours, reads a run holding a 5 MB tool result
inline, page by page, checked against the published schema; AgentClient puts the
pages together; and what the CLI prints (nulls for empty lists) starts a run again
as `resume_from`."""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from pathlib import Path

import jsonschema
import pytest
from durable_agents.client.agent_client import AgentClient
from durable_agents.workflows import contract
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.state import RunStatus
from durable_agents.workflows.state_pages import DEFAULT_PAGE_BYTES
from temporalio.client import Client

from durable_agents.dataplane.codec import data_converter
from durable_agents.dataplane.payload_store import external_storage
from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.support.runs import (
    refused_start,
    start,
    state_of,
    temporal_cli,
    tool_results,
    wait_for_status,
)

BLOB = 5_000_000
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas" / "payloads"


@pytest.fixture
async def store_worker(env, model_server):
    """A worker with the session's payload store, as `worker.py` has: a query answer
    over its threshold would reach a client without our converter as a reference."""
    target = env.client.service_client.config.target_host
    converter = data_converter(None, external_storage())
    client = await Client.connect(target, namespace=env.client.namespace, data_converter=converter)
    async with serving(client, model_server) as running:
        yield running


async def raw_get_state(worker, run_id: str, *args: dict) -> dict:
    """`get_state` as a plain temporalio client (the SDK's default JSON converter) reads it."""
    raw = await Client.connect(worker.address, namespace=worker.namespace)
    answer = await raw.get_workflow_handle(run_id).query(
        contract.QUERY_GET_STATE, args=list(args), result_type=dict
    )
    assert isinstance(answer, dict), answer  # JSON, not a store reference
    return answer


def answer_schema() -> jsonschema.Validator:
    schema = json.loads((SCHEMAS / "get_state.schema.json").read_text())
    return jsonschema.validators.validator_for(schema)(schema)


def wire_size(answer: dict) -> int:
    """The answer's size as the worker sent it (compact JSON, UTF-8)."""
    return len(json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode())


async def cli_get_state(worker, run_id: str, argument: dict | None = None) -> dict:
    """`temporal workflow query --name get_state -o json`: the answer as printed (the CLI
    prints an empty list as null)."""
    extra = [] if argument is None else ["--input", json.dumps(argument)]
    out = await temporal_cli(
        worker, "workflow", "query", "--workflow-id", run_id, "--name",
        contract.QUERY_GET_STATE, "-o", "json", *extra,
    )  # fmt: skip
    [result] = json.loads(out)["queryResult"]
    return result


async def test_the_cli_reads_a_five_megabyte_state_inline_page_by_page(store_worker, model_server):
    worker = store_worker
    model_server.script(
        Reply(tool_calls=(Call("blob", {"size": BLOB}, call_id="b1"),)),
        Reply(content="got it"),
    )
    handle = await start(worker, "make me a blob")
    await handle.result()
    first = await cli_get_state(worker, handle.id)
    validator = answer_schema()
    inline = await raw_get_state(worker, handle.id)  # JSON: not a reference into the store
    assert wire_size(inline) <= DEFAULT_PAGE_BYTES
    validator.validate(inline)
    [cut] = [c for c in first["page"]["cut"] if c["pointer"].startswith("/items/")]
    assert cut["chars"] == BLOB and cut["pointer"].endswith("/content")
    assert cut["kind"] == "string"
    assert first["page"]["next_item"] is None and first["status"] == "completed"
    # What a Go service would do, chunk after chunk; each answer stays inline (a larger
    # max_bytes passes the worker's payload store threshold: a reference, for Python).
    for offset in (0, BLOB // 2, BLOB - 5):
        chunk = await cli_get_state(worker, handle.id, {"text": cut["pointer"], "offset": offset})
        raw = await raw_get_state(worker, handle.id, {"text": cut["pointer"], "offset": offset})
        assert wire_size(raw) <= DEFAULT_PAGE_BYTES  # the CLI prints [] as null: 2 more
        text = chunk["page"]["text"]
        assert text["offset"] == offset and set(text["text"]) == {"B"}
        assert text["next_offset"] == (None if offset == BLOB - 5 else offset + len(text["text"]))
    pointer = {"text": cut["pointer"], "offset": BLOB - 10}
    validator.validate(await raw_get_state(worker, handle.id, pointer))
    state = await state_of(handle)  # the Python reader: the same, put together
    content = tool_results(state)["b1"].content
    assert content == "B" * BLOB
    assert hashlib.sha256(content.encode()).hexdigest() == cut["sha256"]


async def test_a_hostile_state_argument_is_refused_by_the_cli(worker, model_server):
    model_server.script(Reply(content="done"))
    handle = await start(worker)
    await handle.result()
    for argument in ({"from_item": -5}, {"max_bytes": "big"}, {"text": "/nope"}):
        process = await asyncio.create_subprocess_exec(
            *cli_args(worker, handle.id, argument),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await process.communicate()
        assert process.returncode != 0
        assert "get_state" in err.decode() or "names nothing" in err.decode(), err.decode()
        assert "Traceback" not in err.decode()


def cli_args(worker, run_id: str, argument: dict) -> list[str]:
    from durable_agents.worker import temporal_binary

    return [
        temporal_binary(), "workflow", "query", "--workflow-id", run_id,
        "--name", contract.QUERY_GET_STATE, "--input", json.dumps(argument),
        "--address", worker.address, "--namespace", worker.namespace,
    ]  # fmt: skip


async def test_what_the_cli_prints_starts_a_run_again_as_resume_from(
    worker, model_server, tmp_path
):
    model_server.script(
        Reply(tool_calls=(Call("send_email", {"to": "a", "body": "hi"}, call_id="e1"),))
    )
    handle = await start(worker)
    await wait_for_status(handle, RunStatus.AWAITING_APPROVAL)
    printed = await cli_get_state(worker, handle.id)
    assert printed["refused_decisions"] is None  # the CLI's rendering of an empty list
    answer_schema().validate(await raw_get_state(worker, handle.id))
    run_id = f"cli-resume-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "start.json"
    path.write_text(json.dumps({"agent": "assistant", "input": "", "resume_from": printed}))
    await temporal_cli(
        worker, "workflow", "start", "--type", contract.WORKFLOW_TYPE,
        "--task-queue", worker.task_queue, "--workflow-id", run_id, "--input-file", str(path),
    )  # fmt: skip
    resumed = worker.client.get_workflow_handle(run_id, result_type=AgentResult)
    view = await wait_for_status(resumed, RunStatus.AWAITING_APPROVAL)
    assert view.pending_approvals == 1
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    assert [i.type for i in (await agents.state(run_id)).items] == [
        i.type for i in (await state_of(handle)).items
    ]
    await resumed.terminate("done")
    page = {**printed, "page": {"from_item": 0, "next_item": 3}}  # not the whole state
    refusal = await refused_start(
        worker, tmp_path, {"agent": "assistant", "input": "", "resume_from": page}
    )
    assert "resume_from: invalid snapshot at $.page: this is one page of a run's state" in refusal
    await handle.terminate("done")


async def test_a_client_without_the_payload_store_reads_in_inline_pages(
    store_worker, model_server, env
):
    model_server.script(
        Reply(tool_calls=(Call("blob", {"size": 200_000}, call_id="b1"),)),
        Reply(content="got it"),
    )
    handle = await start(store_worker, "make me a blob")
    await handle.result()
    assert env.client.data_converter.external_storage is None
    plain = AgentClient(env.client, task_queue=store_worker.task_queue)
    state = await plain.state(handle.id)  # pages under the threshold: never a reference
    assert tool_results(state)["b1"].content == "B" * 200_000
