"""AgentClient: typed calls for starting, watching and deciding on agent runs.

Every name comes from `workflows.contract` and every payload is a pydantic model
from `workflows.payloads`, so what this client sends is exactly what a service
in another language would send.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar, overload
from uuid import uuid4

from durable_agents.client import events as run_events
from durable_agents.client import (
    openai_agents_export,
    openai_agents_import,
    snapshots,
    state_reader,
)
from durable_agents.client.agent_tools import agent_tools
from durable_agents.client.ask_worker import ask_worker
from durable_agents.client.connect import connect
from durable_agents.client.errors import (
    AgentClientError,
    AgentError,
    AgentNotServed,
    DecisionRefused,
    InterruptRefused,
    InvalidImport,
    MessageRefused,
    NotExportable,
    PauseRefused,
    RunExists,
    RunFailed,
    RunNotFound,
    failure_message,
    from_rpc_error,
    run_ended,
    run_failed,
)
from durable_agents.client.inputs import agent_input, checked
from durable_agents.client.operations import (
    LIST_LIMIT,
    WATCH_INTERVAL,
    RunOperations,
    RunSummary,
    SetupReport,
    WatchEvent,
)
from durable_agents.client.retries import ActivityRetry
from durable_agents.client.run import AgentRun
from durable_agents.workflows import (
    agent_calls,
    background,
    contract,
    details,
    input_items,
    state_pages,
)
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.agent_spec import AgentSpec, ApprovalCondition, ModelSettings
from durable_agents.workflows.payloads import (
    AgentInput,
    AgentResult,
    DecideInput,
    DecisionSignal,
    EndSessionSignal,
    InterruptInput,
    InterruptResult,
    MessageSignal,
    PauseSignal,
    PendingApproval,
    RefreshToolsSignal,
    ResumeSignal,
    StatusView,
    problems,
)
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunState, RunStatus, SubRunSnapshot
from durable_agents.workflows.webhook_payloads import DeliveryRequest, DeliveryResult
from pydantic import BaseModel, JsonValue, TypeAdapter, ValidationError
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.runtime import Runtime
from temporalio.service import RPCError

from durable_agents import served_agents
from durable_agents.signing import SigningKey

CONFIRM_SECONDS = 10.0
"""How long a confirmed signal waits for the run to answer each of its queries."""

PENDING_QUERY = (
    f'WorkflowType = "{contract.WORKFLOW_TYPE}" AND '
    f'{sa.AGENT_PENDING_APPROVALS.name} > 0 AND ExecutionStatus = "Running"'
)
"""Visibility query of the runs that wait for a decision (of this workflow type only:
anyone who may start a workflow of another type can set these attributes on it)."""


class RunPendingApproval(BaseModel):
    """A pending approval and the run it belongs to (`pending_all`)."""

    run_id: str
    call_id: str
    tool: str
    arguments: str
    requested_at: datetime
    args: dict[str, JsonValue] | None = None
    arguments_sha256: str | None = None
    execution_id: str | None = None
    sensitive: list[str] = []
    kind: Literal["approval", "answer"] = "approval"
    answer_schema: dict[str, JsonValue] | None = None
    short_id: str | None = None


def decision_payload(
    run_id: str,
    call_id: str,
    decision: Literal["approve", "reject", "answer"],
    *,
    signal: bool,
    approver: str | None,
    reason: str | None = None,
    always: bool = False,
    arguments: dict[str, JsonValue] | None = None,
    sender: str | None = None,
    arguments_sha256: str | None = None,
    expires_at: datetime | None = None,
    always_when: list[ApprovalCondition] | None = None,
    signing_key: SigningKey | None = None,
    execution_id: str | None = None,
    metadata: dict[str, JsonValue] | None = None,
    holder_run_id: str | None = None,
    result: JsonValue = None,
) -> dict[str, JsonValue]:
    """A decision payload as plain JSON, exactly as it is sent (and signed).

    `arguments_sha256` (from the pending item the approver was shown) binds the
    decision to those arguments and to this run (`run_id` is added); a run refuses
    it if the call's arguments differ. `expires_at`: the decision, and an `always`
    rule it makes, lapse then. `always_when`: the later calls an `always` rule
    covers (default: only calls with the same arguments). `signing_key`: sign it
    (`durable_agents.signing`); the approver is the key's owner, and the payload
    carries `run_id`, `arguments_sha256`, `decision` and `expires_at` (default: in
    15 minutes). `execution_id` (the pending item's) binds it to this run's
    execution too, so it cannot be replayed into a later run that reuses the
    workflow id; a run that gives one requires it on signed decisions. `metadata`:
    the sender's own data, recorded with the decision (and signed with it).
    `holder_run_id`: the run that holds the call when it is not `run_id` but a run
    below it (the pending item's `run_id`): the binding names that run, and `run_id`
    passes the decision down to it. `result` (an `answer` only, where it is always
    sent, JSON null included): the answer to a call of an external tool. Fields that
    are not given are left out, so a payload without a binding is one a worker of an
    earlier build accepts.
    """
    if signing_key is not None:
        if approver not in (None, signing_key.owner):
            raise AgentClientError(
                f"the key {signing_key.key_id!r} is {signing_key.owner}'s; it cannot sign "
                f"as {approver}"
            )
        approver = signing_key.owner
        if arguments_sha256 is None:
            raise AgentClientError(
                "a signed decision binds to the call's arguments_sha256 (from pending())"
            )
        expires_at = expires_at or datetime.now(UTC) + SIGNED_DECISION_LIFETIME
    if approver is None:
        raise AgentClientError("a decision needs an approver (or a signing key)")
    bound = arguments_sha256 is not None
    fields: dict[str, Any] = {
        "call_id": call_id,
        "approver": approver,
        "reason": reason,
        "always": always,
        "arguments": arguments,
        "sender": sender,
        "always_when": always_when,
        "run_id": (holder_run_id or run_id) if bound else None,
        "arguments_sha256": arguments_sha256,
        "execution_id": execution_id if bound else None,
        "expires_at": _rfc3339(expires_at) if expires_at is not None else None,
        "decision": decision if bound or not signal else None,
        "metadata": metadata,
    }
    model = DecisionSignal if signal else DecideInput
    payload = checked(model, **fields).model_dump(mode="json", exclude_none=True)
    if decision == "answer":
        payload["result"] = result
    if signing_key is not None:
        payload = signing_key.sign(payload)
    return payload


_T = TypeVar("_T")

SIGNED_DECISION_LIFETIME = timedelta(minutes=15)
"""How long a signed decision is valid when the signer does not say."""
SIGNED_START_LIFETIME = timedelta(minutes=5)
"""How long a signed start may take to reach the server (it is checked when the run
starts, so only a replay under a reused workflow id meets this bound)."""


def _rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise AgentClientError(f"expires_at needs a time zone: {moment.isoformat()}")
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class PendingAcrossRuns(BaseModel):
    """What `pending_all` found."""

    approvals: list[RunPendingApproval] = []
    """Every pending approval of the runs that answered, oldest request first."""
    unanswered: list[str] = []
    """Runs listed as waiting whose query failed or timed out (no worker on their task
    queue?): their approvals are not in `approvals`."""


class AgentClient:
    """Start agent runs and talk to them: queries, approve/reject signals, `decide` update;
    list, watch and cancel runs (`client.operations`)."""

    def __init__(self, client: Client, *, task_queue: str = contract.DEFAULT_TASK_QUEUE) -> None:
        self.client = client
        """The Temporal client (must use the pydantic data converter)."""
        self.task_queue = task_queue
        """Task queue new runs are started on."""
        self.operations = RunOperations(self)
        """List, watch and cancel runs; set up a namespace."""

    @classmethod
    async def connect(
        cls,
        *,
        profile: str | None = None,
        address: str | None = None,
        namespace: str | None = None,
        task_queue: str = contract.DEFAULT_TASK_QUEUE,
        runtime: Runtime | None = None,
    ) -> AgentClient:
        """Connect (see `client.connect`) and wrap the new Temporal client."""
        temporal = await connect(
            profile=profile, address=address, namespace=namespace, runtime=runtime
        )
        return cls(temporal, task_queue=task_queue)

    # --- starting ----------------------------------------------------------------

    async def start(
        self,
        agent: str,
        input: str | list[dict[str, Any]],
        *,
        context: JsonValue = None,
        max_turns: int | None = None,
        run_id: str | None = None,
        session: bool = False,
        signing_key: SigningKey | None = None,
        model_settings: ModelSettings | dict[str, Any] | None = None,
        token_budget: int | None = None,
        cost_budget: float | None = None,
        new_id_only: bool = False,
        stream: bool | None = None,
    ) -> AgentRun:
        """Start a run of `agent` on `input`; returns its handle (`.id`: the workflow id).
        `new_id_only`: refuse (`RunExists`) an id any run has had, ended ones too.
        `stream`: stream this run's model replies (`text_delta` events) or not, over the
        agent's `stream`.

        With `session`, the run waits for further messages (`message`) after each
        answer until `end_session`. With `signing_key` (an approver key the workers
        know), the start is signed: the run records the key's owner as who started
        it (`started_by`), and a policy with `separate_duties` refuses that owner's
        approvals. The signature names the workflow id and lapses after
        SIGNED_START_LIFETIME. `model_settings`: this run's `temperature`, `tool_choice`,
        ... over the agent's (not `extra_headers` or `extra_body`). `token_budget`: the
        run's, if lower than the agent's (the run ends `budget_exceeded` before a model
        call that could pass it); `cost_budget` likewise, in the currency of the
        workers' price for the agent's model."""
        start_input = agent_input(agent, input, context=context, max_turns=max_turns)
        start_input.session = session
        start_input.stream = stream
        if model_settings is not None:
            start_input.model_settings = checked(ModelSettings, **dict(model_settings))
        if token_budget is not None or cost_budget is not None:  # only lower the agent's
            budgets = checked(
                AgentInput,
                agent=agent,
                input=input,
                token_budget=token_budget,
                cost_budget=cost_budget,
            )
            start_input.token_budget = budgets.token_budget
            start_input.cost_budget = budgets.cost_budget
        summary = input if isinstance(input, str) else input_items.text_of(start_input.input)
        started = await self._start(
            start_input, run_id, summary, signing_key=signing_key, new_id_only=new_id_only
        )
        return self.run(started)

    def run(self, run_id: str) -> AgentRun:
        """A handle on the run `run_id` (no call is made)."""
        return AgentRun(self, run_id)

    # --- reading -------------------------------------------------------------------

    async def status(self, run_id: str) -> StatusView:
        """Status, agent, turn, pending approvals and usage of a run."""
        with self.translating(run_id):
            return await self._handle(run_id).query(
                contract.QUERY_GET_STATUS, result_type=StatusView
            )

    async def state(self, run_id: str) -> RunState:
        """The whole RunState of a run, however large (read page by page when it is
        larger than one `get_state` answer: `client.state_reader`)."""
        with self.translating(run_id):
            stored = self.client.data_converter.external_storage is not None
            return await state_reader.read_state(
                state_reader.querying(self._handle(run_id)),
                page_bytes=state_pages.MAX_PAGE_BYTES if stored else state_pages.DEFAULT_PAGE_BYTES,
            )

    async def pending(self, run_id: str) -> list[PendingApproval]:
        """The tool calls of a run waiting for a decision."""
        with self.translating(run_id):
            return await self._handle(run_id).query(
                contract.QUERY_GET_PENDING_APPROVALS, result_type=list[PendingApproval]
            )

    async def pending_all(
        self, *, query_timeout: timedelta = timedelta(seconds=5)
    ) -> PendingAcrossRuns:
        """Pending approvals of every running run of the namespace that waits for one.

        Lists runs by the `AgentPendingApprovals` search attribute (visibility is
        eventually consistent: a run that just started waiting may show up a
        moment later), then asks each for its pending calls, concurrently.
        """
        with self.translating("*"):
            run_ids = [w.id async for w in self.client.list_workflows(PENDING_QUERY)]
        answers = await asyncio.gather(
            *(self._pending_within(r, query_timeout) for r in run_ids), return_exceptions=True
        )
        found = PendingAcrossRuns()
        for run_id, answer in zip(run_ids, answers, strict=True):
            if isinstance(answer, BaseException):
                found.unanswered.append(run_id)
                continue
            found.approvals += [  # a call of a run below is listed under that run
                RunPendingApproval(**p.model_dump(exclude={"run_id"}), run_id=run_id)
                for p in answer
                if p.run_id in (None, run_id)
            ]
        found.approvals.sort(key=lambda a: (a.requested_at, a.run_id, a.call_id))
        return found

    async def _pending_within(self, run_id: str, timeout: timedelta) -> list[PendingApproval]:
        return await self._handle(run_id).query(
            contract.QUERY_GET_PENDING_APPROVALS,
            result_type=list[PendingApproval],
            rpc_timeout=timeout,
        )

    # --- snapshots -----------------------------------------------------------------

    async def export(
        self, run_id: str, *, key: bytes | None = None, sign_with: SigningKey | None = None
    ) -> str:
        """The run's snapshot file text: its RunState plus an integrity block.

        Signed (HMAC-SHA256) with `key`, else with `$AGENT_SNAPSHOT_KEY`, else
        only digested (SHA-256); with `sign_with` (an Ed25519 key whose public half
        is in the workers' AGENT_SNAPSHOT_KEYS), a resume keeps the decisions the
        snapshot carries. Works for ended runs too (completed, failed, cancelled)
        as long as a worker serves the run's task queue.
        """
        state = await self.with_sub_runs(await self.state(run_id))
        return snapshots.dumps(state, key=key, sign_with=sign_with)

    async def with_sub_runs(self, state: RunState, *, _depth: int = 0) -> RunState:
        """`state` with the states of the children of its open agent calls (and theirs)
        in `sub_runs`, so that a resume of it resumes them too rather than starting
        those agents afresh. Left out, so started afresh by the resumed caller: a child
        not started yet, one that cannot be read (still starting, its workers down), one
        that failed, was cancelled, terminated or timed out (its caller will be told so),
        and a run under the child's id that this caller's executions did not start (an
        earlier run's). A resumed caller's own `sub_runs` not yet used are kept."""
        kept = {s.call_id for s in state.sub_runs}
        if _depth > agent_calls.MAX_DEPTH:
            return state
        found = list(state.sub_runs)
        waited = agent_calls.open_calls(state)[: agent_calls.MAX_CHILDREN_PER_REPLY]
        started = [(c, agent_calls.child_of(state, c)) for c, _ in waited]
        children = [(c, child) for c, child in started if child is not None]
        children += [(b.call_id, b.run_id) for b in background.running(state)]
        for call_id, child_id in children:
            if call_id in kept:
                continue
            try:
                described = await self._handle(child_id).describe()
                if described.parent_id != state.run_id or (
                    described.parent_run_id not in state.workflow_runs
                ):
                    continue  # not this caller's child
                if described.status not in (
                    WorkflowExecutionStatus.RUNNING,
                    WorkflowExecutionStatus.COMPLETED,
                    WorkflowExecutionStatus.CONTINUED_AS_NEW,
                ):
                    continue
                child = await self.state(child_id)
            except (
                AgentClientError,
                RPCError,
                WorkflowQueryFailedError,
                WorkflowQueryRejectedError,
            ):
                continue  # cannot be read now: started afresh
            if child.status in (RunStatus.FAILED, RunStatus.CANCELLED):
                continue
            taken = await self.with_sub_runs(child, _depth=_depth + 1)
            found.append(SubRunSnapshot(call_id=call_id, state=taken))
        return state.model_copy(update={"sub_runs": found}) if found else state

    async def resume(
        self,
        snapshot: str | bytes | RunState,
        *,
        run_id: str | None = None,
        key: bytes | None = None,
        unpause: bool = False,
        context: JsonValue = None,
    ) -> AgentRun:
        """Start a new run that continues `snapshot` exactly where it was; returns it.

        `snapshot` is snapshot file text (verified with `key` or
        `$AGENT_SNAPSHOT_KEY`, migrated, validated) or a RunState. Pending
        approvals stay pending; the worker takes the agent's tools and policies
        from its registry, asks again for decisions the snapshot carries on calls
        without a result, and revokes its `always` rules (`workflows.resume_trust`);
        a failed or cancelled run goes on as running. The new run (default id:
        AGENT-<random>) records its origin; it runs on this client's task queue,
        whose workers must serve the snapshot's agent tools. `run_id` may be the
        snapshot's own (e.g. on another server, or after the source ended): that
        is a resume too. A fork made with `client.snapshots.fork` starts as that fork.
        A snapshot of a paused run resumes paused, unless `unpause`. `context` is laid
        over the snapshot's tool context (two objects merge key by key, the new value
        winning; otherwise it replaces it), and then decisions the snapshot carries
        on calls not yet run are asked again, since they were given under the old one.
        A snapshot of a run that ended (completed, ...) resumes ended: its result, with
        nothing run again.
        """
        state = snapshots.loads(snapshot, key=key)
        origin = state.origin
        if origin is not None and origin.mode == "fork" and origin.run_id == state.run_id:
            summary = f"fork of {state.run_id} at turn {origin.turn}"
        else:
            summary = f"resume of {state.run_id}"
        document = snapshots.signed_document(snapshot)
        started = await self._start_from(
            state, run_id, summary, document=document, unpause=unpause, context=context
        )
        return self.run(started)

    async def read_openai_state(
        self,
        text: str | bytes,
        *,
        agent: str,
        run_id: str | None = None,
        lossy: bool = False,
    ) -> RunState:
        """The RunState an OpenAI Agents SDK run state (`openai-agents`'
        `RunState.to_string()`, `$schemaVersion` 1.0 to 1.21) becomes here, run by
        `agent` as the workers serve it (its tools and approval rules, not the file's),
        as run `run_id` (default: AGENT-<random>); nothing starts (`import_openai_state`).

        The calls the SDK stopped for wait for a decision, as do calls of the last
        reply that need one by this agent's rules; decisions the file records are kept
        for the audit (`RunState.imported`), never applied. Raises `InvalidImport`
        listing what cannot be carried over (an item only the SDK runs, a tool the agent
        lacks, ...); `lossy` drops what only the SDK can run instead, and the state
        records it. `AgentNotServed` if no worker serves `agent`. See the docs' "OpenAI
        Agents SDK" page (docs/how-to/openai-agents.md).
        """
        raw = text.encode("utf-8") if isinstance(text, str) else text
        try:
            document = openai_agents_import.read_document(raw)
            spec = await agent_tools(self.client, self.task_queue, agent)
            return openai_agents_import.import_state(
                document,
                spec,
                run_id=run_id or f"{agent}-{uuid4().hex[:12]}",
                now=datetime.now(UTC),
                sha256=hashlib.sha256(raw).hexdigest(),
                lossy=lossy,
            )
        except openai_agents_import.ImportRefused as err:
            raise InvalidImport(str(err), [str(p) for p in err.problems]) from None

    async def import_openai_state(
        self,
        source: str | bytes | RunState,
        *,
        agent: str | None = None,
        run_id: str | None = None,
        lossy: bool = False,
    ) -> AgentRun:
        """Start a run that goes on from an OpenAI Agents SDK run state; returns it.
        `source`: the SDK's JSON text (read as `read_openai_state` reads it, with
        `agent`, `run_id` and `lossy`), or the RunState `read_openai_state` made. The
        run id must be new (`RunExists`)."""
        if isinstance(source, RunState):
            state = source
        else:
            if agent is None:
                raise AgentClientError("import_openai_state: which agent goes on with it?")
            state = await self.read_openai_state(source, agent=agent, run_id=run_id, lossy=lossy)
        if state.imported is None:
            raise AgentClientError("import_openai_state: this RunState was not imported")
        summary = f"imported from an OpenAI Agents SDK run state ({state.imported.schema_version})"
        started = await self._start_from(state, state.run_id, summary, new_id_only=True)
        return self.run(started)

    async def export_openai_state(self, run_id: str) -> str:
        """The run, waiting for approval, as an OpenAI Agents SDK run state (JSON text
        `RunState.from_string(agent, text)` loads, `$schemaVersion` 1.21): a conversion,
        not a snapshot (see `client.openai_agents_export`). `NotExportable` if the run
        waits for no approval."""
        try:
            document = openai_agents_export.export_state(await self.state(run_id))
        except openai_agents_export.NotExportable as err:
            raise NotExportable(str(err)) from None
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"

    async def fork(
        self,
        snapshot: str | bytes | RunState,
        *,
        at_turn: int,
        input: str | None = None,
        run_id: str | None = None,
        key: bytes | None = None,
    ) -> AgentRun:
        """Start a new run from `snapshot` as it was at the end of turn `at_turn`.

        `input`, if given, is the next user message. Returns the new run;
        its state's `origin` names the source run and turn. Raises
        `InvalidSnapshot` if the snapshot is invalid or cannot be forked there.
        """
        state = snapshots.loads(snapshot, key=key)
        forked = snapshots.fork(state, at_turn=at_turn, new_input=input)
        summary = f"fork of {state.run_id} at turn {at_turn}"
        return self.run(await self._start_from(forked, run_id, summary))

    async def _start_from(
        self,
        state: RunState,
        run_id: str | None,
        summary: str,
        *,
        document: dict[str, object] | None = None,
        unpause: bool = False,
        context: JsonValue = None,
        new_id_only: bool = False,
    ) -> str:
        # The workflow ignores `input` when `resume_from` is set: the state carries it all.
        agent_input = AgentInput(
            agent=state.agent.name, input="", session=state.session, resume_from=state
        )
        agent_input.unpause = unpause  # sent only when set (see `_start`)
        agent_input.context = context
        return await self._start(
            agent_input, run_id, summary, document=document, new_id_only=new_id_only
        )

    async def _start(
        self,
        agent_input: AgentInput,
        run_id: str | None,
        summary: str,
        *,
        document: dict[str, object] | None = None,
        signing_key: SigningKey | None = None,
        new_id_only: bool = False,
    ) -> str:
        """Start AgentWorkflow; the UI's summary line is `agent: summary` (shortened,
        see `workflows.details.static_summary`). `document`: a signed snapshot sent as
        `resume_from` unchanged, so the worker can check its signature. `signing_key`:
        sign the start (`workflows.signed_start`). `new_id_only`: an id an ended run
        had is refused too."""
        workflow_id = run_id or f"{agent_input.agent}-{uuid4().hex[:12]}"
        # Fields left unset are not sent, so a worker of an earlier build (which
        # refuses unknown fields) takes a start that uses nothing new.
        arg = {k: v for k, v in agent_input.model_dump(mode="json").items() if v is not None}
        if not agent_input.unpause:
            del arg["unpause"]
        if document is not None:
            arg["resume_from"] = document
        if signing_key is not None:
            expires = _rfc3339(datetime.now(UTC) + SIGNED_START_LIFETIME)
            arg = signing_key.sign_start(arg, workflow_id=workflow_id, expires_at=expires)
        try:  # the agent's own queue if workers poll it; refused if none would serve it
            queue = await served_agents.task_queue_for(
                self.client, self.task_queue, agent_input.agent
            )
        except served_agents.NotServed as err:
            raise AgentNotServed(str(err)) from None
        with self.translating(workflow_id):
            await self.client.start_workflow(
                contract.WORKFLOW_TYPE,
                arg,
                id=workflow_id,
                task_queue=queue,
                static_summary=details.static_summary(agent_input.agent, summary),
                search_attributes=sa.at_start(agent_input.agent)
                if "resume_from" not in arg
                else None,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE
                if new_id_only
                else WorkflowIDReusePolicy.ALLOW_DUPLICATE,
            )
        return workflow_id

    @overload
    async def result(self, run_id: str) -> AgentResult: ...

    @overload
    async def result(self, run_id: str, *, output_type: type[_T]) -> _T: ...

    @overload
    async def result(self, run_id: str, *, output_type: Any) -> Any: ...

    async def result(self, run_id: str, *, output_type: Any = None) -> Any:
        """Wait for the run to end; raises `RunFailed` if it failed or was cancelled.

        With `output_type` (the agent's output type, or any type its JSON validates
        as), the typed final output; a run that ended otherwise than `completed`
        (`output_invalid`, `max_turns_exceeded`) raises `RunFailed` with its error."""
        with self.translating(run_id):
            try:
                handle = self.client.get_workflow_handle(run_id, result_type=AgentResult)
                outcome: AgentResult = await handle.result()
            except WorkflowFailureError as err:
                raise run_failed(run_id, err.cause) from err
        if output_type is None:
            return outcome
        if outcome.status is not RunStatus.COMPLETED or outcome.final_output is None:
            error = (await self.state(run_id)).error
            why = f": {error.message}" if error is not None else ""
            raise RunFailed(
                run_id,
                f"ended {outcome.status.value}{why}",
                error_type=error.type if error is not None else None,
            )
        try:
            return TypeAdapter(output_type).validate_json(outcome.final_output)
        except ValidationError as err:
            raise AgentClientError(
                f"run {run_id!r}: its output is not a {output_type!r}: {problems(err)}"
            ) from None

    # --- deciding ------------------------------------------------------------------

    async def approve(
        self,
        run_id: str,
        call_id: str,
        *,
        approver: str | None = None,
        reason: str | None = None,
        always: bool = False,
        arguments: dict[str, JsonValue] | None = None,
        sender: str | None = None,
        **binding: Any,
    ) -> None:
        """Send the `approve` signal (fire-and-forget; use `decide` to get an answer).

        `arguments` replace the model's for this call (validated by the run
        against the tool's schema and policy limits; a signal that cannot apply is
        recorded as refused). `binding`: see `decision_payload` (`arguments_sha256`,
        `expires_at`, `always_when`, `signing_key`).
        """
        payload = decision_payload(
            run_id,
            call_id,
            "approve",
            signal=True,
            approver=approver,
            reason=reason,
            always=always,
            arguments=arguments,
            sender=sender,
            **binding,
        )
        await self._signal(run_id, contract.SIGNAL_APPROVE, payload)

    async def reject(
        self,
        run_id: str,
        call_id: str,
        *,
        approver: str | None = None,
        reason: str | None = None,
        always: bool = False,
        sender: str | None = None,
        **binding: Any,
    ) -> None:
        """Send the `reject` signal; the model gets the reason as the call's result."""
        payload = decision_payload(
            run_id,
            call_id,
            "reject",
            signal=True,
            approver=approver,
            reason=reason,
            always=always,
            sender=sender,
            **binding,
        )
        await self._signal(run_id, contract.SIGNAL_REJECT, payload)

    async def answer(
        self,
        run_id: str,
        call_id: str,
        result: JsonValue,
        *,
        approver: str | None = None,
        reason: str | None = None,
        request_id: str | None = None,
        sender: str | None = None,
        **binding: Any,
    ) -> Decision:
        """Answer a call of an external tool (`@tool(external=True)`) through the `decide`
        update with `"decision": "answer"`; returns the recorded answer. `result` is the
        answer as JSON (a pydantic model is dumped): the run checks it against the
        tool's answer schema and raises `DecisionRefused` with the field that does not
        match. `call_id` may be the call's short id. `binding`: see `decision_payload`."""
        if isinstance(result, BaseModel):
            result = result.model_dump(mode="json")
        payload = decision_payload(
            run_id,
            call_id,
            "answer",
            signal=False,
            approver=approver,
            reason=reason,
            sender=sender,
            result=result,
            **binding,
        )
        return await self.send_decision(run_id, payload, request_id=request_id)

    async def decide(
        self,
        run_id: str,
        call_id: str,
        decision: Literal["approve", "reject", "answer"],
        *,
        approver: str | None = None,
        reason: str | None = None,
        always: bool = False,
        arguments: dict[str, JsonValue] | None = None,
        request_id: str | None = None,
        sender: str | None = None,
        **binding: Any,
    ) -> Decision:
        """Approve or reject through the `decide` update; returns the recorded decision.

        `arguments` (approvals only) replace the model's for this call.
        `sender` names the program in the audit (agentctl: "agentctl").
        `request_id` is the update id: a retry with the same id gets the first
        answer instead of a refusal. `binding`: see `decision_payload`. Raises
        `DecisionRefused` when the workflow refuses it (unknown or already decided
        call, approver not allowed, arguments not valid for the tool, a binding
        that does not match, a bad signature, run ended).
        """
        payload = decision_payload(
            run_id,
            call_id,
            decision,
            signal=False,
            approver=approver,
            reason=reason,
            always=always,
            arguments=arguments,
            sender=sender,
            **binding,
        )
        return await self.send_decision(run_id, payload, request_id=request_id)

    async def send_decision(
        self, run_id: str, payload: dict[str, Any], *, request_id: str | None = None
    ) -> Decision:
        """Send a `decide` payload as it is (one made by `decision_payload`, or signed
        elsewhere); returns the recorded decision, `DecisionRefused` with the run's
        reason. `request_id` makes a retry return the first answer; one already used
        for another call or decision is refused (the run took that one, not this)."""
        call_id = str(payload.get("call_id"))
        with self.translating(run_id):
            try:
                recorded = await self._handle(run_id).execute_update(
                    contract.UPDATE_DECIDE, payload, id=request_id, result_type=Decision
                )
                named = call_id in (recorded.call_id, recorded.short_id)  # a short id too
                if request_id is not None and (
                    not named or recorded.decision != payload.get("decision")
                ):
                    raise DecisionRefused(
                        f"request id {request_id[:100]!r} was used for another decision "
                        f"({recorded.decision} {recorded.call_id!r}); this one was not sent",
                        run_id=run_id,
                        call_id=call_id,
                    )
                return recorded
            except WorkflowUpdateFailedError as err:
                reason = failure_message(err.cause)
                raise DecisionRefused(reason, run_id=run_id, call_id=call_id) from err
            except RPCError as err:
                if run_ended(err):
                    ended = "the run has already ended"
                    raise DecisionRefused(ended, run_id=run_id, call_id=call_id) from err
                raise

    # --- pause ------------------------------------------------------------------------

    async def pause(
        self, run_id: str, *, by: str | None = None, reason: str | None = None
    ) -> StatusView:
        """Pause the run (`pause` update): no new model, tool or guardrail call starts;
        one already running finishes and its result is kept. Decisions and messages
        sent meanwhile are recorded and take effect on `unpause`. Returns its status;
        `PauseRefused` if it has ended or is paused already."""
        payload = checked(PauseSignal, by=by, reason=reason)
        return await self._pause_update(run_id, contract.UPDATE_PAUSE, payload)

    async def unpause(self, run_id: str, *, by: str | None = None) -> StatusView:
        """Let a paused run go on (`resume` update); `PauseRefused` if it is not paused."""
        payload = checked(ResumeSignal, by=by)
        return await self._pause_update(run_id, contract.UPDATE_RESUME, payload)

    async def _pause_update(self, run_id: str, update: str, payload: BaseModel) -> StatusView:
        with self.translating(run_id):
            try:
                return await self._handle(run_id).execute_update(
                    update, payload, result_type=StatusView
                )
            except WorkflowUpdateFailedError as err:
                raise PauseRefused(failure_message(err.cause)) from err
            except RPCError as err:
                if run_ended(err):
                    raise PauseRefused(f"run {run_id} has already ended") from err
                raise

    # --- sessions --------------------------------------------------------------------

    async def message(
        self,
        run_id: str,
        content: str | list[dict[str, Any]],
        *,
        confirm: bool = False,
        while_busy: Literal["queue", "interrupt", "reject"] | None = None,
    ) -> bool:
        """Send the user's next message to a session (`send_message` signal). With
        `confirm`, also read whether the run took it (a query before and after, each
        of at most CONFIRM_SECONDS): AgentClientError with its reason if it refused it
        (too long, too many queued). True if confirmed; False if it was sent but the
        run did not answer the queries (no worker running: it takes it later).

        `while_busy` says what the message does if the run is working on a turn
        ("queue", "interrupt", "reject"; docs/how-to/steering.md): given, the message
        goes as the `send_message` update, answered once the run took it (True), or
        refused with why (`MessageRefused`); None: the agent's default, by signal."""
        if while_busy is None:
            payload = checked(MessageSignal, content=content)
            return await self._session_signal(
                run_id, contract.SIGNAL_SEND_MESSAGE, payload, confirm
            )
        payload = checked(MessageSignal, content=content, while_busy=while_busy)
        with self.translating(run_id):
            try:
                await self._handle(run_id).execute_update(
                    contract.UPDATE_SEND_MESSAGE, payload, result_type=StatusView
                )
            except WorkflowUpdateFailedError as err:
                raise MessageRefused(failure_message(err.cause)) from err
            except RPCError as err:
                if run_ended(err):
                    raise MessageRefused(f"run {run_id} has already ended") from err
                raise
        return True

    async def interrupt(
        self, run_id: str, *, by: str | None = None, reason: str | None = None
    ) -> InterruptResult:
        """Stop the run's current turn (`interrupt` update): the model call and tools
        under way are cancelled, the calls without a result answered as interrupted; a
        session then waits for input, another run ends `interrupted`. Answered once the
        turn has stopped, with what was cut; `InterruptRefused` if there is no turn to
        stop (ended, waiting for input)."""
        payload = checked(InterruptInput, by=by, reason=reason)
        with self.translating(run_id):
            try:
                return await self._handle(run_id).execute_update(
                    contract.UPDATE_INTERRUPT, payload, result_type=InterruptResult
                )
            except WorkflowUpdateFailedError as err:
                raise InterruptRefused(failure_message(err.cause)) from err
            except RPCError as err:
                if run_ended(err):
                    raise InterruptRefused(f"run {run_id} has already ended") from err
                raise

    async def end_session(
        self, run_id: str, *, reason: str | None = None, confirm: bool = False
    ) -> bool:
        """End a session once its current exchange is answered (`end_session` signal);
        `confirm` as for `message`."""
        payload = EndSessionSignal(reason=reason)
        return await self._session_signal(run_id, contract.SIGNAL_END_SESSION, payload, confirm)

    async def _session_signal(
        self, run_id: str, signal: str, payload: BaseModel, confirm: bool
    ) -> bool:
        if not confirm:
            await self._signal(run_id, signal, payload)
            return False
        taken = await self._confirmed_signal(run_id, signal, payload, best_effort=True)
        return taken is not None

    async def refresh_tools(self, run_id: str, *, by: str | None = None) -> RunState:
        """Have the run list its MCP tools again before its next model call (the
        `refresh_tools` signal); returns its state once the signal is taken (the
        request in `tools_refresh`). Raises AgentClientError with the run's reason when
        it refuses (an ended run, an agent without MCP servers)."""
        payload = checked(RefreshToolsSignal, by=by)
        taken = await self._confirmed_signal(run_id, contract.SIGNAL_REFRESH_TOOLS, payload)
        assert taken is not None  # (not best effort: a query that fails raises)
        return taken

    async def _confirmed_signal(
        self, run_id: str, signal: str, payload: BaseModel, *, best_effort: bool = False
    ) -> RunState | None:
        """Send `signal`; the run's state once it took it, or AgentClientError with the
        reason it refused it (recorded in `refused_signals`). `best_effort`: the signal
        is sent even if the run does not answer a query within CONFIRM_SECONDS (then
        None: sent, not confirmed)."""
        before = await self._state_for_confirming(run_id, best_effort)
        await self._signal(run_id, signal, payload)
        if before is None:
            return None
        seen = before.refused_signals_dropped + len(before.refused_signals)
        # the query waits for the signal's workflow task
        after = await self._state_for_confirming(run_id, best_effort)
        if after is None:
            return None
        fresh = after.refused_signals[max(0, seen - after.refused_signals_dropped) :]
        refused = [r for r in fresh if r.signal == signal]
        if refused:
            raise AgentClientError(f"run {run_id!r} refused it: {refused[-1].refused_because}")
        return after

    async def _state_for_confirming(self, run_id: str, best_effort: bool) -> RunState | None:
        if not best_effort:
            return await self.state(run_id)
        try:
            return await asyncio.wait_for(self.state(run_id), timeout=CONFIRM_SECONDS)
        except (TimeoutError, AgentClientError) as err:
            if isinstance(err, RunNotFound):
                raise
            return None

    async def _signal(self, run_id: str, signal: str, payload: BaseModel | JsonValue) -> None:
        with self.translating(run_id):
            await self._handle(run_id).signal(signal, payload)

    # --- operations (`RunOperations`) ---------------------------------------------

    async def list_runs(
        self,
        *,
        status: str | None = None,
        agent: str | None = None,
        query: str | None = None,
        limit: int = LIST_LIMIT,
    ) -> list[RunSummary]:
        """See `RunOperations.list_runs`."""
        return await self.operations.list_runs(status=status, agent=agent, query=query, limit=limit)

    async def cancel(self, run_id: str, *, reason: str = "cancelled by agentctl") -> None:
        """See `RunOperations.cancel`."""
        await self.operations.cancel(run_id, reason=reason)

    def watch(
        self, run_id: str, *, interval: timedelta = WATCH_INTERVAL, every_poll: bool = False
    ) -> AsyncIterator[WatchEvent]:
        """See `RunOperations.watch`."""
        return self.operations.watch(run_id, interval=interval, every_poll=every_poll)

    async def events(
        self, run_id: str, *, after: int = 0, follow: bool = True
    ) -> AsyncIterator[dict[str, Any]]:
        """The run's events after `seq` `after` (the pinned objects, in order, each
        once): with `follow`, as they happen until the run finishes; else those it
        keeps now. Events trimmed before they were read come as one `truncated` event.
        Following holds one of the few polls a run lets wait at once: share one."""
        if after < 0:
            raise AgentClientError(f"after must be a seq (0 or more), not {after}")
        reader = run_events.follow if follow else run_events.read
        with self.translating(run_id):
            async for event in reader(self.client, run_id, after=after):
                yield event

    async def tools(self, agent: str) -> AgentSpec:
        """The spec a run of `agent` started now would have, its MCP servers' tools
        listed, each with its approval rule: asked of a worker that serves it
        (`client.agent_tools`)."""
        return await agent_tools(self.client, self.task_queue, agent)

    async def test_webhook(self, endpoint: str) -> DeliveryResult:
        """Have a worker of this client's task queue send its webhook `endpoint` a
        signed sample event (`type: "test"`), once; what came of it."""
        from durable_agents.webhooks import sample_event  # its HTTP client: only here

        request = DeliveryRequest(
            endpoint=endpoint,
            webhook_id=f"test-{uuid4().hex[:12]}",
            event=sample_event(endpoint),
            attempt=1,
            first_try_at=datetime.now(UTC),
        )
        what = f"a worker of task queue {self.task_queue!r}"
        found: DeliveryResult = await ask_worker(
            self.client,
            self.task_queue,
            contract.ACTIVITY_DELIVER_WEBHOOK,
            request,
            DeliveryResult,
            what,
        )
        return found

    async def retrying(self, run_id: str) -> list[ActivityRetry]:
        """See `RunOperations.retrying`."""
        return await self.operations.retrying(run_id)

    async def setup_search_attributes(self, *, namespace: str | None = None) -> SetupReport:
        """See `RunOperations.setup_search_attributes`."""
        return await self.operations.setup_search_attributes(namespace=namespace)

    # --- plumbing ------------------------------------------------------------------

    def _handle(self, run_id: str) -> WorkflowHandle:
        return self.client.get_workflow_handle(run_id)

    @contextmanager
    def translating(self, run_id: str) -> Iterator[None]:
        """Turn the SDK's errors about `run_id` into one-line `AgentClientError`s."""
        try:
            yield
        except AgentError:
            raise
        except WorkflowAlreadyStartedError as err:
            raise RunExists(run_id) from err
        except RPCError as err:
            raise from_rpc_error(run_id, self.client.namespace, err) from err
        except WorkflowQueryFailedError as err:
            raise AgentClientError(f"query on run {run_id!r} failed: {err.message}") from err
        except WorkflowQueryRejectedError as err:
            raise AgentClientError(f"query on run {run_id!r} rejected: {err}") from err
