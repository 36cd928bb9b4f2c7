"""What a run's conversation holds, item by item (`RunState.items`): the user's
messages, the model's replies and their tool calls, tool results and the images they
carry, decisions, guardrail checks, budget requests, compactions and handoffs; and
the token usage of model calls.
"""

from __future__ import annotations

import base64
import binascii
from typing import Annotated, Literal

from durable_agents.workflows.agent_spec import ApprovalCondition
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


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


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


class RuleVerdict(_Model):
    """What a tool's code rule said of one call (`ApprovalPolicy.rule`), worked out on a
    worker by `call_model` with the reply and recorded with the call: replay, resume
    and the audit see this verdict; the rule is never asked again."""

    rule: str = Field(min_length=1, max_length=300)
    """The rule's name (`module.qualname`)."""
    needs_approval: bool
    """The call waits for a decision (also when the rule could not say: `error`)."""
    error: str | None = Field(None, max_length=2_000, exclude_if=lambda e: e is None)
    """Why the rule gave no verdict (it raised, timed out, returned no bool, or this
    worker lacks it): the call then waits for a person."""


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
    started_at: AwareDatetime | None = Field(None, exclude_if=lambda at: at is None)
    """When the run started this call of an at-most-once tool (`ToolSpec.at_most_once`):
    its one attempt was scheduled. A run resumed or forked from a snapshot holding it
    without a result answers it as interrupted and never starts it again. None: not
    started, or not an at-most-once tool."""
    short_id: str | None = Field(None, pattern=r"^[a-z0-9]{1,8}$", exclude_if=lambda s: s is None)
    """A short id people may type or put in a chat button instead of `call_id`
    (`workflows.short_ids`), given when the call was proposed and kept for its life
    (continue-as-new, snapshots). None: derived from the run and call ids when shown
    (calls recorded before short ids). Left out when None."""
    rule_verdict: RuleVerdict | None = Field(None, exclude_if=lambda v: v is None)
    """The verdict of the tool's code rule, when it has one (`ApprovalPolicy.rule`)."""


class UserMessage(_Model):
    """A message from the user."""

    type: Literal["user_message"] = "user_message"
    content: str
    """Its text (of a message given as parts: the text parts, a line each)."""
    parts: list[Annotated[TextPart | ImagePart, Field(discriminator="type")]] = Field(
        [], exclude_if=lambda parts: not parts
    )
    """A message given as parts (text and images, in order) is sent to the model so;
    empty: the message is `content`."""
    feedback: bool = False
    """Written by the run, not the user: why the previous reply was not the agent's
    output type (it does not start a new exchange)."""


class TextPart(_Model):
    """Text of a user message given as parts."""

    type: Literal["input_text"] = "input_text"
    text: str


class ImagePart(_Model):
    """An image of a user message: an `https` URL the model's provider fetches, or the
    image itself (kept as the run's state; history holds a payload-store reference to
    a large one)."""

    type: Literal["input_image"] = "input_image"
    url: str | None = Field(None, exclude_if=lambda v: v is None)
    image: Attachment | None = Field(None, exclude_if=lambda v: v is None)
    detail: Literal["auto", "low", "high"] | None = Field(None, exclude_if=lambda v: v is None)
    """How closely the model looks (None: the provider's default)."""

    @model_validator(mode="after")
    def _one_source(self) -> ImagePart:
        if (self.url is None) == (self.image is None):
            raise ValueError("an image part has a url or an image, not both")
        return self


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
    refused_by: str | None = Field(None, exclude_if=lambda v: v is None)
    """Not the model's: the refusal of this guardrail, which tripped (`on_trip="refuse"`);
    output guardrails do not check it."""


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
    interrupted: StrictBool = Field(False, exclude_if=lambda interrupted: not interrupted)
    """The call got no result of its own; `content` says what is known. Either the turn
    was interrupted (a new message sent with `while_busy="interrupt"`, the `interrupt`
    update), or the call started and its outcome was lost (an at-most-once tool whose
    attempt's worker died or timed out, or whose run was resumed from a snapshot while it
    ran): it may or may not have taken effect, and it was not run again."""
    attachments: list[Attachment] = Field(
        [], max_length=MAX_ATTACHMENTS, exclude_if=lambda found: not found
    )
    """Images the tool returned (`content` says what each is); written only when there
    are some."""
    context_changed: StrictBool = Field(False, exclude_if=lambda changed: not changed)
    """The call changed the run's context (`RunState.context` holds the result)."""
    context_refused: str | None = Field(None, max_length=2_000, exclude_if=lambda r: r is None)
    """Why the call's change to the run's context was not taken (too large, not JSON);
    the context stayed as it was, the result is recorded all the same."""


class Decision(_Model):
    """An approve/reject decision on one tool call, or the answer to a call of an external
    tool (strict: no coercion of any field)."""

    type: Literal["decision"] = "decision"
    call_id: StrictStr = Field(min_length=1)
    decision: Literal["approve", "reject", "answer"]
    """`answer`: a person's (or a service's) answer to a call of an external tool
    (`@tool(external=True)`), its `result` the call's result."""
    approver: StrictStr = Field(min_length=1)
    reason: StrictStr | None = None
    always: StrictBool = False
    """Apply the same decision to later calls of this tool in the run: only to calls
    with the same arguments (`arguments_sha256`), or that meet `always_when` (and
    before `expires_at`); one without `arguments_sha256` covers every call of the tool."""
    via: Literal["signal", "update", "rule", "timeout", "evaluator"]
    """How it was made: a signal, the `decide` update, an earlier `always`
    decision of `approver`, the approval deadline passing, or the policy's evaluator
    (`approver` is `evaluator:NAME`, `reason` its reason; `RunState.evaluations`)."""
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
    """Id of the approver key whose signature was verified; None: unsigned. A decision
    made by an `always` rule (`via: "rule"`) carries the rule's: the tool's worker checks
    it against the keys it trusts now before the call runs."""
    always_when: list[ApprovalCondition] | None = None
    """With `always`: the rule covers later calls whose arguments meet all of these;
    None: only calls with the same arguments (`arguments_sha256`)."""
    execution_id: StrictStr | None = None
    """The run execution the decision named (`RunState.execution_id`)."""
    metadata: dict[str, JsonValue] | None = None
    """The sender's own data that came with the decision (a ticket id)."""
    short_id: StrictStr | None = Field(None, exclude_if=lambda s: s is None)
    """The call's short id (`workflows.short_ids`), which a sender may have named it by."""
    result: JsonValue = Field(None, exclude_if=lambda r: r is None)
    """(`answer`) the answer, as JSON, checked against the tool's answer schema; the
    model gets it as the call's result. Left out when None (a JSON null answer reads
    back the same)."""
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
    usage: Usage | None = Field(None, exclude_if=lambda v: v is None)
    """What the guardrail's own model calls used (an agent it ran), counted in the
    run's usage and budgets."""


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
    left_out: list[int] | None = Field(None, exclude_if=lambda out: out is None)
    """(An input filter in code) the positions in the run's items of the messages,
    replies and tool results its new agent's model is not sent (`workflows.context`);
    what the filter did not see (the handoff's own results) is sent. None: no filter."""
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
