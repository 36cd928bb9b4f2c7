"""Payloads that cross a Temporal boundary: workflow input and result, signal,
update and query payloads, and the activities' inputs and results.

All plain JSON so that a service in any language, or the `temporal` CLI, can
send them. Unknown fields are refused rather than ignored.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from durable_agents.workflows.agent_spec import (
    AgentSpec,
    ApprovalCondition,
    ModelAPIName,
    ModelSettings,
)
from durable_agents.workflows.audit import Signature, WebhookDelivery
from durable_agents.workflows.execution_settings import ExecutionSettings
from durable_agents.workflows.input_items import TextOrItems, images_problem
from durable_agents.workflows.interrupt_models import Interruption
from durable_agents.workflows.run_items import Attachment, Item, ReasoningItem, RuleVerdict, Usage
from durable_agents.workflows.snapshot_input import SnapshotInput
from durable_agents.workflows.state import RunStatus, StartProof
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, field_validator

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([Zz]|[+-]\d{2}:\d{2})")


class _Payload(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Answer(BaseModel):
    """What a run answers to a query: a reader ignores fields a later build added
    (they are only ever added), so an older `agentctl` can still read a newer run."""

    model_config = ConfigDict(extra="ignore")


def problems(err: ValidationError) -> str:
    """A validation error on one line: `always: Input should be a valid boolean; ...`."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors()
    )


# --- workflow -----------------------------------------------------------------


class AgentInput(_Payload):
    """Input of `AgentWorkflow`."""

    agent: str = Field(min_length=1)
    """Name of an agent registered on the workers of the task queue."""
    input: TextOrItems
    """The user's first message, or an input list (`workflows.input_items`: user
    messages with text and image parts, as the OpenAI Agents SDK's `Runner.run` takes
    them)."""

    @field_validator("input")
    @classmethod
    def _few_images(cls, given: str | list[Any]) -> str | list[Any]:
        problem = images_problem(given) if isinstance(given, list) else None
        if problem is not None:
            raise ValueError(problem)
        return given

    context: JsonValue = None
    """JSON handed to every tool call (never to the model). With `resume_from`: laid
    over the snapshot's (`context_updates.overlay_context`)."""
    max_turns: int | None = Field(None, ge=1)
    """Overrides the agent's own limit of model calls."""
    session: bool = False
    """Keep the run open for further user messages (`send_message`) until ended."""
    resume_from: SnapshotInput | None = None
    """Continue from this snapshot instead of starting afresh: a RunState, or an
    exported snapshot file as is (digest checked, migrated; `workflows.snapshot_input`)."""
    token_budget: int | None = Field(None, ge=1)
    """This run's token budget: only lowers the agent's (a run cannot lift it)."""
    cost_budget: float | None = Field(None, gt=0, allow_inf_nan=False)
    """This run's cost budget, in the currency of the worker's price for the agent's
    model: only lowers the agent's."""
    model_settings: ModelSettings | None = None
    """This run's settings over the agent's (`temperature`, `tool_choice`, ...; not
    `extra_headers` or `extra_body`, which only the agent sets)."""
    unpause: bool = False
    """With `resume_from`: the resumed run is not paused, though the snapshot was."""
    depth: int | None = Field(None, ge=0, le=100, exclude_if=lambda d: d is None)
    """How deeply this run nests under runs that called agents as tools (a child: its
    caller's plus one); None: 0. Left out when None."""
    stream: bool | None = Field(None, exclude_if=lambda stream: stream is None)
    """Stream this run's model replies (`text_delta` events) or not, over the agent's
    `stream`; None: as the agent says. Left out when None."""
    events: JsonValue = Field(None, exclude_if=lambda carried: carried is None)
    """The run's event log, carried by continue-as-new (`workflows.event_stream`); in
    any other start it is ignored. Left out when there is none."""
    start_signature: StartSignature | None = None
    """Proof of who starts the run (`workflows.signed_start`): the run records the
    key's owner as `started_by`, whom a policy with `separate_duties` keeps from
    approving the run's calls. A start whose signature does not verify fails."""
    background: bool = Field(False, exclude_if=lambda b: not b)
    """(A run called as a tool) started in the background: it reports its progress and
    its end to its caller by signal. Left out when false."""
    caller_start: StartProof | None = Field(None, exclude_if=lambda s: s is None)
    """(A run called as a tool) the signed start of its tree's root, passed down by its
    caller: the run checks it (key, signature, the signed workflow id is its root's, as
    Temporal says) and records its signer as `started_by`; one that does not check out
    is not taken (the run starts unsigned). A run that is no child refuses it. Left out
    when None."""


