"""agentctl's snapshot commands: `export`, `validate`, `resume`, `import-openai`, `fork`,
`schema` (see `client.cli`; `resume` and `fork` get the snapshot checked, and the fork
made, before connecting)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from durable_agents.client import snapshots
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import AgentClientError, InvalidSnapshot
from durable_agents.workflows.argument_view import safe
from durable_agents.workflows.payload_schemas import PAYLOADS, payload_schema
from durable_agents.workflows.payloads import AgentResult
from durable_agents.workflows.snapshot import json_schema
from durable_agents.workflows.state import RunState
from pydantic import BaseModel
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from durable_agents.signing import read_key


class StartedRun(BaseModel):
    """What `agentctl start --json` prints: the new run's id (and its result with --wait)."""

    run_id: str
    result: AgentResult | None = None


async def _export(args: argparse.Namespace, agents: AgentClient) -> str:
    if args.format == "openai-agents":
        if args.sign_key:
            raise AgentClientError("--sign-key signs snapshots; an openai-agents file is not one")
        snapshot = await agents.export_openai_state(args.run_id)
    else:
        sign_with = read_key(Path(args.sign_key)) if args.sign_key else None
        snapshot = await agents.export(args.run_id, sign_with=sign_with)
    if args.output is None:
        return snapshot.rstrip("\n")
    try:
        Path(args.output).write_text(snapshot, encoding="utf-8")
    except OSError as err:
        raise AgentClientError(f"cannot write {args.output}: {err.strerror or err}") from err
    print(f"exported run {args.run_id} to {args.output}", file=sys.stderr)
    return ""


async def _resume(args: argparse.Namespace, agents: AgentClient) -> str:
    # args.context is parsed already (client.cli._run), before connecting
    resumed = await agents.resume(
        args.snapshot, run_id=args.id, unpause=args.unpause, context=args.context
    )
    run_id = resumed.id
    output = StartedRun(run_id=run_id).model_dump_json(indent=2) if args.json else run_id
    if args.cancel_source:
        source = snapshots.loads(args.snapshot)
        try:
            print(await _cancel_source(agents, source, run_id), file=sys.stderr)
        except AgentClientError:
            print(output, flush=True)  # the new run is started: say which, whatever follows
            raise
    return output


async def _cancel_source(agents: AgentClient, source: RunState, resumed: str) -> str:
    """Cancel the execution the snapshot came from, if it still runs on this connection's
    namespace; never another run that has its id since (a resume that reused it, a
    namesake): the snapshot's `execution_id` names the execution. What was done."""
    if source.run_id == resumed:
        return f"the source run {source.run_id} ran elsewhere: the new run has its id here"
    by_hand = f"cancel it where it runs: agentctl cancel {source.run_id}"
    if source.execution_id is None:
        raise AgentClientError(
            f"resumed as {resumed}, but the snapshot does not say which execution it came "
            f"from: {by_hand}"
        )
    handle = agents.client.get_workflow_handle(
        source.run_id, first_execution_run_id=source.execution_id
    )
    try:
        described = await agents.client.get_workflow_handle(source.run_id).describe()
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise AgentClientError(f"resumed as {resumed}; the source run: {err.message}") from err
        described = None
    first = described.raw_description.workflow_execution_info.first_run_id if described else None
    if described is None or first != source.execution_id:
        raise AgentClientError(
            f"resumed as {resumed}, but the source run is not here (no run {source.run_id!r} of "
            f"the snapshot's execution in namespace {agents.client.namespace!r}; a run with "
            f"that id here is another one, left alone): {by_hand}"
        )
    if described.status not in (None, WorkflowExecutionStatus.RUNNING):
        status = described.status.name.lower() if described.status else "closed"
        return f"the source run {source.run_id} has already ended ({status})"
    with agents.translating(source.run_id):
        await handle.cancel(reason=f"resumed as {resumed} (agentctl resume --cancel-source)")
    return f"cancelled the source run {source.run_id}"


async def _import_openai(args: argparse.Namespace, agents: AgentClient) -> str:
    text = read_file(args.source)
    state = await agents.read_openai_state(text, agent=args.agent, run_id=args.id, lossy=args.lossy)
    record = state.imported
    for item in record.dropped if record is not None else []:
        print(f"dropped {safe(item.where)}: {safe(item.what)}", file=sys.stderr)
    if record is not None and record.dropped_omitted:
        print(f"dropped {record.dropped_omitted} more, not listed", file=sys.stderr)
    run = await agents.import_openai_state(state)
    return StartedRun(run_id=run.id).model_dump_json(indent=2) if args.json else run.id


async def _fork(args: argparse.Namespace, agents: AgentClient) -> str:
    # args.snapshot is the fork already (made in _run, before connecting).
    run_id = (await agents.resume(args.snapshot, run_id=args.id)).id
    return StartedRun(run_id=run_id).model_dump_json(indent=2) if args.json else run_id


def _validate(args: argparse.Namespace) -> str:
    text = read_file(args.file)
    try:
        verdict = snapshots.validate(text)
    except InvalidSnapshot as err:
        if args.json:  # the verdict on stdout for programs, the error line on stderr
            print(json.dumps({"valid": False, "path": err.path, "problem": err.problem}, indent=2))
        raise
    # One line: the run id in it is the file's word, shown escaped.
    return json.dumps({"valid": True, "verdict": verdict}, indent=2) if args.json else safe(verdict)


