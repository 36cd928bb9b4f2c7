"""RunState: the whole state of one agent run, as plain, versioned data.

It is what the workflow holds in memory, what `get_state` returns and what
`export` writes. Every model refuses unknown fields, timestamps must carry an
offset, and RunState checks that its items agree with each other
(`workflows.state_checks`), so a snapshot that does not match fails to load
instead of being silently defaulted. Snapshot files and workflow input
(`workflows.snapshot.loads`, `SnapshotInput`) are also validated strictly (no
coercion: `"3"` is not a turn); decision records always are.
"""

from __future__ import annotations

import base64
import binascii
from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Literal, get_args

from durable_agents.workflows import state_checks
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    StrictStr,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

SCHEMA_VERSION = "2.0"
"""The RunState schema this code writes ("MAJOR.MINOR"; minor = additive, major =
breaking). One version per release (DESIGN.md, RunState); nothing is released yet,
so every snapshot of this build is 2.0 and nothing older is read (the 1.x versions
of pre-release builds are refused, `workflows.snapshot`)."""

SCHEMA_RELEASED = False
"""Whether a release has shipped `SCHEMA_VERSION`. Until it does, its committed schema
and golden fixtures follow the model (`python -m schemas.generate`, `python -m
tests.support.snapshot_golden` rewrite them); from then on they are frozen, and a
change to RunState needs a new version and a migration (`workflows.migrations`)."""

REFUSALS_KEPT = 50
"""Newest entries kept in `refused_decisions` and in `refused_signals`; older ones
are dropped and counted, so a flood of bad signals cannot grow the state."""

PREVIEW_CHARS = 200
"""Characters of a refused signal's payload kept in its audit entry."""


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
}


class RetrySpec(_Model):
    """A bounded retry policy in plain JSON (mapped onto Temporal's RetryPolicy)."""

    initial_interval_seconds: float = Field(1.0, gt=0)
    """Delay before the first retry."""
    backoff_coefficient: float = Field(2.0, ge=1)
    """Each further delay is the previous one times this."""
    maximum_interval_seconds: float = Field(30.0, gt=0)
    """Upper bound on the delay between attempts."""
    maximum_attempts: int = Field(3, ge=1)
    """Attempts in all, the first included; 1 means no retry."""
    non_retryable_error_types: list[str] = []
    """Error types (a tool's exception class name, an ApplicationError type) never
    retried."""
    budget_seconds: float | None = Field(None, gt=0)
    """Retries stop once this long has passed since the call was first scheduled
    (Temporal's schedule-to-close timeout), whichever of it and `maximum_attempts`
    comes first; None: attempts alone bound them."""


class ApprovalCondition(_Model):
    """`arguments[field] <op> value`, evaluated on the model's arguments."""

    field: str = Field(min_length=1)
    op: Literal["==", "!=", ">", ">=", "<", "<=", "in", "not_in"]
    value: JsonValue


class ApprovalPolicy(_Model):
    """When a call needs a decision, who may decide, and how long it may wait."""

    when: list[ApprovalCondition] = []
    """Approval is needed if any condition holds; empty: always. A condition that
    cannot be evaluated (missing field, incomparable types) counts as holding."""
    approvers: list[str] | None = None
    """Only these approvers may decide; None: anyone."""
    timeout: timedelta | None = Field(None, gt=timedelta(0))
    """How long a call may wait for a decision (a durable timer); None: forever."""
    on_timeout: Literal["reject", "fail"] = "reject"
    """At the deadline: reject the call (the model is told why) or fail the run."""
    require_signature: bool = False
    """Only decisions signed with one of the agent's approver keys (Ed25519) count;
    the approver is the key's owner."""
    allow_always: bool = True
    """Whether a decision may set `always` (a standing rule for later calls)."""
    limits: list[ApprovalCondition] = []
    """Conditions every call's arguments must meet, the model's and an approver's
    edit alike (e.g. `amount <= 1000`): a call outside them is answered to the model
    as refused, an edit outside them is refused. A condition that cannot be
    evaluated does not hold."""
    separate_duties: bool = False
    """Whoever started the run may not approve its calls: approvals must be signed,
    the run's start must be signed (`RunState.started_by`), and the two keys must
    belong to different owners."""


EventType = Literal[
    "approval_requested",
    "approval_decided",
    "approval_expired",
    "run_finished",
    "paused",
    "resumed",
]
"""The run events a webhook can be sent (`workflows.run_events`)."""
EVENT_TYPES: tuple[str, ...] = get_args(EventType)


class WebhookSubscription(_Model):
    """Which run events go to a webhook endpoint the worker knows by name
    (`AGENT_WEBHOOKS`; its URL and secret never enter a run)."""

    endpoint: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    events: list[EventType] = Field(min_length=1, max_length=len(EVENT_TYPES))


