"""The agent as it was defined when a run started, frozen into the run's state
(`RunState.agent`): its tools and their approval policies, guardrails, model settings
and prices, output type, context policy, MCP servers, webhooks and the keys it
trusts. Later code changes do not leak into a run (`workflows.definitions` says when
a changed definition may).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, get_args

from durable_agents.workflows import live_approvals
from durable_agents.workflows.condition_ops import pattern_problem
from durable_agents.workflows.execution_settings import (
    MCPServerSettings,
    RetrySpec,
)
from durable_agents.workflows.interrupt_models import WhileBusy
from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    PrivateAttr,
    model_validator,
)

if TYPE_CHECKING:
    from durable_agents.workflows.run_items import Usage


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ApprovalCondition(_Model):
    """`arguments[field] <op> value`, evaluated on the model's arguments."""

    field: str = Field(min_length=1)
    op: Literal[
        "==", "!=", ">", ">=", "<", "<=", "in", "not_in", "contains", "not_contains", "matches"
    ]
    """Strings compare NFKC-normalised and case-folded, as well as as written
    (`workflows.condition_ops`); `contains`: a substring or a list element; `matches`:
    a glob (`*`, `?`, `[...]`) over the whole string."""
    value: JsonValue

    @model_validator(mode="after")
    def _usable(self) -> ApprovalCondition:
        problem = pattern_problem(self.op, self.value)
        if problem is not None:
            raise ValueError(problem)
        return self


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


class EvaluatorRef(_Model):
    """The evaluator a policy names (`ApprovalPolicy.evaluator`): a function of the
    worker's, or an agent whose model decides. Plain data: the worker finds the
    function or agent through the tool that names it."""

    kind: Literal["function", "agent"]
    name: str = Field(min_length=1, max_length=200)
    """The function's qualified name, or the agent's name."""
    model: str | None = Field(None, exclude_if=lambda m: m is None)
    """(`agent`) the model it asks."""
    instructions: str | None = Field(None, exclude_if=lambda i: i is None)
    """(`agent`) its instructions."""
    model_api: Literal["chat_completions", "responses"] | None = Field(
        None, exclude_if=lambda a: a is None
    )
    price: ModelPrice | None = Field(None, exclude_if=lambda p: p is None)
    """(`agent`) its model's price, from the worker's price table at start: what its
    calls cost the run."""


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
    rule: str | None = Field(None, max_length=300, exclude_if=lambda r: r is None)
    """The name of a code rule (`@tool(needs_approval=FUNCTION)`): a function of the
    worker's, `(arguments, context) -> bool`, says whether a call needs a decision,
    instead of `when`; its verdict is recorded on the call (`ToolCall.rule_verdict`).
    Given a function here, the name is taken from it."""
    evaluator: EvaluatorRef | None = Field(None, exclude_if=lambda e: e is None)
    """Who decides a waiting call before a person does: a function of the worker's or
    an agent (given as such here), which approves, rejects or escalates. It approves
    only within `auto_approve_within`; a failure, a timeout or anything else
    escalates to a person, who may also decide first. Never consulted where the
    policy requires a signature or separates duties."""
    auto_approve_within: list[ApprovalCondition] | None = Field(
        None, min_length=1, exclude_if=lambda w: w is None
    )
    """The only calls the evaluator may approve: those whose arguments meet all of
    these (strictly: a missing field or a value that cannot be compared does not).
    None: it may reject or escalate, never approve."""
    evaluator_timeout: timedelta = Field(
        timedelta(seconds=60), gt=timedelta(0), exclude_if=lambda t: t == timedelta(seconds=60)
    )
    """How long the evaluator may take; then the call waits for a person."""

    _rule_function: Any = PrivateAttr(None)
    _evaluator_object: Any = PrivateAttr(None)

    def __init__(self, **data: Any) -> None:
        """A function or agent given in Python is kept beside its plain-data name
        (`workflows.live_approvals`); JSON only ever names them (and is validated
        without this: no validator of the model's own may take strict JSON apart)."""
        data, rule, evaluator = live_approvals.split(data)
        super().__init__(**data)
        self._rule_function = rule
        self._evaluator_object = evaluator

    @model_validator(mode="after")
    def _coherent(self) -> ApprovalPolicy:
        if self.rule is not None and self.when:
            raise ValueError("a policy with a code rule takes no `when`: the rule decides")
        if self.auto_approve_within is not None and self.evaluator is None:
            raise ValueError("auto_approve_within limits an evaluator: name one")
        return self

    @property
    def rule_function(self) -> Any:
        """The code rule itself, where this policy was made from it (a worker's)."""
        return self._rule_function

    @property
    def evaluator_object(self) -> Any:
        """The evaluator function or agent, where this policy was made from it."""
        return self._evaluator_object