class StartSignature(_Payload):
    """An Ed25519 signature, with an approver key, over the RFC 8785 canonical JSON of
    the start input in which this object stands without its `sig`."""

    model_config = ConfigDict(extra="forbid", strict=True)

    key_id: str = Field(min_length=1, max_length=200)
    workflow_id: str = Field(min_length=1, max_length=1000)
    """The workflow id the start is for: the signature is refused under any other."""
    expires_at: str = Field(max_length=40)
    """RFC 3339 time after which the signed start is refused (bounds its replay
    under a workflow id reused once the run has closed)."""
    sig: str = Field(pattern=r"^[A-Za-z0-9_-]{86}$")
    """The 64-byte signature, base64url without padding."""

    @field_validator("expires_at")
    @classmethod
    def _rfc3339(cls, value: str) -> str:
        parse_time(value)
        return value


class AgentResult(_Payload):
    """Result of `AgentWorkflow`: how the run ended."""

    status: RunStatus
    final_output: str | None
    turn: int
    usage: Usage
    sub_run_usage: Usage | None = Field(None, exclude_if=lambda u: u is None)
    """What the runs it called as tools used (`RunState.sub_run_usage`): with `usage`,
    what its caller counts against its own budget. Left out when None."""


# --- decisions ------------------------------------------------------------------


