"""RunState: the whole state of one agent run, as plain, versioned data.

It is what the workflow holds in memory, what `get_state` returns and what
`export` writes. Every model refuses unknown fields, timestamps must carry an
offset, and RunState checks that its items agree with each other
(`workflows.state_checks`), so a snapshot that does not match fails to load
instead of being silently defaulted. Snapshot files and workflow input
(`workflows.snapshot.loads`, `SnapshotInput`) are also validated strictly (no
coercion: `"3"` is not a turn); decision records always are.

The agent as defined is in `workflows.agent_spec`, the items of the conversation in
`workflows.run_items`, what the run keeps for the audit in `workflows.audit`; this
module holds RunState and its own parts.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from durable_agents.workflows import state_checks
from durable_agents.workflows.agent_spec import (
    AgentSpec,
    ModelSettings,
)
from durable_agents.workflows.audit import (
    DELIVERIES_KEPT,
    LISTINGS_KEPT,
    PAUSES_KEPT,
    REDEFINITIONS_KEPT,
    DecisionAttempt,
    Evaluation,
    ImportRecord,
    PauseEvent,
    Redefinition,
    RefusedSignal,
    ToolListing,
    WebhookDelivery,
)
from durable_agents.workflows.interrupt_models import (
    INTERRUPTIONS_KEPT,
    Interruption,
    PendingInterrupt,
)
from durable_agents.workflows.run_items import (
    Item,
    Usage,
    UserMessage,
)
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, JsonValue, model_validator
from pydantic_core import PydanticCustomError

SCHEMA_VERSION = "2.0"
"""The RunState schema this code writes ("MAJOR.MINOR"; minor = additive, major =
breaking). One version per release (DESIGN.md, RunState): 2.0 is release 1.0's, and
its snapshots load on every later build; the 1.x versions of pre-release builds are
refused (`workflows.snapshot`)."""

SCHEMA_RELEASED = True
"""Whether a release has shipped `SCHEMA_VERSION` (2.0: release 1.0). Until one does, its
committed schema and golden fixtures follow the model (`python -m schemas.generate`, `python -m
tests.support.snapshot_golden` rewrite them); from then on they are frozen, and a
change to RunState needs a new version and a migration (`workflows.migrations`)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunStatus(StrEnum):
    """Where a run is; the value of the `AgentStatus` search attribute."""

    RUNNING = "running"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_INPUT = "awaiting_input"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    MAX_TURNS_EXCEEDED = "max_turns_exceeded"
    OUTPUT_INVALID = "output_invalid"
    """The final reply never matched the agent's output type."""
    GUARDRAIL_TRIPPED = "guardrail_tripped"
    """An input or output guardrail stopped the run."""
    BUDGET_EXCEEDED = "budget_exceeded"
    """The next model call could have passed the run's token budget."""
    PAUSED = "paused"
    """An operator paused the run: no new model, tool or guardrail call starts."""
    INTERRUPTED = "interrupted"
    """The `interrupt` update stopped the turn of a run that is not a session."""

    @property
    def is_final(self) -> bool:
        """True once the run has ended and will change no more."""
        return self in _FINAL


_FINAL = {
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.CANCELLED,
    RunStatus.MAX_TURNS_EXCEEDED,
    RunStatus.OUTPUT_INVALID,
    RunStatus.GUARDRAIL_TRIPPED,
    RunStatus.BUDGET_EXCEEDED,
    RunStatus.INTERRUPTED,
}


class Pause(_Model):
    """Who paused a run, why and when (`pause` signal or update)."""

    by: str | None = Field(None, max_length=200)
    reason: str | None = Field(None, max_length=2_000)
    at: AwareDatetime


class ToolsRefresh(_Model):
    """A request to list the run's MCP tools again before its next model call (the
    `refresh_tools` signal)."""

    by: str | None = Field(None, max_length=200)
    at: AwareDatetime


class DefinitionCheck(_Model):
    """When the run last looked for a changed definition of its agent
    (`RunState.definition_checked`)."""

    messages: int = Field(ge=0)
    """The user's messages in the conversation then (a later one is a new message)."""
    workflow_run: str = Field(min_length=1, max_length=200)
    """The workflow run then (a later one is a continue-as-new)."""


