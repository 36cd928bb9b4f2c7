"""How a worker executes an agent's calls: timeouts, retry policies, heartbeat
timeouts and queue waits. Not part of the run.

They are declared in code (`@tool(timeout=..., retry_policy=...)`, `Agent(model_timeout=...)`,
`@input_guardrail(timeout=...)`, `MCPServer(timeout_seconds=...)`), given to a run by
`describe_agent` beside the agent's spec (`payloads.DescribedAgent`), and kept in the
workflow's memory (`Executions`), never in RunState, its snapshots or its continue-as-new input: a
new setting costs no schema version, and a changed one never breaks a running run
(Temporal compares an activity's type and id on replay, not its options). A continued
workflow run asks `describe_agent` again, so a deploy that changes a setting reaches a
long run at its next continue-as-new (docs/how-to/agents.md, "Timeouts and retries").

What a run does keep (`agent_spec`): whether a tool is local (a local activity writes
markers, not scheduled activities), its task queue (which workers get its arguments),
at-most-once (never started twice), the MCP server's word that a tool may be repeated,
approval policies and their deadlines, an evaluator's timeout (when a person decides).

Pure: plain data, no Temporal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from durable_agents.workflows.agent_spec import GuardrailSpec, ToolSpec


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RetrySpec(_Model):
    """A bounded retry policy in plain JSON (mapped onto Temporal's RetryPolicy)."""

    initial_interval_seconds: float = Field(1.0, gt=0, exclude_if=lambda v: v == 1.0)
    """Delay before the first retry."""
    backoff_coefficient: float = Field(2.0, ge=1, exclude_if=lambda v: v == 2.0)
    """Each further delay is the previous one times this."""
    maximum_interval_seconds: float = Field(30.0, gt=0, exclude_if=lambda v: v == 30.0)
    """Upper bound on the delay between attempts."""
    maximum_attempts: int = Field(3, ge=1, exclude_if=lambda v: v == 3)
    """Attempts in all, the first included; 1 means no retry."""
    non_retryable_error_types: list[str] = Field([], exclude_if=lambda v: not v)
    """Error types (a tool's exception class name, an ApplicationError type) never
    retried."""
    budget_seconds: float | None = Field(None, gt=0, exclude_if=lambda v: v is None)
    """Retries stop once this long has passed since the call was first scheduled
    (Temporal's schedule-to-close timeout), whichever of it and `maximum_attempts`
    comes first; None: attempts alone bound them."""


ONE_ATTEMPT = RetrySpec(maximum_attempts=1)
"""An MCP tool's retry when its server does not say it may be repeated."""


class CallSettings(_Model):
    """How one kind of activity call is made."""

    timeout_seconds: float = Field(gt=0)
    """Start-to-close timeout of one attempt."""
    retry: RetrySpec
    """Its retries (a tool's, a guardrail's, the model's)."""
    heartbeat_timeout_seconds: float | None = Field(None, gt=0, exclude_if=lambda v: v is None)
    """An attempt silent this long (its worker died) is retried at once, and a cancel
    reaches it; None: no heartbeat timeout."""


class ToolSettings(CallSettings):
    """How a tool's calls are made."""

    queue_timeout_seconds: float = Field(60.0, gt=0, exclude_if=lambda v: v == 60.0)
    """(A tool on a task queue of its own) how long a call waits for a worker of that
    queue to start it; then the model is told none serves it."""


class MCPServerSettings(_Model):
    """How calls to an MCP server are made (its tools and its tool list)."""

    timeout_seconds: float = Field(60.0, gt=0, exclude_if=lambda v: v == 60.0)
    """Start-to-close timeout of one attempt."""
    retry: RetrySpec | None = Field(None, exclude_if=lambda v: v is None)
    """None: a tool the server calls read-only or idempotent is tried 3 times, any other
    once (an attempt that timed out may still be running: trying again could do it
    twice)."""

    def for_tool(self, repeatable: bool) -> ToolSettings:
        """The settings of one of its tools (`ToolSpec.mcp_repeatable`)."""
        retry = self.retry or (RetrySpec() if repeatable else ONE_ATTEMPT)
        return ToolSettings(timeout_seconds=self.timeout_seconds, retry=retry)


class ExecutionSettings(_Model):
    """How a worker executes one agent's calls (its code's declarations)."""

    model: CallSettings
    """Its model calls."""
    tools: dict[str, ToolSettings] = Field({}, exclude_if=lambda v: not v)
    """Its tools (handoffs and agent tools included), by name; MCP tools come from
    their server's settings."""
    input_guardrails: dict[str, CallSettings] = Field({}, exclude_if=lambda v: not v)
    output_guardrails: dict[str, CallSettings] = Field({}, exclude_if=lambda v: not v)
    mcp_servers: dict[str, MCPServerSettings] = Field({}, exclude_if=lambda v: not v)
    """Its MCP servers, by name."""

    def tool(self, spec: ToolSpec) -> ToolSettings:
        """The settings of the tool `spec`; LookupError if the worker declared none."""
        if spec.mcp_server is not None:
            return self.mcp_server(spec.mcp_server).for_tool(spec.mcp_repeatable)
        found = self.tools.get(spec.name)
        if found is None:
            raise LookupError(f"the worker declares no settings for tool {spec.name!r}")
        return found

    def guardrail(self, spec: GuardrailSpec) -> CallSettings:
        """The settings of the guardrail `spec`; LookupError if the worker declared none."""
        kind = self.input_guardrails if spec.kind == "input" else self.output_guardrails
        found = kind.get(spec.name)
        if found is None:
            raise LookupError(
                f"the worker declares no settings for {spec.kind} guardrail {spec.name!r}"
            )
        return found

    def mcp_server(self, name: str) -> MCPServerSettings:
        """The settings of the MCP server `name`; LookupError if the worker declared none."""
        found = self.mcp_servers.get(name)
        if found is None:
            raise LookupError(f"the worker declares no settings for MCP server {name!r}")
        return found


class Executions:
    """The execution settings a workflow run knows, by agent name: those of the latest
    `describe_agent` of each agent in this workflow run (a new workflow run, continued
    as new, starts with none and describes again). Kept beside the workflow instance, in
    memory (`activity_calls.executions`)."""

    def __init__(self) -> None:
        self._known: dict[str, ExecutionSettings] = {}
        self.asking: dict[str, Any] = {}
        """Describes under way, by agent name (so calls running side by side ask once)."""
        self.gate_key: str | None = None
        """The gate key the latest settings-only `describe_agent` of this workflow run
        named: the one its new ids are made with (`workflows.secret_ids`)."""

    def record(self, agent: str, settings: ExecutionSettings) -> None:
        """`agent`'s settings, as a worker described them now."""
        self._known[agent] = settings

    def get(self, agent: str) -> ExecutionSettings | None:
        """`agent`'s settings, if described in this workflow run."""
        return self._known.get(agent)


EXECUTION_FIELDS = frozenset(
    {
        "model_timeout_seconds",
        "model_retry",
        "model_heartbeat_timeout_seconds",
        "timeout_seconds",
        "retry",
        "heartbeat_timeout_seconds",
        "queue_timeout_seconds",
    }
)
"""The execution settings an agent's spec, its tools', guardrails' and MCP servers'
held before they left the run."""


def execution_field_problem(loc: tuple[str | int, ...]) -> str | None:
    """What an unknown field at `loc` in a snapshot is, if it is an execution setting
    of the agent's spec (a snapshot written before they left the run, or one that tries
    to set them): refused, never applied. None: another field."""
    if not loc or loc[-1] not in EXECUTION_FIELDS or "agent" not in loc:
        return None
    return (
        "an execution setting, not part of a run: timeouts and retries come from the "
        "worker's code (describe_agent), never from a snapshot or an input; remove it"
    )