class DecisionSignal(_Payload):
    """Payload of the `approve` and `reject` signals."""

    model_config = ConfigDict(extra="forbid", strict=True)

    call_id: str = Field(min_length=1)
    approver: str = Field(min_length=1)
    reason: str | None = None
    always: bool = False
    arguments: dict[str, JsonValue] | None = None
    """Approve with these arguments instead of the model's (validated against the tool)."""
    sender: str | None = None
    """The program sending the decision (`agentctl`, a service's name), kept in the audit."""
    decision: Literal["approve", "reject", "answer"] | None = None
    """On a signal, must match its name when given; a signed signal must give it, so
    a signed rejection cannot be sent as an approval."""
    result: JsonValue = None
    """(`answer` only, and required there, JSON null included) the answer to a call of
    an external tool, checked against its answer schema (`workflows.answers`)."""
    run_id: str | None = Field(None, min_length=1, max_length=200)
    """The run (workflow id) the decision is for; refused by any other run."""
    arguments_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    """The `arguments_sha256` of the pending call as the approver was shown it;
    refused if the call's arguments differ."""
    expires_at: str | None = Field(None, max_length=40)
    """RFC 3339 time after which the decision is refused (and its `always` rule lapses)."""
    always_when: list[ApprovalCondition] | None = Field(None, min_length=1, max_length=20)
    """With `always`: the later calls the rule covers (all conditions must hold);
    without it, only calls with the same arguments."""
    execution_id: str | None = Field(None, min_length=1, max_length=200)
    """The run execution the decision is for (the pending item's `execution_id`);
    refused by any other, such as a later run reusing the workflow id. A signed
    decision must carry it when the pending item gives one."""
    metadata: dict[str, JsonValue] | None = Field(None, max_length=32)
    """The sender's own data (a ticket id, a change number): recorded with the decision
    in the audit, signed with it, never checked and never shown to the model."""
    signature: Signature | None = None
    """Ed25519 signature over the RFC 8785 canonical JSON of this payload without
    `signature` (`workflows.signed_decisions`)."""

    @field_validator("expires_at")
    @classmethod
    def _rfc3339(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time(value)
        return value


class AnswerSignal(DecisionSignal):
    """Payload of the `answer` signal: the answer to a call of an external tool."""

    decision: Literal["answer"] | None = None
    result: JsonValue = Field(...)
    """The answer (JSON, null included where the schema allows it), checked against the
    tool's answer schema (`workflows.answers`)."""


class DecideInput(DecisionSignal):
    """Payload of the `decide` update (and of the signals, once read)."""

    decision: Literal["approve", "reject", "answer"]


def parse_time(text: str) -> datetime:
    """An RFC 3339 time with an offset (`2026-11-25T12:00:00Z`); ValueError otherwise."""
    if not _RFC3339.fullmatch(text):
        raise ValueError(f"not an RFC 3339 time with an offset: {text[:60]!r}")
    return datetime.fromisoformat(text.upper())


class MessageSignal(_Payload):
    """Payload of the `send_message` signal and update: the user's next message in a
    session, and what it does if the run is working on a turn."""

    content: TextOrItems
    """The message: a text, or an input list (`workflows.input_items`: user messages
    with text and image parts)."""
    while_busy: Literal["queue", "interrupt", "reject"] | None = None
    """`queue`: delivered once the turn's tool calls are answered; `interrupt`: the
    model call and tools under way are stopped, the calls without a result answered as
    interrupted, and the run answers this message; `reject`: refused. None: the agent's
    `while_busy` (itself `queue` by default)."""


class InterruptInput(_Payload):
    """Payload of the `interrupt` update: who stops the current turn, and why (both
    optional)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    by: str | None = Field(None, min_length=1, max_length=200)
    reason: str | None = Field(None, max_length=2_000)


class EndSessionSignal(_Payload):
    """Payload of the `end_session` signal."""

    reason: str | None = None


class PauseSignal(_Payload):
    """Payload of the `pause` signal and update: who pauses and why (both optional)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    by: str | None = Field(None, min_length=1, max_length=200)
    reason: str | None = Field(None, max_length=2_000)


class ResumeSignal(_Payload):
    """Payload of the `resume` signal and update: who resumes (optional)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    by: str | None = Field(None, min_length=1, max_length=200)


class RefreshToolsSignal(_Payload):
    """Payload of the `refresh_tools` signal: who asks (optional)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    by: str | None = Field(None, min_length=1, max_length=200)


class StoreGCInput(_Payload):
    """Input of `AgentStoreGC` and of its activity: one collection of the worker's
    payload store (`durable_agents.dataplane.store_gc`)."""

    older_than_seconds: float = Field(86_400.0, ge=3_600.0)
    """Blobs written or re-used within this long are kept (at least an hour: a
    scheduled collection never forces a shorter grace)."""
    dry_run: bool = False


# --- queries ----------------------------------------------------------------------


class StatusView(_Answer):
    """Result of the `get_status` query."""

    status: RunStatus
    agent: str
    turn: int
    pending_approvals: int
    usage: Usage
    currency: str | None = None
    """The currency of `usage.cost` (the run's price); None: the run is not priced."""
    paused: bool = False
    """An operator has the run paused (`status` says `paused` once nothing runs)."""
    current_agent: str = ""
    """The agent answering now (the run's agent; another after a handoff)."""
    context_tokens: int | None = None
    """The estimated input tokens of the next model call (runs with a context policy)."""
    compactions: int = 0
    """Compactions of what the model is sent, so far."""
    error: str | None = None
    """Why a run ended failed or cancelled before it had a state (its `get_state` has
    nothing to show); a run with a state says it in `get_state`'s `error`."""
    webhooks: list[WebhookDelivery] = []
    """Webhook deliveries that are not through (failing, refused, given up, sending)."""
    definition: str | None = None
    """A digest of the agent definition the run uses (`definitions.digest`), frozen when it
    started: a worker's current one (`agentctl tools AGENT`) differs once the agent
    changed."""


class InterruptResult(_Answer):
    """Result of the `interrupt` update."""

    status: StatusView
    """The run's status once the turn stopped (a session waits for input; another run
    has ended `interrupted`)."""
    interruption: Interruption | None = None
    """What was stopped: the model call cut, the calls answered as interrupted. None:
    the run continued as new first, and applies it in its next workflow run (its state's
    `interruptions` will say)."""


class Evaluating(_Answer):
    """A policy's evaluator deciding a waiting call now (a person may still decide it
    first)."""

    evaluator: str
    """The evaluator's name (a function's `module.qualname`, an agent's name)."""
    kind: Literal["function", "agent"]
    since: datetime
    """When it was asked."""
    timeout_at: datetime
    """When it is given up on (the policy's `evaluator_timeout`): a person decides then."""


class PendingApproval(_Answer):
    """One entry of the `get_pending_approvals` query."""

    call_id: str
    tool: str
    arguments: str
    requested_at: datetime
    args: dict[str, JsonValue] | None = None
    """The arguments as a JSON object (`arguments` stays the JSON text)."""
    arguments_sha256: str | None = None
    """What a decision binds to: hex SHA-256 of the RFC 8785 canonical JSON of `args`."""
    run_id: str | None = None
    """The run (workflow id) that holds the call."""
    execution_id: str | None = None
    """The run's execution (`RunState.execution_id`): what a decision names besides
    `run_id`, so it cannot be replayed into a later run under the same workflow id."""
    sensitive: list[str] = []
    """Argument names the tool marks sensitive: `agentctl` and the UI show their
    values only on request."""
    path: list[str] = []
    """The agents from the run asked (first) down to the run that holds the call: one
    name for a call of the run itself; more for a call in a run below it (an agent
    called as a tool), whose `run_id` is that run's."""
    kind: Literal["approval", "answer"] = "approval"
    """`approval`: the call waits for approve or reject; `answer`: a call of an external
    tool, waiting for its answer (or a rejection)."""
    answer_schema: dict[str, JsonValue] | None = None
    """(`answer`) the JSON Schema the answer must meet."""
    short_id: str | None = None
    """A short id for the call (at most 8 characters, unique in the run tree, never
    another call's id), accepted wherever `call_id` is (`workflows.short_ids`)."""
    evaluating: Evaluating | None = None
    """The policy's evaluator is deciding the call now (None: it is not, or has answered;
    a call of a run below shows it on that run, `run_id`)."""
    reopened_because: str | None = Field(None, exclude_if=lambda r: r is None)
    """The call was approved, but the tool's worker refused to start it (the approver
    key that signed the approval was revoked), so it is asked again: why
    (`workflows.revoked_approvals`). Left out when it is asked for the first time."""


# --- a tree of runs (agents called as tools: workflows.tree_approvals) ----------------


# --- activities ---------------------------------------------------------------


class DescribeAgentInput(_Payload):
    """Input of `describe_agent`."""

    agent: str
    settings_only: bool = Field(False, exclude_if=lambda only: not only)
    """Only its execution settings (a run continued as new has its spec): what the
    history of every workflow run pays for, kept small."""
    approval_keys: list[str] = Field(
        default_factory=list, max_length=16, exclude_if=lambda keys: not keys
    )
    """`KEY_ID PUBLIC_KEY` of the keys that signed the approvals of a call about to start a
    child run or a handoff: refused (`ApprovalKeyRevoked`) unless the worker trusts each
    now (`activities.revoked_keys`)."""


class DescribedAgent(_Payload):
    """What `describe_agent` answers: the agent as a run freezes it, and how the worker
    executes its calls (kept apart: the second never enters the run)."""

    spec: AgentSpec | None
    """None when only the settings were asked (`settings_only`)."""
    settings: ExecutionSettings
    gate_key: str | None = Field(None, max_length=32, exclude_if=lambda k: k is None)
    """(`settings_only`) the describing worker's tagging gate key: a run continued as new
    makes its new ids with it (`workflows.secret_ids`), so a rotated key reaches it."""


class InstructionsScope(_Payload):
    """What `call_model` gives an agent's instructions function (`Agent(instructions=FUNCTION)`)."""

    agent: str = Field(min_length=1, max_length=200)
    run_id: str = Field(max_length=1_000)
    context: JsonValue = None
    """The run's JSON context, as its tools get it."""


class ModelRequest(_Payload):
    """Input of `call_model`: everything the model needs for one turn."""

    model: str
    instructions: str
    items: list[Item]
    tools: list[ToolSchema]
    turn: int
    tool_output_limit: int = 64_000
    """Characters of one tool result sent to the model; the rest is cut, marked."""
    settings: ModelSettings | None = None
    """The run's model settings; None: the endpoint's defaults."""
    output: OutputRef | None = None
    """Ask for the agent's output type (`call_model` finds its schema by digest in the
    worker, so history does not carry the schema on every turn); None: free text."""
    api: ModelAPIName | None = None
    """The API to speak (the agent's `model_api`); None: the worker's default."""
    approval_rules: RuleScope | None = Field(None, exclude_if=lambda r: r is None)
    """Ask the code rules of these tools about the reply's calls of them (on the worker,
    with the reply: the verdicts come back on its calls); None: no tool has one."""
    instructions_from: InstructionsScope | None = Field(None, exclude_if=lambda s: s is None)
    """Ask the agent's instructions function for the instructions (on the worker, in
    `call_model`: the text comes back on the reply); None: `instructions` as they are."""
    stream_key: str | None = Field(None, exclude_if=lambda key: key is None)
    """Stream the reply: publish its text and tool arguments as they come, each delta
    naming the call by this key (a correlation id, not a secret: batches are tagged
    with the gate keys); None: no streaming. Left out when None (earlier builds)."""


class OutputRef(_Payload):
    """An agent's output type, named by its strict schema's digest (`OutputSpec`)."""

    name: str
    sha256: str


class ToolSchema(_Payload):
    """A tool as the model sees it."""

    name: str
    description: str
    parameters: dict[str, JsonValue]


class ModelToolCall(_Payload):
    """A tool call as the model wrote it."""

    call_id: str
    tool: str
    arguments: str
    rule_verdict: RuleVerdict | None = Field(None, exclude_if=lambda v: v is None)
    """Its tool's code rule's verdict, worked out by `call_model` on the worker
    (`ModelRequest.approval_rules`); None for a tool without one."""


class RuleScope(_Payload):
    """What `call_model` needs to ask the code rules of the agent's tools about the
    calls of its reply (`ApprovalPolicy.rule`)."""

    agent: str
    run_id: str
    tools: list[str] = Field(min_length=1)
    """The tools with a code rule."""
    context: JsonValue = None
    """The run's context, as its tools get it."""
    mcp: dict[str, str] = Field({}, exclude_if=lambda m: not m)
    """Which of those are an MCP server's tools: tool name -> server name (the rule is
    the server's, `MCPServer(needs_approval=FUNCTION)`)."""


class OutputCheck(_Payload):
    """Whether a final reply is the agent's output type (checked by `call_model`
    against the type itself, in the worker that defines it)."""

    valid: bool
    value: JsonValue = None
    """The output as JSON (unwrapped for a type that is not an object)."""
    problem: str | None = None
    """Why it is not valid: the validation error, as the model is told it."""


class ModelReply(_Payload):
    """Result of `call_model`."""

    content: str | None = None
    tool_calls: list[ModelToolCall] = []
    usage: Usage = Usage()
    finish_reason: str | None = None
    output_check: OutputCheck | None = None
    """For a final reply (no tool calls) of an agent with an output type: the check."""
    reasoning: list[ReasoningItem] = []
    """The reasoning items of the reply (Responses API), to pass back on later calls."""
    instructions: str | None = Field(None, exclude_if=lambda i: i is None)
    """The instructions the agent's function gave for this call
    (`ModelRequest.instructions_from`), recorded with the reply; None: none asked, or
    the same text as the request's (what the run knew from the call before)."""


class ToolRequest(_Payload):
    """Input of `run_tool`."""

    run_id: str = ""
    """The run (workflow id) the call belongs to."""
    agent: str
    tool: str
    call_id: str
    arguments: str
    """JSON text of the arguments, validated by the activity against the tool's schema."""
    idempotency_key: str
    """Workflow id + tool call id: stable across retries and continue-as-new."""
    context: JsonValue = None
    conversation: list[Item] = Field([], exclude_if=lambda items: not items)
    """(A handoff with an input filter in code) the run's user messages, replies and tool
    results so far, in order, for the filter to choose from."""
    approval_keys: list[str] = Field(
        default_factory=list, max_length=16, exclude_if=lambda keys: not keys
    )
    """`KEY_ID PUBLIC_KEY` of each approver key whose signature approved this call (the
    run verified it with the keys frozen at its start): the tool's worker refuses the
    call when one is no longer among its own approver keys (revoked or removed)."""
    usage: Usage | None = Field(None, exclude_if=lambda u: u is None)
    """The run's usage when the call was made (the OpenAI Agents SDK's `ToolContext`
    carries it to a converted SDK tool)."""


class ContextUpdate(_Payload):
    """A tool's change to the run's context (`ToolContext.context`, `set_context`), made
    on the worker: the new context, or why it was not taken (`workflows.context_updates`)."""

    value: JsonValue = None
    """The whole new context (it replaces the run's), when the context the tool saw or
    the one it left is no JSON object; else None, and the change is in `keys`."""
    keys: dict[str, JsonValue] | None = Field(None, exclude_if=lambda k: k is None)
    """The top-level keys of the context object the tool set (added or changed)."""
    removed: list[str] = Field([], exclude_if=lambda r: not r)
    """The top-level keys of the context object the tool removed."""
    refused: str | None = Field(None, min_length=1, max_length=2_000)
    """Why the change is not taken (too large, not JSON); nothing else is then set."""


class ToolOutcome(_Payload):
    """Result of `run_tool`: the tool's output, or why it has none."""

    call_id: str
    content: str
    is_error: bool = False
    attachments: list[Attachment] = Field([], exclude_if=lambda found: not found)
    """Images the tool returned (MCP tools; `ToolResult.attachments`). Left out when
    there are none, so a `run_tool` result reads on a worker of an earlier build."""
    handoff_to: AgentSpec | None = Field(None, exclude_if=lambda spec: spec is None)
    """A handoff taken (`workflows.handoffs`): the agent the run goes on with. Made by
    the workflow, never by `run_tool`."""
    interrupted: bool = Field(False, exclude_if=lambda interrupted: not interrupted)
    """The call's outcome was lost (`ToolResult.interrupted`). Made by the workflow, never
    by `run_tool`."""
    asked_again: bool = Field(False, exclude_if=lambda again: not again)
    """No outcome: the call's approval was taken back and it waits for a decision again
    (`workflows.revoked_approvals`); `content` says why. Made by the workflow, never by
    `run_tool`."""
    left_out: list[int] | None = Field(None, exclude_if=lambda out: out is None)
    """(A handoff with an input filter in code) the positions in the request's
    `conversation` of the items the filter left out for the new agent."""
    context_update: ContextUpdate | None = Field(None, exclude_if=lambda u: u is None)
    """The tool changed the run's context (a tool with a `ToolContext` parameter); None:
    it did not. Applied by the workflow in the order of the reply's calls."""


ModelRequest.model_rebuild()
AgentInput.model_rebuild()