ToolName = Annotated[str, Field(min_length=1, max_length=200)]
"""A tool's name, as `ToolSpec.name` takes it."""
MCP_TOOLS_KEPT = 128
"""Names kept per agent in `MCPToolsLeft` (as many tools as a model takes)."""
AGENTS_LEFT_KEPT = 50
"""Agents kept in `RunState.mcp_tools_left` (the newest)."""


class MCPToolsLeft(_Model):
    """An agent's MCP tools when the run handed over from it: a handoff back to it
    keeps the approvals they asked then (`mcp_tools.returning`)."""

    agent: str = Field(min_length=1, max_length=200)
    tools: list[ToolName] = Field([], max_length=MCP_TOOLS_KEPT)
    """The names of its MCP tools."""
    asked: list[ToolName] = Field([], max_length=MCP_TOOLS_KEPT)
    """Of them, those that needed approval."""


class Notices(_Model):
    """What the run has announced as events (`workflows.run_events`), so that each is
    announced once, across continue-as-new and worker restarts."""

    seq: int = Field(0, ge=0)
    """The number of the newest event (events are numbered from 1)."""
    pending: list[str] = []
    """Call ids whose `approval_requested` went out and that still wait."""
    paused: bool = False
    finished: bool = False
    interrupted_at: AwareDatetime | None = Field(None, exclude_if=lambda at: at is None)
    """When the newest interruption announced was applied (`Interruption.applied_at`):
    those applied later are announced next."""


class ErrorInfo(_Model):
    """Why a run failed."""

    type: str
    message: str
    details: dict[str, JsonValue] = {}
    """Provider facts worth keeping, such as the HTTP status code."""


class RunOrigin(_Model):
    """Where a resumed or forked run came from."""

    run_id: str
    """The run whose snapshot this run started from."""
    turn: int = Field(ge=0)
    """The source run's turn at which the snapshot was taken (or the fork was cut)."""
    mode: Literal["resume", "fork"]
    verified_by: str | None = None
    """Id of the snapshot key whose Ed25519 signature the worker verified when the run
    resumed (its decisions were kept); None: not verified, its decisions on open calls
    were dropped (`workflows.resume_trust`)."""


class Starter(_Model):
    """Who started the run, as proven by a signed start (`workflows.signed_start`)."""

    key_id: str = Field(min_length=1, max_length=200)
    """The approver key whose signature over the start input verified."""
    owner: str = Field(min_length=1, max_length=200)
    """That key's owner."""


START_PROOF_CHARS = 64_000
"""The largest signed start input a run keeps as proof for the runs it calls as tools
(a larger one, such as a resume's snapshot, is not passed on: they start unsigned)."""


class StartProof(_Model):
    """A signed start as its signer made it: the start input's canonical JSON (`body`,
    with the `start_signature` minus `sig`) and the Ed25519 signature over it, of the
    run at the top of a tree of runs. A run called as a tool checks it itself (the
    key, the signature, and that the signed workflow id is its tree's root, as Temporal
    says) before it records who started it."""

    key_id: str = Field(min_length=1, max_length=200)
    workflow_id: str = Field(min_length=1, max_length=1_000)
    sig: str = Field(pattern=r"^[A-Za-z0-9_-]{86}$")
    body: str = Field(max_length=START_PROOF_CHARS)


SUB_APPROVALS_KEPT = 100
"""The most calls of runs below a run it keeps as waiting (reports past it are cut)."""


class SubApproval(_Model):
    """A call waiting for a decision in a run below this one (an agent called as a
    tool, or one that agent called), as the child run this run waits on last reported
    it (`workflows.tree_approvals`). Shown with the run's own pending calls; a decision
    for it is passed down to `via`."""

    via: str = Field(min_length=1, max_length=200)
    """The child run (workflow id) that reported it: the one a decision goes to."""
    run_id: str = Field(min_length=1, max_length=200)
    """The run that holds the call (`via` itself, or a run below it)."""
    execution_id: str | None = Field(None, max_length=200)
    path: list[str] = Field(min_length=1, max_length=16)
    """The agents from `via`'s down to the one whose run holds the call."""
    call_id: str = Field(min_length=1, max_length=200)
    tool: str = Field(min_length=1, max_length=200)
    arguments: str
    arguments_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    requested_at: AwareDatetime
    sensitive: list[str] = []
    kind: Literal["approval", "answer"] = Field("approval", exclude_if=lambda k: k == "approval")
    """As `PendingApproval.kind`. Left out when `approval`."""
    answer_schema: dict[str, JsonValue] | None = Field(None, exclude_if=lambda s: s is None)
    """As `PendingApproval.answer_schema`."""
    short_id: str | None = Field(None, pattern=r"^[a-z0-9]{1,8}$", exclude_if=lambda s: s is None)
    """As `PendingApproval.short_id`: the one the run holding the call gave it."""