def _seal(args: argparse.Namespace) -> str:
    against = read_file(args.against) if args.against else None
    found = snapshots.reseal(read_file(args.file), against=against)
    lines = [
        "its integrity block does not match its content (edited since it was sealed)"
        if found.edited
        else "its integrity block matches its content: sealing it again changes nothing",
    ]
    if against is not None:
        shown = found.differences[: snapshots.MAX_DIFFERENCES]
        more = len(found.differences) - len(shown)
        lines += [f"differs from {args.against}:" if shown else f"same content as {args.against}"]
        lines += [f"  {safe(line)}" for line in shown]
        lines += [f"  … and {more} more"] if more else []
    state = found.state
    lines.append(
        f"sealed: run {safe(state.run_id)}, {len(state.items)} items, "
        f"status {state.status.value}; "
        "its decisions grant nothing: on resume, calls not yet run wait for approval again"
    )
    try:
        Path(args.output).write_text(found.text, encoding="utf-8")
    except OSError as err:
        raise AgentClientError(f"cannot write {args.output}: {err.strerror or err}") from err
    lines.append(f"wrote {args.output}")
    print("\n".join(lines), file=sys.stderr)
    return ""


def _schema(args: argparse.Namespace) -> str:
    schema = json_schema() if args.payload is None else payload_schema(args.payload)
    return json.dumps(schema, indent=2, ensure_ascii=False)


MAX_FILE_BYTES = 256 * 1024 * 1024
"""The largest snapshot file read (a run's state is bounded well below it)."""


def read_file(name: str) -> bytes:
    """A snapshot file's bytes (`-`: standard input), at most MAX_FILE_BYTES."""
    try:
        if name == "-":
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            with Path(name).open("rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise AgentClientError(f"cannot read {name}: {err.strerror or err}") from err
    if len(data) > MAX_FILE_BYTES:
        raise AgentClientError(f"{name} is larger than {MAX_FILE_BYTES:,} bytes: not a snapshot")
    return data


def add_commands(command: Callable, offline: Callable, *, turn: Callable[[str], int]) -> None:
    """Add export, validate, resume, import-openai, fork and schema to agentctl's parser."""
    export = command("export", _export, "write a run's snapshot (RunState + integrity digest)")
    export.add_argument("run_id", metavar="RUN_ID")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE, not stdout")
    export.add_argument(
        "--format",
        choices=["snapshot", "openai-agents"],
        default="snapshot",
        help="openai-agents: a run waiting for approval as the OpenAI Agents SDK's RunState "
        "JSON (RunState.from_string loads it); a conversion, not a snapshot",
    )
    export.add_argument(
        "--sign-key",
        metavar="FILE",
        help="sign it with this Ed25519 key (agentctl keygen): workers listing its public "
        "key in AGENT_SNAPSHOT_KEYS keep the decisions it carries when they resume it",
    )
    check = offline("validate", _validate, "check a snapshot file: integrity, version, schema")
    check.add_argument("file", metavar="FILE", help="snapshot file (- for stdin)")
    seal = offline("seal", _seal, "seal an edited snapshot file again (after showing the edit)")
    seal.add_argument("file", metavar="FILE", help="the edited snapshot file (- for stdin)")
    seal.add_argument("-o", "--output", metavar="OUT", required=True, help="write it to OUT")
    seal.add_argument(
        "--against", metavar="ORIGINAL", help="the file before the edit: list what differs"
    )
    resume = command("resume", _resume, "start a new run that continues a snapshot")
    resume.add_argument("file", metavar="FILE", help="snapshot file (- for stdin)")
    resume.add_argument("--id", metavar="NEW_ID", help="id of the new run")
    resume.add_argument(
        "--unpause", action="store_true", help="a snapshot of a paused run resumes unpaused"
    )
    resume.add_argument(
        "--cancel-source",
        action="store_true",
        help="once the new run started, cancel the run the snapshot came from (on this "
        "connection's namespace)",
    )
    resume.add_argument(
        "--context",
        metavar="JSON",
        help="tool context laid over the snapshot's (objects merge key by key, this one "
        "winning); the snapshot's decisions on calls not yet run are asked again",
    )
    imported = command(
        "import-openai",
        _import_openai,
        "start a run that goes on from an OpenAI Agents SDK RunState file (to_string())",
    )
    imported.add_argument("source", metavar="FILE", help="the SDK's RunState JSON (- for stdin)")
    imported.add_argument(
        "--agent",
        required=True,
        metavar="NAME",
        help="the agent the workers serve that goes on with it (its tools and approval rules)",
    )
    imported.add_argument("--id", metavar="RUN_ID", help="id of the new run")
    imported.add_argument(
        "--lossy",
        action="store_true",
        help="drop what only the SDK can run (hosted tools, computer use, handoffs, calls "
        "of tools the agent lacks) instead of refusing; the run records what was dropped",
    )
    fork = command("fork", _fork, "start a new run from a snapshot as it was at turn N")
    fork.add_argument("file", metavar="FILE", help="snapshot file (- for stdin)")
    fork.add_argument("--at-turn", type=turn, required=True, metavar="N")
    fork.add_argument("--input", metavar="TEXT", help="the user's next message")
    fork.add_argument("--id", metavar="NEW_ID", help="id of the new run")
    schema = offline("schema", _schema, "print the JSON Schema of snapshot files or a payload")
    schema.add_argument(
        "payload",
        nargs="?",
        choices=list(PAYLOADS),
        help="a payload of the contract instead (signal, update, query, workflow input)",
    )