BACKGROUND_CHECK_EVERY = timedelta(minutes=5)
"""`AgentSpec.background_check_every`'s default."""
BACKGROUND_CHECK_BOUNDS = (timedelta(seconds=1), timedelta(days=1))
"""The shortest and longest `background_check_every` taken."""


EventType = Literal[
    "approval_requested",
    "approval_decided",
    "approval_expired",
    "run_finished",
    "paused",
    "resumed",
    "interrupted",
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
    background: bool = Field(False, exclude_if=lambda b: not b)
    """(An agent called as a tool) the call starts the child run and returns at once
    with its id (`Agent.as_tool(wait=False)`); its end reaches the run as a message."""
    child_takes_no_interrupts: bool = Field(False, exclude_if=lambda n: not n)
    """(An agent called as a tool and waited for) its agent takes no interrupts
    (`Agent(allow_interrupt=False)`): the caller's interrupt answers the call as
    interrupted without cancelling the child, which is left to finish (the caller's own
    end still stops it)."""
    controls_background: Literal["check", "message", "stop"] | None = Field(
        None, exclude_if=lambda c: c is None
    )
    """One of the tools a run with agents in the background gets to check on, message
    and stop them (`workflows.background`): the workflow answers it, no activity runs."""
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
    on_handoff: str | None = Field(
        None, min_length=1, max_length=500, exclude_if=lambda h: h is None
    )
    input_filter_function: str | None = Field(
        None, min_length=1, max_length=500, exclude_if=lambda f: f is None
    )
    """(A handoff) the function that chooses, on the worker, what the new agent's model is
    sent of the conversation before the handoff (`handoff(agent, input_filter=FUNCTION)`),
    run with the hook; None: `input_filter`."""
    """(A handoff) the function run on the worker before the handoff is taken (its name;
    `handoff(agent, on_handoff=FUNCTION)`), in a `run_tool` activity; one that fails
    leaves the run with its agent, and its model is told why. None: no hook."""
    task_queue: str | None = Field(
        None, min_length=1, max_length=200, exclude_if=lambda q: q is None
    )
    """The task queue the tool's calls go to (`@tool(task_queue=...)`); None: the run's."""
    local: bool = Field(False, exclude_if=lambda local: not local)
    """The tool runs as a local activity, in the worker that runs the run's workflow task
    (`@tool(local=True)`): no activity task through the server, no heartbeat; its
    attempts are retried with the workflow task."""
    at_most_once: bool = Field(False, exclude_if=lambda once: not once)
    """A started call is never started again (`@tool(at_most_once=True)`): one attempt,
    whatever its retry policy says; the call is marked started (`ToolCall.started_at`) as its
    activity is scheduled, and one whose outcome is lost is answered as interrupted.
    Never run as a local activity, whatever `local` says."""
    external: bool = Field(False, exclude_if=lambda external: not external)
    """An external tool (`@tool(external=True)`): no code runs a call; each call waits,
    as for approval, for a person or a service to answer it (`answer` signal, `decide`
    with `"decision": "answer"`), and the answer is its result. Left out when False."""
    answer_schema: dict[str, JsonValue] | None = Field(None, exclude_if=lambda s: s is None)
    """(`external`) the JSON Schema every answer must meet (of the function's return
    annotation). Left out when None."""
    mcp_repeatable: bool = Field(False, exclude_if=lambda r: not r)
    """(An MCP tool) its server calls it read-only or idempotent, so a failed attempt may
    be tried again (`MCPServerSettings.retry`'s default); False: tried once, since an
    attempt that timed out may still be running. The server's word when it was listed."""


class MCPServerSpec(_Model):
    """An MCP server whose tools an agent uses, as frozen into a run (`MCPServer` without
    its execution settings)."""

    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_-]+$")
    allow: list[str] | None = Field(None, max_length=200)
    """Names or globs (`fnmatch`) of the server's tools the agent may use; None: all."""
    prefix: str = Field("", max_length=50, pattern=r"^[A-Za-z0-9_-]*$")
    """Put before each tool's name (the model sees `prefix + name`)."""
    needs_approval: bool | list[str] | None = None
    """True: every tool needs approval; False: none; names or globs: those do (the
    others as their annotations say); None: as the server's annotations say (read-only:
    no approval; destructive or unannotated: approval). The agent's word wins. Given a
    function `(arguments, context) -> bool` (a code rule, `context.tool` says which
    tool), every tool of the server is asked it: it is True, with the function as the
    `approval` policy's `rule`."""
    approval: ApprovalPolicy = ApprovalPolicy()
    """The policy of the calls that need approval."""

    def __init__(self, **data: Any) -> None:
        """`needs_approval` given as a function (a worker's, in Python): a code rule over
        every tool of the server (JSON only ever names it, in `approval.rule`)."""
        rule = data.get("needs_approval")
        if callable(rule):
            given = data.get("approval")
            policy = given if isinstance(given, ApprovalPolicy) else ApprovalPolicy(**given or {})
            if policy.rule is not None:
                raise ValueError("needs_approval is a code rule: the approval policy names another")
            fields = {f: getattr(policy, f) for f in policy.model_fields_set}
            data = {**data, "needs_approval": True, "approval": ApprovalPolicy(**fields, rule=rule)}
        super().__init__(**data)