SUB_RUNS_KEPT = 16
"""The most sub-run snapshots one snapshot carries: the children of a reply's agent
calls (at most `agent_calls.MAX_CHILDREN_PER_REPLY`) and those running in the
background (as many at most)."""


class SubRunSnapshot(_Model):
    """An unfinished child run (an agent called as a tool) exported with its caller: the
    caller resumed from the snapshot resumes the child from `state` for the call
    `call_id`, instead of starting the agent afresh."""

    call_id: str = Field(min_length=1, max_length=200)
    state: RunState


BACKGROUND_RUNS_KEPT = 32
"""The most background runs a run keeps a record of (those ended first are dropped)."""


class BackgroundRun(_Model):
    """A child run an agent call started in the background (`Agent.as_tool(wait=False)`):
    what its caller knows of it, as the child last reported (`workflows.background`)."""

    call_id: str = Field(min_length=1, max_length=200)
    """The call that started it."""
    agent: str = Field(min_length=1, max_length=200)
    run_id: str = Field(min_length=1, max_length=200)
    """The child's workflow id (`<caller>/<call id>`)."""
    execution: str = Field("", max_length=200, exclude_if=lambda e: not e)
    """The child's first execution run id, from its handle when this run started it: its
    end and reports are taken only from that execution (empty: recorded before)."""
    status: RunStatus = RunStatus.RUNNING
    """As the child last reported; final once its end arrived."""
    turn: int = Field(0, ge=0)
    last_output: str | None = Field(None, max_length=2_000)
    """The start of the child's latest reply text, as it last reported."""
    pending_approvals: int = Field(0, ge=0)
    share: int | None = Field(None, ge=0)
    """The tokens of this run's budget it was given, not counted yet (None: no budget,
    or counted since it ended)."""
    started_at: AwareDatetime
    finished_at: AwareDatetime | None = None

    @property
    def running(self) -> bool:
        """The child has not told its end yet."""
        return self.finished_at is None


RENAMED_CHILDREN_KEPT = 64
"""The newest renamed child runs a run remembers (`RunState.renamed_children`)."""


class RenamedChild(_Model):
    """An agent call whose child run could not take its usual id (`<run>/<call id>`,
    `workflows.agent_calls.child_id`): a workflow this run did not start held it, so the
    child was started under another id, this one."""

    call_id: str = Field(min_length=1, max_length=200)
    caller: str = Field(min_length=1, max_length=200)
    """The run (workflow id) that started it: a run resumed or forked under another id
    starts its own children under ids of its own."""
    run_id: str = Field(min_length=1, max_length=200)
    """The id the child was started under."""
    because: str = Field(max_length=2_000)


CHILD_RUNS_KEPT = 64
"""The newest child runs of agent calls a run remembers (`RunState.child_runs`)."""


class ChildRun(_Model):
    """The run an agent call started as its child, under an id only the workers can make
    (`workflows.secret_ids`): where clients find it."""

    call_id: str = Field(min_length=1, max_length=200)
    caller: str = Field(min_length=1, max_length=200)
    """The run (workflow id) that started it (a run resumed under another id has its own)."""
    run_id: str = Field(min_length=1, max_length=200)