class ToolSpec(_Model):
    """A tool as frozen into a run at start: enough to call and police it."""

    name: str = Field(min_length=1)
    description: str
    parameters: dict[str, JsonValue]
    """JSON Schema of the tool's arguments (made by pydantic from its type hints)."""
    needs_approval: bool = False
    """Calls may need an approve/reject decision before they run (see `approval`)."""
    approval: ApprovalPolicy = ApprovalPolicy()
    """The approval policy, used when `needs_approval` is true."""
    timeout_seconds: float = Field(60.0, gt=0)
    """Start-to-close timeout of one attempt of the tool's activity."""
    retry: RetrySpec = RetrySpec()
    """How often a raising tool is tried before its error goes to the model."""
    heartbeat_timeout_seconds: float | None = Field(None, gt=0)
    """The tool's activity heartbeats while it runs; an attempt silent this long
    (its worker died) is retried at once, and a cancel reaches it. None: no
    heartbeat timeout."""
    sensitive: list[str] = []
    """Top-level argument names whose values are kept out of sight: redacted in the
    UI's details, activity summaries and logs, and shown by `agentctl` as
    `<sensitive, N chars>` unless asked (`--show-sensitive`). They stay in the
    run's (encrypted) payloads."""
    mcp_server: str | None = Field(None, min_length=1, max_length=200)
    """The MCP server the tool is on (`AgentSpec.mcp_servers`); None: a `@tool` function."""
    mcp_tool: str | None = Field(None, min_length=1, max_length=200)
    """The tool's name on its MCP server (`name` may carry the server's prefix)."""
    webhooks: list[WebhookSubscription] | None = Field(None, exclude_if=lambda w: w is None)
    """Where this tool's approval events go instead of the agent's (`AgentSpec.webhooks`);
    None: the agent's."""
    handoff: str | None = Field(None, min_length=1, max_length=200, exclude_if=lambda h: h is None)
    """The agent this tool hands the run over to (`transfer_to_<agent>`): calling it
    switches the run's agent from the next model call. None: a tool."""
    runs_agent: str | None = Field(
        None, min_length=1, max_length=200, exclude_if=lambda a: a is None
    )
    """The agent a call of this tool runs, as a run of its own (a child workflow whose
    final output is the call's result: `Agent.as_tool`). None: a tool."""
    on_failure: Literal["tool_error", "fail_run"] | None = Field(
        None, exclude_if=lambda f: f is None
    )
    """(An agent called as a tool) what a child that does not complete does to the run
    that called it: `tool_error` (None: the same), its model is told; `fail_run`, the
    run fails too."""
    input_filter: Literal["remove_tools"] | None = Field(None, exclude_if=lambda f: f is None)
    """(A handoff) what the new agent's model is sent of the conversation before the
    handoff: None, all of it; `remove_tools`, without tool calls and results (the
    run keeps them)."""
    task_queue: str | None = Field(
        None, min_length=1, max_length=200, exclude_if=lambda q: q is None
    )
    """The task queue the tool's calls go to (`@tool(task_queue=...)`); None: the run's."""
    queue_timeout_seconds: float = Field(60.0, gt=0, exclude_if=lambda s: s == 60.0)
    """(`task_queue`) how long a call waits for a worker of that queue to start it; then
    the model is told none serves it."""
    local: bool = Field(False, exclude_if=lambda local: not local)
    """The tool runs as a local activity, in the worker that runs the run's workflow task
    (`@tool(local=True)`): no activity task through the server, no heartbeat; its
    attempts are retried with the workflow task."""


class MCPServer(_Model):
    """An MCP server whose tools an agent uses (`Agent(mcp_servers=[...])`); the worker
    knows how to reach it (`AGENT_MCP_SERVERS`)."""

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_-]+$")
    allow: list[str] | None = Field(None, max_length=200)
    """Names or globs (`fnmatch`) of the server's tools the agent may use; None: all."""
    prefix: str = Field("", max_length=50, pattern=r"^[A-Za-z0-9_-]*$")
    """Put before each tool's name (the model sees `prefix + name`)."""
    needs_approval: bool | list[str] | None = None
    """True: every tool needs approval; False: none; names or globs: those do (the
    others as their annotations say); None: as the server's annotations say (read-only:
    no approval; destructive or unannotated: approval). The agent's word wins."""
    approval: ApprovalPolicy = ApprovalPolicy()
    """The policy of the calls that need approval."""
    timeout_seconds: float = Field(60.0, gt=0)
    """Start-to-close timeout of one attempt of a call to it (tools and the tool list)."""
    retry: RetrySpec | None = None
    """How often a failing call is tried before its error goes to the model. None: a
    tool the server calls read-only or idempotent is tried 3 times, any other once (an
    attempt that timed out may still be running: trying again could do it twice)."""