class MCPServer(MCPServerSpec):
    """An MCP server whose tools an agent uses (`Agent(mcp_servers=[...])`); the worker
    knows how to reach it (`AGENT_MCP_SERVERS`). Its timeout and retries are the
    worker's (`execution_settings`); a run holds `spec()`."""

    timeout_seconds: float = Field(60.0, gt=0)
    """Start-to-close timeout of one attempt of a call to it (tools and the tool list)."""
    retry: RetrySpec | None = None
    """How often a failing call is tried before its error goes to the model. None: a
    tool the server calls read-only or idempotent is tried 3 times, any other once (an
    attempt that timed out may still be running: trying again could do it twice)."""

    def spec(self) -> MCPServerSpec:
        """The server as a run freezes it."""
        return MCPServerSpec(**{name: getattr(self, name) for name in MCPServerSpec.model_fields})

    def settings(self) -> MCPServerSettings:
        """How the worker calls it."""
        return MCPServerSettings(timeout_seconds=self.timeout_seconds, retry=self.retry)


class GuardrailSpec(_Model):
    """A guardrail as frozen into a run: enough to run it as an activity."""

    name: str = Field(min_length=1, max_length=200)
    kind: Literal["input", "output"]
    on_trip: Literal["end", "refuse"] = Field("end", exclude_if=lambda v: v == "end")
    """What its tripwire does: `end` the run (`guardrail_tripped`), or `refuse`: answer
    with `refusal` instead of the model and go on (a session waits for the next
    message, a single run completes with the refusal as its output)."""
    refusal: str | None = Field(
        None, min_length=1, max_length=2_000, exclude_if=lambda v: v is None
    )
    """The answer of a `refuse` guardrail that tripped (None: `DEFAULT_REFUSAL`)."""


DEFAULT_REFUSAL = "Sorry, I can't help with that."
"""What a `refuse` guardrail that tripped answers unless it says otherwise."""


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
    """The instructions; empty when a function gives them (`instructions_function`)."""
    instructions_function: str | None = Field(
        None, min_length=1, max_length=500, exclude_if=lambda f: f is None
    )
    """The function that gives the instructions, asked by `call_model` before each model
    call (`Agent(instructions=FUNCTION)`), by its qualified name; None: `instructions`."""
    model: str = Field(min_length=1)
    tools: list[ToolSpec] = []
    max_turns: int = Field(10, ge=1)
    """Default limit of model calls answering one user message."""
    tool_output_limit: int = Field(64_000, ge=1)
    """Characters of one tool result the model is shown; the rest is cut, with a
    marker saying so (the run state keeps the whole output)."""
    session_idle_timeout: timedelta | None = Field(None, gt=timedelta(0))
    """A session waiting this long for the next message ends; None: it waits forever."""
    turns_per_workflow_run: int = Field(300, ge=1)
    """Model calls after which the run continues as new (earlier if Temporal suggests it;
    each switch is one billed action, the next run's start)."""
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
    gate_key: str | None = Field(None, max_length=32, exclude_if=lambda k: k is None)
    """The id of the workers' gate key the run's child and delivery workflow ids are made
    with (`workflows.secret_ids`): the one tagging when `describe_agent` answered. None:
    described by no keyed worker; its ids are the plain ones."""
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
    mcp_servers: list[MCPServerSpec] = []
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
    while_busy: WhileBusy = Field("queue", exclude_if=lambda w: w == "queue")
    """What a `send_message` that does not say does while a run works on a turn
    (`queue`, `interrupt`, `reject`: `workflows.interrupts`)."""
    allow_interrupt: bool = Field(True, exclude_if=lambda allowed: allowed)
    """False: a sender may not stop a turn (a message asking `while_busy="interrupt"`
    and the `interrupt` update are refused), so no call waiting for a decision is
    withdrawn by whoever may signal the run."""
    background_check_every: timedelta = Field(
        BACKGROUND_CHECK_EVERY,
        ge=BACKGROUND_CHECK_BOUNDS[0],
        le=BACKGROUND_CHECK_BOUNDS[1],
        exclude_if=lambda every: every == BACKGROUND_CHECK_EVERY,
    )
    """How often a run checks that the agents it runs in the background which an earlier
    workflow run of it started (continue-as-new carried them) still run: a timer, and a
    `caller_check` signal to each, while any runs (`workflows.background`)."""
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
