"""How a run begins: its input read (strictly, or as other tools write snapshots), the
signatures it claims (a signed start, a signed snapshot), and its first state — new,
resumed from a snapshot (regrounded on this worker's agent), or continued as new.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from temporalio import workflow
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        activity_calls,
        at_most_once,
        context_updates,
        contract,
        definitions,
        loop,
        mcp_tools,
        raw_payloads,
        resume_trust,
        signed_start,
        snapshot_input,
        snapshot_signature,
    )
    from durable_agents.workflows.agent_spec import AgentSpec
    from durable_agents.workflows.payloads import AgentInput
    from durable_agents.workflows.run_items import ToolCall
    from durable_agents.workflows.state import RunState, RunStatus


async def described(agent: str) -> AgentSpec:
    """The agent's spec from a worker that serves it, with its MCP servers' tools."""
    spec = await activity_calls.describe_agent(agent)
    if spec.mcp_servers:
        spec = await activity_calls.with_mcp_tools(spec)
    return spec


class RunStart:
    """The run's input as given, and what it takes to begin the run from it."""

    def __init__(self, raw_input: RawValue) -> None:
        unreadable = raw_payloads.unreadable(raw_input)
        if unreadable is not None and not unreadable[1]:
            # Not the sender's error as far as this worker can tell: a key missing or
            # wrong here. Fail the task, so a worker with the right keys takes the run.
            raise RuntimeError(f"cannot read this run's input: {unreadable[0]}")
        decoded = raw_payloads.decode(raw_input, AgentInput)
        self._raw = raw_input
        self.input: AgentInput | None = decoded if isinstance(decoded, AgentInput) else None
        self.problem = decoded if isinstance(decoded, str) else None
        """Why the input does not load, when it does not."""
        self._lenient = (
            snapshot_input.lenient_input(raw_payloads.as_json(raw_input), AgentInput)
            if self.input is None
            else None
        )
        """The input read as other tools write snapshots, when it did not load as is
        (adopted in `start`)."""
        self.agent_name = raw_payloads.string_field(raw_input, "agent")
        self._snapshot_claim: snapshot_signature.SignedSnapshot | None = None
        """What a resumed snapshot document's Ed25519 signature claims (checked against
        the worker's snapshot keys once `describe_agent` has given them)."""
        self._start_claim: signed_start.StartClaim | None = None
        """What the input's start signature claims (`workflows.signed_start`)."""
        self.interrupted: list[ToolCall] = []
        """The at-most-once calls a resumed snapshot had started: answered interrupted."""
        self._read_claims()

    def _read_claims(self) -> None:
        if self.input is None:
            return
        raw = self._raw
        if self.input.resume_from is not None:
            self._snapshot_claim = snapshot_signature.claim_of(
                raw_payloads.field(raw, "resume_from")
            )
        if self.input.start_signature is not None:
            self._start_claim = signed_start.claim_of(raw_payloads.as_json(raw))

    def _adopt_lenient_input(self) -> None:
        """A `resume_from` another tool wrote (nulls for empty lists, a whole
        `get_state` answer) loads."""
        lenient = self._lenient
        if self.input is not None or lenient is None:
            return
        if isinstance(lenient, str):
            self.problem = lenient
            return
        self.input = lenient
        self._read_claims()

    def carried(self) -> RunState | None:
        """The state a run continued as new goes on with, or None for any other start.
        Synchronous, so that `@workflow.init` has it before the first activation's
        signals and updates are handled (an update that reached the previous run as it
        switched is moved here by the server: it must not find the run "starting")."""
        info = workflow.info()
        if info.continued_run_id is None:
            return None
        if self.input is None:
            # The state our own code carried over does not load: a bug to fix, not a
            # bad input. Fail the workflow task, so a fixed worker takes the run on.
            raise RuntimeError(
                f"the state carried over from run {info.continued_run_id} does not load: "
                f"{self.problem}"
            )
        snapshot = self.input.resume_from
        if snapshot is None or not loop.is_continue_as_new(
            snapshot, run_id=info.workflow_id, continued_run_id=info.continued_run_id
        ):
            return None
        return loop.resume(
            snapshot,
            run_id=info.workflow_id,
            workflow_run=info.run_id,
            now=workflow.now(),
            continue_as_new=True,
        )

    async def start(self, unstarted: Callable[[RunStatus, str], None]) -> RunState:
        """The initial state of a run that is not continued as new (see `carried`); a
        run that cannot start fails (or is cancelled), `unstarted` told how and why (its
        search attributes say so)."""
        self._adopt_lenient_input()
        try:
            if self.input is None:
                raise ApplicationError(
                    f"invalid AgentWorkflow input: {self.problem}",
                    type=contract.ERROR_INVALID_INPUT,
                    non_retryable=True,
                )
            return await self._initial_state(self.input)
        except ApplicationError as err:
            unstarted(RunStatus.FAILED, err.message)
            raise
        except asyncio.CancelledError:
            unstarted(RunStatus.CANCELLED, "cancelled while starting")
            raise

    async def _initial_state(self, agent_input: AgentInput) -> RunState:
        snapshot = agent_input.resume_from
        if snapshot is not None:
            # Validated while the input was decoded (strictly, items checked against
            # each other, an integrity block verified: see RunState), so a bad
            # snapshot has failed the run already, as invalid input.
            info = workflow.info()
            self.interrupted = at_most_once.started_open(snapshot)
            state = loop.resume(
                snapshot, run_id=info.workflow_id, workflow_run=info.run_id, now=workflow.now()
            )
            # Anyone who may start a workflow can write a snapshot: take tools,
            # policies and keys from this worker, and no decision from the snapshot.
            spec = mcp_tools.stricter(await described(snapshot.agent.name), snapshot.agent)
            verified = snapshot_signature.verified_by(
                self._snapshot_claim, spec.snapshot_keys, now=workflow.now()
            )
            if verified is None and spec.refuse_unverified_snapshots:
                raise ApplicationError(
                    "invalid AgentWorkflow input: this worker resumes only snapshots signed "
                    "with one of its snapshot keys (AGENT_SNAPSHOT_KEYS; agentctl export "
                    "--sign-key)",
                    type=contract.ERROR_INVALID_INPUT,
                    non_retryable=True,
                )
            if agent_input.unpause:
                state.paused = None
            overlay = agent_input.context
            if overlay is not None:
                state.context = context_updates.overlay_context(state.context, overlay)
                # Decisions were given under the snapshot's context: ask them again.
                verified = None
            try:
                state = resume_trust.reground(
                    state,
                    spec,
                    now=workflow.now(),
                    verified_by=verified,
                )
            except ValueError as err:
                raise ApplicationError(
                    f"invalid AgentWorkflow input: the snapshot cannot be resumed on this "
                    f"worker's agent {spec.name}: {err}",
                    type=contract.ERROR_INVALID_INPUT,
                    non_retryable=True,
                ) from None
            return self._stamp_start(state)
        spec = await described(agent_input.agent)
        try:
            state = loop.new_state(
                spec, agent_input, run_id=workflow.info().workflow_id, now=workflow.now()
            )
        except ValueError as err:  # model settings the input may not set
            raise ApplicationError(
                f"invalid AgentWorkflow input: {err}",
                type=contract.ERROR_INVALID_INPUT,
                non_retryable=True,
            ) from None
        state.workflow_runs.append(workflow.info().run_id)
        shared = agent_input.token_budget is not None and (agent_input.depth or 0) > 0
        if (
            shared and workflow.info().parent is not None and state.agent.on_budget != "stop"
        ):  # its budget is a share of its caller's: it stops there, it does not ask for more
            state.agent = state.agent.model_copy(update={"on_budget": "stop"})
        return self._stamp_start(state)

    def _stamp_start(self, state: RunState) -> RunState:
        """A run starting (fresh, resumed or forked: not continued as new) records its
        own execution, and who started it if the start is signed; a snapshot's say
        on either counts for nothing."""
        info = workflow.info()
        if state.agent.mcp_servers:
            # its tools were just listed: a later session message lists them again
            state.tools_listed_messages = mcp_tools.user_messages(state)
            state.tools_refresh = None
        if state.agent.definition_updates != "never":
            definitions.start(state, workflow_run=info.run_id)
        state.execution_id = info.first_execution_run_id
        state.started_by = None
        state.start_proof = None
        inherited = self.input.caller_start if self.input is not None else None
        if inherited is not None and self._start_claim is None:
            if info.root is None:  # only a run in a tree has a root to check it against
                raise ApplicationError(
                    "invalid AgentWorkflow input: caller_start is for a run started by its "
                    "caller (a child workflow); sign the start instead (start_signature)",
                    type=contract.ERROR_INVALID_INPUT,
                    non_retryable=True,
                )
            # Checked here, not taken on the caller's word: any workflow can start a child.
            state.started_by = signed_start.inherited(
                inherited,
                state.agent.approver_keys,
                root_id=info.root.workflow_id,
                now=workflow.now(),
            )
            state.start_proof = inherited if state.started_by is not None else None
        if self._start_claim is not None:
            try:
                # Judged at the server's start time, not now: a start that waited in the
                # queue while workers were down is not late for it.
                state.started_by = signed_start.verify(
                    self._start_claim,
                    state.agent.approver_keys,
                    workflow_id=info.workflow_id,
                    now=info.workflow_start_time,
                )
            except ValueError as err:
                raise ApplicationError(
                    f"invalid AgentWorkflow input: {err}",
                    type=contract.ERROR_INVALID_INPUT,
                    non_retryable=True,
                ) from None
            state.start_proof = signed_start.proof(self._start_claim)
        return state