class GuardrailSpec(_Model):
    """A guardrail as frozen into a run: enough to run it as an activity."""

    name: str = Field(min_length=1, max_length=200)
    kind: Literal["input", "output"]
    timeout_seconds: float = Field(60.0, gt=0)
    """Start-to-close timeout of one attempt of its activity."""
    retry: RetrySpec = RetrySpec()
    """How often it is tried; one that still fails counts as tripped."""


class ApproverKey(_Model):
    """An Ed25519 public key whose signatures count as decisions of `owner`."""

    key_id: str = Field(min_length=1, max_length=200)
    owner: str = Field(min_length=1, max_length=200)
    """The approver the key speaks for (what `approvers` lists)."""
    public_key: str = Field(pattern=r"^[A-Za-z0-9_-]{43}$")
    """The raw 32-byte public key, base64url without padding."""
    not_after: AwareDatetime | None = None
    """Signatures made with it are refused after this time; None: no end."""


class ModelSettings(_Model):
    """How the model is asked: sampling and tool-use settings, sent with every model call
    of a run. Unset fields (None) are not sent, so the endpoint's defaults apply."""

    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    max_output_tokens: int | None = Field(None, ge=1)
    """Most tokens one reply may have (Chat Completions: `max_completion_tokens`)."""
    tool_choice: str | None = Field(None, min_length=1, max_length=64)
    """`auto`, `none`, `required` (some tool), or the name of one of the agent's tools."""
    parallel_tool_calls: bool | None = None
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    seed: int | None = None
    stop: list[str] | None = Field(None, min_length=1, max_length=4)
    metadata: dict[str, str] | None = Field(None, max_length=16)
    extra_headers: dict[str, str] | None = Field(None, max_length=32)
    """HTTP headers for an OpenAI-compatible endpoint. The agent's to set: a start
    input may not (it could redirect what the worker's key pays for)."""
    extra_body: dict[str, JsonValue] | None = Field(None, max_length=32)
    """Request-body parameters of an OpenAI-compatible endpoint, merged in last. The
    agent's to set, like `extra_headers`."""

    def is_empty(self) -> bool:
        """Nothing set: the endpoint's defaults."""
        return not self.model_dump(exclude_none=True)


class OutputSpec(_Model):
    """The type of an agent's final output, as the model is asked for it: a strict JSON
    Schema, named, and its digest (which build's type it was, for a reader of a
    snapshot taken by another build)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """The type's name (`RefundDecision`; `list_str` for `list[str]`)."""
    json_schema: dict[str, JsonValue]
    """The strict JSON Schema the reply must match (an object at the root)."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Hex SHA-256 of the RFC 8785 canonical JSON of `json_schema`."""
    wrapped: bool = False
    """The type is not an object (`int`, `list[str]`, a union): the schema is an object
    whose one property `output` holds the value, and the output is that value."""


class ContextPolicy(_Model):
    """How much of a long conversation the model is sent (`workflows.context`): past
    `max_input_tokens` (estimated) the run compacts what the model sees, never what
    it keeps."""

    max_input_tokens: int = Field(ge=256)
    """The most input tokens a model call should send (below the model's window)."""
    strategy: Literal["stub_tool_outputs", "summarize"] = "stub_tool_outputs"
    """`stub_tool_outputs`: older tool results are sent as one-line stubs;
    `summarize`: the conversation before the recent turns is sent as a summary the
    model writes of it (a model call of its own)."""
    keep_recent_turns: int = Field(4, ge=1, le=1_000)
    """Replies (with their tool results) always sent as they are."""


ModelAPIName = Literal["chat_completions", "responses"]
"""The provider APIs a model call can speak (`activities.model_api`)."""


DefinitionUpdates = Literal["never", "next_message", "continue_as_new"]
"""`AgentSpec.definition_updates`: when a changed agent definition reaches a run."""