class RunState(_Model):
    """The single source of truth for one run; JSON round-trip exact."""

    schema_version: Literal["2.0"] = "2.0"
    """Always SCHEMA_VERSION."""
    run_id: str
    """The workflow id."""
    agent: AgentSpec
    status: RunStatus = RunStatus.RUNNING
    turn: int = Field(0, ge=0)
    """Model calls made so far."""
    max_turns: int = Field(ge=1)
    """Model calls allowed for one user message before the run ends as max_turns_exceeded."""
    context: JsonValue = None
    """User-supplied JSON handed to every tool call."""
    items: list[Item] = []
    final_output: str | None = None
    error: ErrorInfo | None = None
    usage: Usage = Usage()
    origin: RunOrigin | None = None
    """Set when the run was resumed or forked from a snapshot of another run."""
    session: bool = False
    """After each final answer, wait for the next `send_message` instead of completing."""
    queued_messages: list[str | UserMessage] = []
    """User messages received mid-turn, delivered once the turn's tool calls are answered
    (a text, or a message given as parts)."""
    end_reason: str | None = None
    """Why a session ended (ended by a signal, or idle)."""
    workflow_runs: list[str] = []
    """Temporal run ids of this run's workflow, oldest first (one per continue-as-new)."""
    held_decisions: list[DecisionAttempt] = []
    """Signals naming a call the model had not yet proposed when they arrived
    (a model call was under way); applied when the reply names the call."""
    refused_decisions: list[DecisionAttempt] = []
    """Decision signals that could not apply, with the reason: the audit of
    refusals (the newest `REFUSALS_KEPT`)."""
    refused_decisions_dropped: int = Field(0, ge=0)
    """Older refused decisions dropped from `refused_decisions`."""
    evaluations: list[Evaluation] = Field([], exclude_if=lambda e: not e)
    """What evaluators said of waiting calls, and what came of it, oldest first."""
    refused_signals: list[RefusedSignal] = []
    """Other signals that could not be used (the newest `REFUSALS_KEPT`)."""
    refused_signals_dropped: int = Field(0, ge=0)
    """Older entries dropped from `refused_signals`."""
    revoked_rules: list[str] = []
    """Call ids of `always` decisions whose rule no longer decides later calls: they
    came with a resumed snapshot, which cannot vouch for them
    (`workflows.resume_trust`)."""
    execution_id: str | None = None
    """Temporal's run id of the first workflow execution of this run (kept across
    continue-as-new; a resume or fork, or a new run reusing the workflow id, gets
    its own). A decision naming another one is refused, and a signed decision must
    name it, so one captured from an earlier run under the same workflow id cannot
    be replayed into this one. None: not recorded (decisions bind to the workflow id only)."""
    started_by: Starter | None = None
    """The owner of the key that signed the run's start input; None: an unsigned
    start (anyone who may start workflows)."""
    start_proof: StartProof | None = Field(None, exclude_if=lambda p: p is None)
    """The signed start `started_by` was checked against, kept for the runs this run
    calls as tools (its own, or, for such a run, its tree's root's)."""
    model_settings: ModelSettings = ModelSettings()
    """The settings every model call of this run is sent with: the agent's, with the
    start input's on top, fixed when the run started (a resume keeps them)."""
    token_budget: int | None = Field(None, ge=1)
    """The run's token budget: the agent's, or lower if the start input asked."""
    cost_budget: float | None = Field(None, gt=0, allow_inf_nan=False)
    """The run's cost budget (in `agent.price.currency`): the agent's, or lower if the
    start input asked."""
    dynamic_instructions: str | None = Field(None, exclude_if=lambda i: i is None)
    """The instructions the agent's function gave for the latest model call
    (`Agent(instructions=FUNCTION)`, `workflows.instructions`); None: none asked yet."""
    paused: Pause | None = None
    """Set while an operator has the run paused (a resumed snapshot stays paused unless
    the resume says otherwise)."""
    pause_log: list[PauseEvent] = Field([], max_length=PAUSES_KEPT)
    """Who paused and resumed the run, and when: the newest `PAUSES_KEPT`."""
    context_overflow: int | None = Field(None, ge=1)
    """The model call the provider refused as longer than its window: it is made again
    once, after a compaction."""
    tools_listed_messages: int | None = Field(None, ge=0)
    """User messages in the conversation when the run's MCP tools were last listed: a
    session message after them has them listed again before the model answers it.
    None: no MCP servers, or not counted (listed again on request only)."""
    tools_refresh: ToolsRefresh | None = None
    """A request to list the MCP tools again, until it is done."""
    tool_listings: list[ToolListing] = Field([], max_length=LISTINGS_KEPT)
    """The MCP tool listings after the start, and what each changed: the newest
    `LISTINGS_KEPT`."""
    notices: Notices | None = Field(None, exclude_if=lambda n: n is None)
    """The run events announced so far (runs with webhooks)."""
    webhook_deliveries: list[WebhookDelivery] = Field(
        [], max_length=DELIVERIES_KEPT, exclude_if=lambda d: not d
    )
    """The newest `DELIVERIES_KEPT` webhook deliveries and how each goes."""
    definition_checked: DefinitionCheck | None = Field(None, exclude_if=lambda c: c is None)
    """When the run last looked for a changed definition of its agent (agents with
    `definition_updates`); None: it never looks."""
    redefinitions: list[Redefinition] = Field(
        [], max_length=REDEFINITIONS_KEPT, exclude_if=lambda r: not r
    )
    """The changed definitions the run took (or could not), the newest
    `REDEFINITIONS_KEPT`."""
    mcp_tools_left: list[MCPToolsLeft] = Field(
        [], max_length=AGENTS_LEFT_KEPT, exclude_if=lambda m: not m
    )
    """The MCP tools of each agent with MCP servers the run handed over from (its latest
    time): a handoff back keeps the approvals they asked."""
    depth: int = Field(0, ge=0, le=100, exclude_if=lambda d: not d)
    """How deeply the run nests under runs that called agents as tools (0: none; a
    child's is its caller's plus one, bounded by `agent_calls.MAX_DEPTH`)."""
    first_agent: str | None = Field(
        None, min_length=1, max_length=200, exclude_if=lambda a: a is None
    )
    """The agent the run had when it first handed over (its `AgentName` from then on);
    None: it has not, or it was resumed since (a snapshot cannot say)."""
    imported: ImportRecord | None = Field(None, exclude_if=lambda i: i is None)
    """Set when the run was imported from another framework's run state."""
    sub_approvals: list[SubApproval] = Field(
        [], max_length=SUB_APPROVALS_KEPT, exclude_if=lambda s: not s
    )
    """Calls waiting for a decision in the runs below this one that it waits on, as they
    reported them; forgotten when that child ends."""
    sub_run_usage: Usage | None = Field(None, exclude_if=lambda u: u is None)
    """What the runs this run called as tools used, counted as each ended (one that
    failed: the whole token budget it was given); it counts against the run's token
    budget. None: no such run yet."""
    sub_runs: list[SubRunSnapshot] = Field([], max_length=SUB_RUNS_KEPT, exclude_if=lambda s: not s)
    """(A snapshot) the unfinished children of its open agent calls, each resumed with
    the caller (`AgentClient.export` writes them); a run drops one once it has resumed
    it."""
    interrupt: PendingInterrupt | None = Field(None, exclude_if=lambda i: i is None)
    """An interrupt asked and not applied yet (`workflows.interrupts`)."""
    interruptions: list[Interruption] = Field(
        [], max_length=INTERRUPTIONS_KEPT, exclude_if=lambda i: not i
    )
    """The turns interrupted, the newest `INTERRUPTIONS_KEPT`: who asked, what was cut,
    the calls answered as interrupted (withdrawn approvals among them)."""
    background_runs: list[BackgroundRun] = Field(
        [], max_length=BACKGROUND_RUNS_KEPT, exclude_if=lambda b: not b
    )
    """The child runs its agent calls started in the background, running or ended
    (the newest `BACKGROUND_RUNS_KEPT`); the running ones outlive a continue-as-new."""
    renamed_children: list[RenamedChild] = Field(
        [], max_length=RENAMED_CHILDREN_KEPT, exclude_if=lambda r: not r
    )
    """Agent calls whose child run was started under another id than the usual one (a
    workflow this run did not start held it): where clients find those children
    (`workflows.agent_calls.child_of`), and why."""
    child_runs: list[ChildRun] = Field([], max_length=CHILD_RUNS_KEPT, exclude_if=lambda c: not c)
    """The child runs its agent calls started (waited for or in the background), the
    newest `CHILD_RUNS_KEPT`: their ids cannot be computed (`workflows.agent_calls.child_of`)."""
    background: bool = Field(False, exclude_if=lambda b: not b)
    """(A child) started in the background: it tells its caller its progress and its
    end by signal (`sub_run_report`, `sub_run_finished`)."""
    created_at: AwareDatetime
    updated_at: AwareDatetime

    @model_validator(mode="after")
    def _check_consistency(self) -> RunState:
        """Refuse items that contradict each other (see `workflows.state_checks`)."""
        problem = state_checks.first_problem(self)
        if problem is not None:
            raise _refusal(*problem)
        return self


SubRunSnapshot.model_rebuild()


def _refusal(path: str, problem: str) -> PydanticCustomError:
    """A validation error that keeps the JSON path (`workflows.snapshot` reports it as is)."""
    context = {"path": path, "problem": problem}
    return PydanticCustomError("run_state", "invalid snapshot at {path}: {problem}", context)