class AgentSpec(_Model):
    """The agent as it was when the run started (later code changes do not leak in)."""

    name: str = Field(min_length=1)
    instructions: str
    model: str = Field(min_length=1)
    tools: list[ToolSpec] = []
    max_turns: int = Field(10, ge=1)
    """Default limit of model calls answering one user message."""
    model_timeout_seconds: float = Field(120.0, gt=0)
    """Start-to-close timeout of one model call attempt."""
    model_retry: RetrySpec = RetrySpec(maximum_attempts=8, maximum_interval_seconds=60.0)
    """Retries of transient model failures (429, 5xx, timeouts, connection errors)."""
    model_heartbeat_timeout_seconds: float | None = Field(None, gt=0)
    """As `ToolSpec.heartbeat_timeout_seconds`, for model calls."""
    tool_output_limit: int = Field(64_000, ge=1)
    """Characters of one tool result the model is shown; the rest is cut, with a
    marker saying so (the run state keeps the whole output)."""
    session_idle_timeout: timedelta | None = Field(None, gt=timedelta(0))
    """A session waiting this long for the next message ends; None: it waits forever."""
    turns_per_workflow_run: int = Field(100, ge=1)
    """Model calls after which the run continues as new (earlier if Temporal suggests it)."""
    history_bytes_per_workflow_run: int | None = Field(None, ge=1)
    """History size after which the run continues as new; None: Temporal's own
    suggestion decides (its server limit `limit.historySize.suggestContinueAsNew`)."""
    approver_keys: list[ApproverKey] = []
    """Public keys of the approvers whose signed decisions this run accepts, from the
    worker's configuration when the run started or resumed."""
    snapshot_keys: list[ApproverKey] = []
    """Public keys whose Ed25519-signed snapshots a resume trusts with the decisions
    they carry (`workflows.snapshot_signature`), from the worker's configuration
    (`owner`: who exports with it)."""
    refuse_unverified_snapshots: bool = False
    """The worker refuses to resume a snapshot that does not verify under
    `snapshot_keys` (the run fails as invalid input)."""
    output: OutputSpec | None = None
    """The type the final output must have; None: free text."""
    output_retries: int = Field(2, ge=0, le=10)
    """Final replies that do not match `output` sent back to the model with the
    validation error before the run ends `output_invalid`."""
    model_settings: ModelSettings = ModelSettings()
    """The agent's own model settings."""
    input_guardrails: list[GuardrailSpec] = []
    """Checks on each message of the user, before the model sees it."""
    output_guardrails: list[GuardrailSpec] = []
    """Checks on the final output, before the run ends or waits."""
    token_budget: int | None = Field(None, ge=1)
    """Tokens (input and output, as the provider counts them) a run may spend; None:
    no budget."""
    model_api: ModelAPIName | None = None
    """The API model calls speak; None: the worker's default."""
    price: ModelPrice | None = None
    """What the agent's model costs, from the worker's price table when the run started
    or resumed; None: not priced (costs stay 0)."""
    cost_budget: float | None = Field(None, gt=0, allow_inf_nan=False)
    """Money (in `price.currency`) a run may spend; None: no budget."""
    on_budget: Literal["stop", "ask"] = "stop"
    """At a budget: end the run `budget_exceeded`, or ask a person to extend it (a
    `BudgetRequest`, decided like a tool call)."""
    budget_approval: ApprovalPolicy = ApprovalPolicy()
    """Who may extend a budget, signed or not, and how long a request waits (its
    `limits` cap the budget an approver may set)."""
    context_policy: ContextPolicy | None = None
    """How the conversation is cut to the model's window (`Agent(context=...)`);
    None: all of it is sent."""
    mcp_servers: list[MCPServer] = []
    """MCP servers whose tools the agent uses: listed when a run starts or resumes and
    kept in `tools` for the run (`workflows.mcp_tools`)."""
    stream: bool = Field(False, exclude_if=lambda stream: not stream)
    """The model is called with streaming and its text and tool arguments are published
    as they come (`text_delta` run events); the reply recorded is the same. Added in
    1.19."""
    send_tool_images: bool = Field(False, exclude_if=lambda send: not send)
    """The model is sent the images tools return (`ToolResult.attachments`; for a model
    that reads images); False: a line saying what each is."""
    webhooks: list[WebhookSubscription] = Field([], exclude_if=lambda w: not w)
    """Where the run's events go: the agent's subscriptions and the worker's
    (`AGENT_WEBHOOKS`), by endpoint name."""
    definition_updates: DefinitionUpdates = Field("never", exclude_if=lambda u: u == "never")
    """When a changed definition of the agent (on the workers of the day) reaches a run
    already in flight: never (the run keeps the one it started with), at the next
    session message, or at each continue-as-new; only at a point where no call and no
    budget request is open (`workflows.definitions`)."""

    def tool(self, name: str) -> ToolSpec | None:
        """The tool called `name`, or None if the agent has no such tool."""
        return next((t for t in self.tools if t.name == name), None)

    def guardrails(self, kind: Literal["input", "output"]) -> list[GuardrailSpec]:
        """The agent's guardrails of `kind`, in order."""
        return self.input_guardrails if kind == "input" else self.output_guardrails

    def require_tool(self, name: str) -> ToolSpec:
        """The tool called `name`, for a call known to name one (the loop answers
        calls of unknown tools itself, so they never run or wait for approval)."""
        found = self.tool(name)
        if found is None:
            raise LookupError(f"agent {self.name} has no tool {name!r}")
        return found


class Usage(_Model):
    """Token usage summed over every model call of the run."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    """Of `input_tokens`, those the provider served from its prompt cache."""
    reasoning_tokens: int = 0
    """Of `output_tokens`, those spent reasoning (not in the reply)."""
    cost: float = Field(0.0, ge=0, allow_inf_nan=False)
    """What the tokens cost at the run's price (`AgentSpec.price`, its currency); 0
    without one."""

    def plus(self, other: Usage) -> Usage:
        """The sum of two usages."""
        return Usage(**{name: getattr(self, name) + getattr(other, name) for name in _COUNTS})


_COUNTS = tuple(Usage.model_fields)


class ModelPrice(_Model):
    """What a million tokens of one model cost, by kind (a worker's price table,
    `AGENT_PRICES`). Reasoning tokens are output tokens and cost as such."""

    input: float = Field(ge=0, allow_inf_nan=False)
    """Per million input tokens not served from the prompt cache."""
    output: float = Field(ge=0, allow_inf_nan=False)
    """Per million output tokens (reasoning included)."""
    cached_input: float | None = Field(None, ge=0, allow_inf_nan=False)
    """Per million input tokens served from the prompt cache; None: as `input`."""
    currency: str = Field("USD", pattern=r"^[A-Z]{3}$")
    """ISO 4217 code of the prices (and of a cost budget against them)."""

    def cost(self, usage: Usage) -> float:
        """What `usage`'s tokens cost at this price."""
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        per_million = (
            (usage.input_tokens - cached) * self.input
            + cached * cached_price
            + usage.output_tokens * self.output
        )
        return per_million / 1_000_000


class ToolCall(_Model):
    """One tool call requested by the model."""

    call_id: str = Field(min_length=1)
    tool: str
    arguments: str
    """The arguments exactly as the model wrote them (JSON text, possibly malformed)."""
    needs_approval: bool = False
    """Whether the tool's approval policy asked for a decision before this call runs."""
    idempotency_key: str | None = Field(None, min_length=1)
    """The key `run_tool` gets for this call, recorded when the call is carried
    open into another run (resume or fork): the key of the run that proposed it,
    kept across any number of resumes, so a tool that deduplicates by key runs
    it once. None: this run's id + the call id."""


class UserMessage(_Model):
    """A message from the user."""

    type: Literal["user_message"] = "user_message"
    content: str
    feedback: bool = False
    """Written by the run, not the user: why the previous reply was not the agent's
    output type (it does not start a new exchange)."""


class ReasoningItem(_Model):
    """The model's reasoning behind a reply, as the Responses API returns it: kept so
    the next call can carry it on (`store=False`: the provider keeps nothing, the
    run does)."""

    id: str = Field(min_length=1, max_length=200)
    summary: list[str] = []
    """The reasoning summaries the provider sent, if any (readable)."""
    encrypted_content: str | None = None
    """The reasoning itself, encrypted by the provider for the provider; None: not
    sent, and then not passed back either."""


class AssistantMessage(_Model):
    """One model reply: text, tool calls, or both."""

    type: Literal["assistant_message"] = "assistant_message"
    turn: int = Field(ge=1)
    content: str | None = None
    tool_calls: list[ToolCall] = []
    at: AwareDatetime
    """Workflow time at which the reply was recorded."""
    usage: Usage | None = None
    """What this model call used, as the provider reported it."""
    reasoning: list[ReasoningItem] = []
    """The reasoning behind this reply (Responses API), passed back on later calls."""


IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image types a tool's image is kept in: those model APIs read."""
MAX_ATTACHMENT_BYTES = 4 * 1024 * 1024
"""The largest image kept from one tool result (decoded); a larger one is described."""
MAX_ATTACHMENTS = 4
"""Images kept from one tool result; the others are described."""
MAX_RUN_IMAGE_BYTES = 32 * 1024 * 1024
"""Image bytes one run keeps in all (its state crosses every continue-as-new); images
past it are described."""


_MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
"""How each image type's bytes start."""


class Attachment(_Model):
    """An image a tool returned (an MCP tool's image block), kept whole: the run's state
    holds it, history a payload-store reference to it."""

    kind: Literal["image"] = "image"
    mime_type: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
    data: str = Field(
        min_length=1,
        max_length=(MAX_ATTACHMENT_BYTES + 2) // 3 * 4,
        pattern=r"^[A-Za-z0-9+/]*={0,2}$",
    )
    """The image, base64 (standard alphabet, padded)."""

    @field_validator("data")
    @classmethod
    def _base64(cls, data: str) -> str:
        try:
            image = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("not base64") from None
        if base64.b64encode(image).decode() != data:
            raise ValueError("not canonical base64 (padded as its length needs)")
        if len(image) > MAX_ATTACHMENT_BYTES:
            raise ValueError(f"an image of {len(image):,} bytes; at most {MAX_ATTACHMENT_BYTES:,}")
        return data

    @model_validator(mode="after")
    def _is_what_it_says(self) -> Attachment:
        """The bytes start as an image of `mime_type` does: a model API refuses (for good)
        an image it cannot read, so a mislabelled one is not kept."""
        head = base64.b64decode(self.data[:24])
        if not any(head.startswith(m) for m in _MAGIC[self.mime_type]) or (
            self.mime_type == "image/webp" and head[8:12] != b"WEBP"
        ):
            raise ValueError(f"the data is not a {self.mime_type} image")
        return self

    @property
    def size(self) -> int:
        """Bytes of the image."""
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")


class ToolResult(_Model):
    """What goes back to the model for one tool call."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    content: str
    is_error: bool = False
    """The tool failed, was refused or was called wrongly; content says why."""
    attachments: list[Attachment] = Field(
        [], max_length=MAX_ATTACHMENTS, exclude_if=lambda found: not found
    )
    """Images the tool returned (`content` says what each is); written only when there
    are some."""


class Decision(_Model):
    """An approve/reject decision on one tool call (strict: no coercion of any field)."""

    type: Literal["decision"] = "decision"
    call_id: StrictStr = Field(min_length=1)
    decision: Literal["approve", "reject"]
    approver: StrictStr = Field(min_length=1)
    reason: StrictStr | None = None
    always: StrictBool = False
    """Apply the same decision to later calls of this tool in the run: only to calls
    with the same arguments (`arguments_sha256`), or that meet `always_when` (and
    before `expires_at`); one without `arguments_sha256` covers every call of the tool."""
    via: Literal["signal", "update", "rule", "timeout"]
    """How it was made: a signal, the `decide` update, an earlier `always`
    decision of `approver`, or the approval deadline passing."""
    sender: StrictStr | None = None
    """The program that sent it, as it said (`agentctl`, a service's name)."""
    arguments: dict[str, JsonValue] | None = None
    """Arguments edited by the approver; they replace the model's for this call."""
    run_id: StrictStr | None = None
    """The run the decision named (checked against this run)."""
    arguments_sha256: StrictStr | None = None
    """Digest of the call's arguments as proposed (what the decision was bound to):
    hex SHA-256 of their RFC 8785 canonical JSON."""
    expires_at: StrictStr | None = None
    """RFC 3339 time after which the decision (and an `always` rule it made) no longer
    applies."""
    signed_by: StrictStr | None = None
    """Id of the approver key whose signature was verified; None: unsigned."""
    always_when: list[ApprovalCondition] | None = None
    """With `always`: the rule covers later calls whose arguments meet all of these;
    None: only calls with the same arguments (`arguments_sha256`)."""
    execution_id: StrictStr | None = None
    """The run execution the decision named (`RunState.execution_id`)."""
    metadata: dict[str, JsonValue] | None = None
    """The sender's own data that came with the decision (a ticket id)."""
    at: AwareDatetime


class GuardrailCheck(_Model):
    """A guardrail's verdict on what comes before it (a user message, a final reply)."""

    type: Literal["guardrail_check"] = "guardrail_check"
    kind: Literal["input", "output"]
    name: StrictStr
    tripped: StrictBool
    reason: StrictStr | None = None
    item: int | None = Field(None, ge=0)
    """Index in `items` of what it checked; None: the latest such item before it."""
    at: AwareDatetime


class RefusedSignal(_Model):
    """A signal the run could not use: an unknown name, a payload that is not the
    signal's, or more than one argument. Decision signals are audited in
    `refused_decisions` instead."""

    signal: StrictStr
    """The signal's name, as sent."""
    payload: StrictStr | None = None
    """The start of what was sent, as JSON text (at most `PREVIEW_CHARS`); None: nothing."""
    refused_because: StrictStr
    at: AwareDatetime
    """Workflow time at which the signal was handled."""


class Signature(_Model):
    """An Ed25519 signature over the RFC 8785 canonical JSON of a decision payload
    without its `signature` field."""

    key_id: StrictStr = Field(min_length=1, max_length=200)
    sig: StrictStr = Field(pattern=r"^[A-Za-z0-9_-]{86}$")
    """The 64-byte signature, base64url without padding."""


class DecisionAttempt(_Model):
    """A decision signal not recorded as a Decision: held or refused."""

    call_id: StrictStr
    decision: Literal["approve", "reject"]
    approver: StrictStr
    reason: StrictStr | None = None
    always: StrictBool = False
    sender: StrictStr | None = None
    """The program that sent it, as it said."""
    arguments: dict[str, JsonValue] | None = None
    run_id: StrictStr | None = None
    arguments_sha256: StrictStr | None = None
    expires_at: StrictStr | None = None
    signature: Signature | None = None
    always_when: list[ApprovalCondition] | None = None
    """The binding fields the sender gave (see `Decision`)."""
    execution_id: StrictStr | None = None
    """As `Decision.execution_id`."""
    metadata: dict[str, JsonValue] | None = None
    """As `Decision.metadata` (not kept on a refused one)."""
    via: Literal["signal", "snapshot"] = "signal"
    """`snapshot`: a decision carried in a resumed snapshot that could not be
    verified, dropped rather than trusted."""
    at: AwareDatetime
    """Workflow time at which the signal was handled."""
    refused_because: str | None = None
    """Why it cannot apply; None while it is held for a call not yet seen."""


class BudgetRequest(_Model):
    """The run reached a budget and asks to extend it (`AgentSpec.on_budget="ask"`):
    pending like a tool call of `BUDGET_TOOL` whose arguments name the new budget,
    approved or rejected with the same signals and update."""

    type: Literal["budget_request"] = "budget_request"
    call_id: str = Field(pattern=r"^budget/[1-9][0-9]{0,8}$")
    """`budget/<n>`: a `/` no model call id keeps, so none can collide with it."""
    kind: Literal["tokens", "cost"]
    budget: float = Field(gt=0, allow_inf_nan=False)
    """The budget reached."""
    needed: float = Field(gt=0, allow_inf_nan=False)
    """What the run has used plus the bound of its next model call."""
    proposed: float = Field(gt=0, allow_inf_nan=False)
    """The budget an approval sets, unless it edits the arguments."""
    message: str
    """Why the next call could pass the budget, in words."""
    at: AwareDatetime


class Compaction(_Model):
    """What the model is sent instead of older items from here on (`workflows.context`):
    the run keeps every item; this records what was replaced by what."""

    type: Literal["compaction"] = "compaction"
    turn: int = Field(ge=1)
    """The model call it was made for."""
    strategy: Literal["stub_tool_outputs", "summarize"]
    reason: Literal["window", "context_length_exceeded"]
    """The estimate passed the policy's window, or the provider refused the request."""
    up_to: int = Field(ge=0)
    """Items before this index are what it covers."""
    stubbed: list[str] = []
    """Call ids whose results the model is sent as a stub."""
    summary: str | None = None
    """The model's summary of the items before `up_to` (summarize)."""
    dropped: bool = False
    """The items before `up_to` are not sent at all (stub_tool_outputs, when stubs
    were not enough): a line says how many there were."""
    tokens_before: int = Field(ge=0)
    tokens_after: int = Field(ge=0)
    """Estimated input tokens of the call without and with it."""
    usage: Usage | None = None
    """What writing the summary used."""
    at: AwareDatetime


class Handoff(_Model):
    """The run went on with another agent (a handoff tool's call, `ToolSpec.handoff`):
    its instructions, tools, model, settings and output type from the next model call;
    the conversation carries over."""

    type: Literal["handoff"] = "handoff"
    call_id: str = Field(min_length=1)
    """The call of the handoff tool."""
    from_agent: str = Field(min_length=1, max_length=200)
    to_agent: str = Field(min_length=1, max_length=200)
    turn: int = Field(ge=1)
    """The reply that asked for it."""
    reason: str | None = Field(None, max_length=2_000)
    """The call's arguments (its `reason`, if it has one), as the model gave them."""
    input_filter: Literal["remove_tools"] | None = Field(None, exclude_if=lambda f: f is None)
    """What the new agent's model is sent of the conversation before this handoff
    (`ToolSpec.input_filter`)."""
    at: AwareDatetime


BUDGET_TOOL = "extend_budget"
"""The name a budget request goes by where pending calls are listed."""


Item = Annotated[
    UserMessage
    | AssistantMessage
    | ToolResult
    | Decision
    | GuardrailCheck
    | BudgetRequest
    | Compaction
    | Handoff,
    Field(discriminator="type"),
]


class Pause(_Model):
    """Who paused a run, why and when (`pause` signal or update)."""

    by: str | None = Field(None, max_length=200)
    reason: str | None = Field(None, max_length=2_000)
    at: AwareDatetime


class PauseEvent(_Model):
    """One pause or resume of a run, for the audit (`RunState.pause_log`)."""

    action: Literal["pause", "resume"]
    by: str | None = Field(None, max_length=200)
    reason: str | None = Field(None, max_length=2_000)
    at: AwareDatetime


PAUSES_KEPT = 50
"""Newest entries kept in `RunState.pause_log`."""


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


class Redefinition(_Model):
    """A run that took its agent's changed definition, or could not
    (`RunState.redefinitions`)."""

    at: AwareDatetime
    turn: int = Field(ge=0)
    reason: Literal["session_message", "continue_as_new"]
    before: str = Field(min_length=1, max_length=64)
    """The digest of the definition the run had (`definitions.digest`)."""
    after: str | None = Field(None, min_length=1, max_length=64)
    """The digest of the one it has since; None: it kept `before` (see `error`)."""
    changed: list[str] = Field([], max_length=64)
    """The parts of the definition that changed (`instructions`, `tools`, ...)."""
    error: str | None = Field(None, max_length=2_000)
    """Why the run kept its definition: the agent is no longer served, or the new one
    does not fit the run (a budget without a bound on a reply, ...)."""


REDEFINITIONS_KEPT = 20
"""Newest entries kept in `RunState.redefinitions`."""


class ToolListing(_Model):
    """One listing of the run's MCP tools after it started, for the audit
    (`RunState.tool_listings`)."""

    at: AwareDatetime
    turn: int = Field(ge=0)
    """The run's turn when its tools were listed (before the model call of turn + 1)."""
    reason: Literal["session_message", "requested"]
    by: str | None = Field(None, max_length=200)
    """Who asked (`requested`)."""
    added: list[str] = []
    """Tools the run has since this listing and did not have before."""
    removed: list[str] = []
    """Tools the run had and no longer has (a call the model makes to one is refused)."""
    changed: list[str] = []
    """Tools whose description, parameters or approval rule changed."""
    error: str | None = Field(None, max_length=2_000)
    """Why the tools could not be listed (the run kept the ones it had); None: listed."""

    def changes(self) -> list[tuple[str, list[str]]]:
        """`("added", names)`, `("removed", ...)`, `("changed", ...)`, those not empty."""
        found = (("added", self.added), ("removed", self.removed), ("changed", self.changed))
        return [(what, names) for what, names in found if names]


LISTINGS_KEPT = 50
"""Newest entries kept in `RunState.tool_listings`."""


class Notices(_Model):
    """What the run has announced as events (`workflows.run_events`), so that each is
    announced once, across continue-as-new and worker restarts."""

    seq: int = Field(0, ge=0)
    """The number of the newest event (events are numbered from 1)."""
    pending: list[str] = []
    """Call ids whose `approval_requested` went out and that still wait."""
    paused: bool = False
    finished: bool = False


class WebhookDelivery(_Model):
    """How one event's delivery to one endpoint goes (`RunState.webhook_deliveries`),
    as its delivery workflow reports it."""

    endpoint: str = Field(min_length=1, max_length=100)
    webhook_id: str = Field(min_length=1, max_length=300)
    event: str = Field(min_length=1, max_length=50)
    status: Literal["sending", "failing", "delivered", "refused", "gave_up"]
    attempts: int = Field(0, ge=0)
    code: int | None = None
    """The receiver's last HTTP status; None: no answer (refused connection, timeout)."""
    error: str | None = Field(None, max_length=500)
    next_try_at: AwareDatetime | None = None
    at: AwareDatetime


DELIVERIES_KEPT = 50
"""Newest entries kept in `RunState.webhook_deliveries`."""


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


class ImportedDecision(_Model):
    """A decision an imported OpenAI Agents SDK run state had recorded: kept for the
    audit, never applied (an unsigned file cannot approve anything)."""

    call_id: str | None = Field(None, min_length=1, max_length=200)
    """The call it decided; None: a rule for every call of `tool` (the SDK's `always`)."""
    tool: str = Field(min_length=1, max_length=200)
    decision: Literal["approve", "reject"]
    message: str | None = Field(None, max_length=2_000)
    """The rejection message the SDK would have sent the model."""


class DroppedItem(_Model):
    """Something of an imported run state that only the SDK can run, dropped because
    the person importing it said so (`--lossy`)."""

    where: str = Field(min_length=1, max_length=200)
    """Its JSON path in the imported file."""
    what: str = Field(min_length=1, max_length=500)


IMPORT_ENTRIES_KEPT = 200
"""At most this many recorded decisions, and dropped items, per import."""


class ImportRecord(_Model):
    """Where an imported run came from (`agentctl import-openai`)."""

    format: Literal["openai-agents"] = "openai-agents"
    schema_version: str = Field(min_length=1, max_length=20)
    """The file's `$schemaVersion`."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """Of the file's bytes as read."""
    agent: str = Field(min_length=1, max_length=200)
    """The SDK's current agent when it stopped (the run goes on with `RunState.agent`)."""
    turn: int = Field(ge=0)
    """The SDK's `current_turn`: model calls since the run's input."""
    max_turns: int | None = Field(None, ge=1)
    """The SDK's `max_turns` (the run keeps its own agent's limit)."""
    decisions: list[ImportedDecision] = Field([], max_length=IMPORT_ENTRIES_KEPT)
    """The first `IMPORT_ENTRIES_KEPT` decisions the file records."""
    decisions_omitted: int = Field(0, ge=0, exclude_if=lambda n: not n)
    """Recorded decisions past those: counted, not kept."""
    dropped: list[DroppedItem] = Field([], max_length=IMPORT_ENTRIES_KEPT)
    """The first `IMPORT_ENTRIES_KEPT` items dropped (`--lossy`)."""
    dropped_omitted: int = Field(0, ge=0, exclude_if=lambda n: not n)
    """Dropped items past those: counted, not listed."""
    at: AwareDatetime


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


SUB_RUNS_KEPT = 8
"""The most sub-run snapshots one snapshot carries (a reply starts at most as many
children: `agent_calls.MAX_CHILDREN_PER_REPLY`)."""


class SubRunSnapshot(_Model):
    """An unfinished child run (an agent called as a tool) exported with its caller: the
    caller resumed from the snapshot resumes the child from `state` for the call
    `call_id`, instead of starting the agent afresh."""

    call_id: str = Field(min_length=1, max_length=200)
    state: RunState


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
    queued_messages: list[str] = []
    """User messages received mid-turn, delivered once the turn's tool calls are answered."""
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
