"""`Agent`: a name, instructions, a model and tools, grouped."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from durable_agents.activities.guardrail import Guardrail
from durable_agents.activities.handoff import handoff
from durable_agents.activities.instructions import function_name
from durable_agents.activities.output_type import output_type as as_output
from durable_agents.activities.spec_fields import derive
from durable_agents.activities.tool import (
    DEFAULT_HEARTBEAT_TIMEOUT,
    Tool,
    approval_policy,
    retry_spec,
)
from durable_agents.workflows import background
from durable_agents.workflows.agent_spec import (
    BACKGROUND_CHECK_BOUNDS,
    BACKGROUND_CHECK_EVERY,
    AgentSpec,
    ApprovalPolicy,
    ContextPolicy,
    MCPServer,
    ModelAPIName,
    ModelPrice,
    ModelSettings,
    WebhookSubscription,
)
from durable_agents.workflows.budget import BUDGET_FIELDS
from durable_agents.workflows.execution_settings import CallSettings, ExecutionSettings, RetrySpec
from durable_agents.workflows.run_items import BUDGET_TOOL
from durable_agents.workflows.settings import api_problem, tool_choice_problem
from pydantic import BaseModel, ConfigDict, Field
from temporalio.common import RetryPolicy

from durable_agents.signing import Trust

DEFAULT_MODEL_RETRY = RetryPolicy(maximum_attempts=1000, maximum_interval=timedelta(seconds=60))
"""Transient model failures are retried every minute at most; the budget below, not
the attempts, ends the retries (6 h at one a minute is 360 attempts)."""
DEFAULT_MODEL_RETRY_BUDGET = timedelta(hours=6)
"""How long a model call is retried through a provider outage before the run fails."""


@dataclass(frozen=True)
class Agent:
    """An agent definition; the worker serves every Agent in the modules it is given."""

    name: str
    instructions: str | Callable[..., Any]
    """The system prompt: text, or a function `(context: InstructionsContext) -> str`
    (sync or async) asked on the worker before each model call, with the run's context
    (`activities.instructions`); the text it gives is recorded with the reply."""
    model: str = "gpt-4o-mini"
    tools: Sequence[Tool] = ()
    max_turns: int = 10
    """Model calls a run may make before it ends as `max_turns_exceeded`."""
    model_timeout: timedelta = timedelta(seconds=120)
    """Start-to-close timeout of one model call attempt."""
    model_retry_policy: RetryPolicy = field(default_factory=lambda: DEFAULT_MODEL_RETRY)
    """Retries of transient model failures (429, 5xx, timeouts, garbled replies); must
    be bounded. Requests the provider refuses (400, 401, 404) are never retried."""
    model_retry_budget: timedelta | None = DEFAULT_MODEL_RETRY_BUDGET
    """Retries of one model call stop this long after it was first scheduled (an
    outage longer than this fails the run); None: attempts alone bound them."""
    model_heartbeat_timeout: timedelta | None = DEFAULT_HEARTBEAT_TIMEOUT
    """A model call whose worker is silent this long is retried on another worker."""
    tool_output_limit: int = 64_000
    """Characters of one tool result shown to the model (the rest is cut, marked)."""
    session_idle_timeout: timedelta | None = None
    """A session waiting this long for a message ends; None: it waits forever."""
    turns_per_workflow_run: int = 300
    """Model calls before the run continues as new (earlier if Temporal suggests it).
    Each switch costs one billed action (the next run's start); 300 keeps a run of any
    length a hand-written loop can finish (its history limit) in one workflow run."""
    history_bytes_per_workflow_run: int | None = None
    """History bytes before the run continues as new; None: when Temporal suggests it."""
    output_type: Any = None
    """The type of the final output (a pydantic model, `int`, `list[str]`, a `Literal`,
    a union of models); the model is asked for it with a strict JSON Schema and a
    reply that does not validate goes back to it. None: free text."""
    output_retries: int = 2
    """Invalid final replies sent back to the model before the run ends `output_invalid`."""
    model_settings: ModelSettings = field(default_factory=ModelSettings)
    """Temperature, tool choice, reasoning effort, ... for every model call (a start
    input may override the sampling ones for its run)."""
    token_budget: int | None = None
    """Tokens a run may spend (input and output); the run ends `budget_exceeded` before
    a model call that could pass it. Needs `model_settings.max_output_tokens`."""
    cost_budget: float | None = None
    """Money a run may spend, in the currency of the worker's price for `model`
    (`AGENT_PRICES`, which must have one); as `token_budget` otherwise."""
    on_budget: Literal["stop", "ask"] = "stop"
    """At a budget: end the run `budget_exceeded` ("stop"), or ("ask") wait for a person
    to extend it: a pending `extend_budget` request, approved (with the proposed
    budget or an edited one) or rejected like a tool call."""
    context: ContextPolicy | None = None
    """How a long conversation is cut to the model's window: older tool outputs stubbed,
    or older turns summarized by the model, once the estimate passes
    `max_input_tokens` (and once more if the provider still finds it too long). The
    run keeps everything. None: every item is sent every time."""
    budget_approval: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    """Who may extend a budget (`approvers`, `require_signature`, `separate_duties`),
    how long a request waits (`timeout`, `on_timeout`) and the most it may be set to
    (`limits` on `token_budget` / `cost_budget`)."""
    input_guardrails: Sequence[Guardrail] = ()
    """`@input_guardrail`s: checks on each user message before the model sees it."""
    output_guardrails: Sequence[Guardrail] = ()
    """`@output_guardrail`s: checks on the final output before the run ends or waits."""
    model_api: ModelAPIName | None = None
    """`"responses"`: the OpenAI Responses API (reasoning items kept in the run, sent
    back with `store=False`); `"chat_completions"`: Chat Completions, which every
    OpenAI-compatible server speaks. None: the worker's default (`--model-api`)."""
    mcp_servers: Sequence[MCPServer] = ()
    """MCP servers whose tools the agent uses (`MCPServer(name=..., allow=..., prefix=...,
    needs_approval=...)`); the worker knows how to reach each (`AGENT_MCP_SERVERS`)."""
    webhooks: Sequence[WebhookSubscription] = ()
    """Where the agent's run events go (`WebhookSubscription(endpoint=NAME, events=[...])`,
    endpoints the worker knows from `AGENT_WEBHOOKS`), beside the worker's own."""
    stream: bool = False
    """Call the model with streaming and publish its text and tool arguments as they
    come (`text_delta` events: `agentctl watch --follow`, `AgentClient.events`). The
    reply the run records is the same either way."""
    send_tool_images: bool = False
    """Send the model the images tools return (an MCP tool's image blocks), for a model
    that reads images; False: it reads a line saying what each is. The run keeps them
    either way (`ToolResult.attachments`)."""
    handoffs: Sequence[Any] = ()
    """Agents the run may be handed over to: an `Agent`, an agent's name (one the same
    worker serves), or `handoff(agent, ...)` for its tool name, description, input and
    approval. The model sees one `transfer_to_<name>` tool per handoff; calling it
    switches the run to that agent from the next model call (`workflows.handoffs`)."""
    handoff_description: str | None = None
    """What this agent is for, in the description of the handoff tools to it."""
    definition_updates: Literal["never", "next_message", "continue_as_new"] = "never"
    """When a changed definition of this agent (a new build of its workers) reaches the
    runs already in flight: "never" (a run keeps the one it started with), at the next
    session message ("next_message"), or at each continue-as-new ("continue_as_new");
    only where no call or budget request is open. README: "Changed agents, runs in
    flight"."""

    while_busy: Literal["queue", "interrupt", "reject"] = "queue"
    """What a session message that does not say (`send_message`'s `while_busy`) does
    while the run works on a turn: wait until the turn's tool calls are answered
    ("queue"), stop the model call and tools under way and answer it ("interrupt"), or
    be refused ("reject"). docs/how-to/steering.md."""
    allow_interrupt: bool = True
    """Whether a sender may stop a turn: False refuses every `send_message` that asks
    `while_busy="interrupt"` and the `interrupt` update, so calls waiting for a (signed,
    separated) decision are never withdrawn by someone who may only signal the run.
    docs/how-to/steering.md."""
    background_check_every: timedelta = BACKGROUND_CHECK_EVERY
    """How often a run checks on the agents it runs in the background that an earlier
    workflow run of it started (a continue-as-new carried them): a timer and a
    `caller_check` signal to each while any runs; one that cannot be reached ended
    without telling (terminated, timed out). 1 second to 1 day; default 5 minutes.
    The workflow run that started a child hears of its end at once and checks nothing.
    docs/how-to/steering.md."""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("an agent needs a name")
        low, high = BACKGROUND_CHECK_BOUNDS
        every = self.background_check_every
        if not isinstance(every, timedelta) or not low <= every <= high:
            raise ValueError(
                f"agent {self.name}: background_check_every must be a timedelta from "
                f"{low} to {high}, not {every!r}"
            )
        if self.max_turns < 1:
            raise ValueError(f"agent {self.name}: max_turns must be at least 1")
        if not isinstance(self.instructions, str) and not callable(self.instructions):
            raise TypeError(
                f"agent {self.name}: instructions are a text or a function (context) -> str, "
                f"not {type(self.instructions).__name__}"
            )
        names = [t.name for t in self.all_tools()]
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"agent {self.name}: two tools are called '{name}'")
        retry_spec(self.model_retry_policy)
        for name in ("model_retry_budget", "model_heartbeat_timeout"):
            value = getattr(self, name)
            if value is not None and value <= timedelta(0):
                raise ValueError(f"agent {self.name}: {name} must be positive, not {value}")
        for t in self.tools:
            if not isinstance(t, Tool):
                raise TypeError(f"agent {self.name}: {t!r} is not a @tool")
        servers = [m.name for m in self.mcp_servers]
        for server in servers:
            if servers.count(server) > 1:
                raise ValueError(f"agent {self.name}: two MCP servers are called '{server}'")
        if not 0 <= self.output_retries <= 10:
            raise ValueError(f"agent {self.name}: output_retries must be 0 to 10")
        if self.output_type is not None:
            as_output(self.output_type)  # TypeError now, not at the first run
        for kind, found in (("input", self.input_guardrails), ("output", self.output_guardrails)):
            names = [g.name for g in found if isinstance(g, Guardrail) and g.kind == kind]
            if len(names) != len(found):
                raise TypeError(f"agent {self.name}: {kind}_guardrails takes @{kind}_guardrail")
            if len(set(names)) != len(names):
                raise ValueError(f"agent {self.name}: two {kind} guardrails share a name")
        if self.token_budget is not None:
            if self.token_budget < 1:
                raise ValueError(f"agent {self.name}: token_budget must be at least 1")
            if self.model_settings.max_output_tokens is None:
                raise ValueError(
                    f"agent {self.name}: a token_budget needs model_settings.max_output_tokens "
                    "(one reply must have a bound)"
                )
        if self.model_api not in (None, "chat_completions", "responses"):
            raise ValueError(
                f"agent {self.name}: model_api must be 'chat_completions' or 'responses', "
                f"not {self.model_api!r}"
            )
        if self.context is not None and not isinstance(self.context, ContextPolicy):
            raise TypeError(f"agent {self.name}: context takes a ContextPolicy")
        if self.definition_updates not in ("never", "next_message", "continue_as_new"):
            raise ValueError(
                f"agent {self.name}: definition_updates must be 'never', 'next_message' or "
                f"'continue_as_new', not {self.definition_updates!r}"
            )
        if self.while_busy not in ("queue", "interrupt", "reject"):
            raise ValueError(
                f"agent {self.name}: while_busy must be 'queue', 'interrupt' or 'reject', "
                f"not {self.while_busy!r}"
            )
        if not isinstance(self.allow_interrupt, bool):
            raise TypeError(f"agent {self.name}: allow_interrupt: True or False")
        if self.while_busy == "interrupt" and not self.allow_interrupt:
            raise ValueError(
                f"agent {self.name}: while_busy='interrupt' needs allow_interrupt=True"
            )
        if self.on_budget not in ("stop", "ask"):
            raise ValueError(f"agent {self.name}: on_budget must be 'stop' or 'ask'")
        if self.on_budget == "ask" and self.token_budget is None and self.cost_budget is None:
            raise ValueError(f"agent {self.name}: on_budget='ask' needs a token or cost budget")
        if self.budget_approval.when:
            raise ValueError(
                f"agent {self.name}: budget_approval takes no `when`: every extension is asked"
            )
        for server in self.mcp_servers:
            if server.approval.evaluator is not None:
                raise ValueError(
                    f"agent {self.name}: MCP server {server.name}: its tools take no "
                    "evaluator (a person decides their calls): give it a code rule "
                    "(needs_approval=FUNCTION) or wrap the call in a @tool with one"
                )
        if self.budget_approval.rule is not None or self.budget_approval.evaluator is not None:
            raise ValueError(
                f"agent {self.name}: budget_approval takes no code rule or evaluator: a person "
                "decides every extension"
            )
        fields = {c.field for c in self.budget_approval.limits} - set(BUDGET_FIELDS)
        if fields:
            raise ValueError(
                f"agent {self.name}: budget_approval.limits name {', '.join(sorted(fields))}; "
                f"an extension has {' or '.join(BUDGET_FIELDS)}"
            )
        policy = self.budget_approval
        if self.on_budget == "ask" and policy.approvers is None and not policy.require_signature:
            raise ValueError(
                f"agent {self.name}: on_budget='ask' needs budget_approval to say who may "
                "extend a budget (approvers, or require_signature)"
            )
        if any(t.name == BUDGET_TOOL for t in self.tools):
            raise ValueError(f"agent {self.name}: the tool name {BUDGET_TOOL!r} is reserved")
        if self.cost_budget is not None:
            if not (isinstance(self.cost_budget, int | float) and 0 < self.cost_budget < 1e15):
                raise ValueError(f"agent {self.name}: cost_budget must be a positive amount")
            if self.model_settings.max_output_tokens is None:
                raise ValueError(
                    f"agent {self.name}: a cost_budget needs model_settings.max_output_tokens "
                    "(one reply must have a bound)"
                )
        problem = tool_choice_problem(
            self.model_settings, [t.name for t in self.all_tools()]
        ) or api_problem(self.model_settings, self.model_api)
        if problem is not None:
            raise ValueError(f"agent {self.name}: {problem}")

    def clone(self, **changes: Any) -> Agent:
        """A copy of this agent with `changes` (any of its fields: `name`, `instructions`,
        `tools`, `handoffs`, ...), checked as a new agent is. `Agent` is frozen, so an
        agent is changed before it is served by cloning it (the OpenAI Agents SDK's
        `agent.clone(...)`): `triage = triage.clone(handoffs=[*triage.handoffs, billing])`.
        A clone that keeps the name is the same agent to a worker: serve one of the two."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(
                f"agent {self.name}: clone() got {', '.join(unknown)}, which an Agent does "
                f"not have (its fields: {', '.join(sorted(known))})"
            )
        return dataclasses.replace(self, **changes)

    def spec(self, trust: Trust | None = None, price: ModelPrice | None = None) -> AgentSpec:
        """The plain-data description frozen into a run at its start, with the keys of
        the worker's configuration (`durable_agents.signing.Trust`) and the price of
        its model from the worker's price table."""
        trust = trust or Trust()
        dynamic = not isinstance(self.instructions, str)
        return derive(
            AgentSpec,
            self,
            instructions="" if dynamic else self.instructions,
            instructions_function=function_name(self.instructions) if dynamic else None,
            price=price,
            context_policy=self.context,
            approver_keys=list(trust.approver_keys),
            snapshot_keys=list(trust.snapshot_keys),
            refuse_unverified_snapshots=trust.refuse_unverified_snapshots,
            gate_key=None,  # the describing worker's (`describe_agent`)
            tools=[t.spec() for t in self.all_tools()],
            mcp_servers=[server.spec() for server in self.mcp_servers],
            webhooks=list(self.webhooks),
            input_guardrails=[g.spec() for g in self.input_guardrails],
            output_guardrails=[g.spec() for g in self.output_guardrails],
            output=as_output(self.output_type).spec if self.output_type is not None else None,
        )

    def execution_settings(self) -> ExecutionSettings:
        """How the worker executes the agent's calls: its model calls, tools, guardrails
        and MCP servers, as declared in code (never part of a run; `describe_agent` gives
        them beside `spec()`: `workflows.execution_settings`)."""
        budget = self.model_retry_budget
        model = CallSettings(
            timeout_seconds=self.model_timeout.total_seconds(),
            retry=RetrySpec(
                **retry_spec(self.model_retry_policy).model_dump(exclude={"budget_seconds"}),
                budget_seconds=budget.total_seconds() if budget else None,
            ),
            heartbeat_timeout_seconds=(
                self.model_heartbeat_timeout.total_seconds()
                if self.model_heartbeat_timeout
                else None
            ),
        )
        return ExecutionSettings(
            model=model,
            tools={t.name: t.execution_settings() for t in self.all_tools()},
            input_guardrails={g.name: g.execution_settings() for g in self.input_guardrails},
            output_guardrails={g.name: g.execution_settings() for g in self.output_guardrails},
            mcp_servers={m.name: m.settings() for m in self.mcp_servers},
        )

    def all_tools(self) -> list[Tool]:
        """Its tools, then one per handoff (`handoff`), then, when it calls agents in the
        background, the tools that operate them (`workflows.background`)."""
        found = [*self.tools, *map(_as_handoff, self.handoffs)]
        if any(t.background for t in self.tools):
            found += _BACKGROUND_CONTROLS
        return found

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        needs_approval: bool | ApprovalPolicy | Callable[..., Any] = False,
        on_failure: Literal["tool_error", "fail_run"] = "tool_error",
        wait: bool = True,
    ) -> Tool:
        """This agent as another agent's tool: a call runs it as a run of its own (a
        child workflow, its id the caller's run id and the call id), with the model's
        `input` as its task and the caller's tool context; its final output (JSON for
        an `output_type`) is the call's result. A run that does not complete is a tool
        error the model sees, or with `on_failure="fail_run"` fails the caller too.
        Approvals it waits for show on the caller too (README: Approvals across the
        tree).

        `wait=False`: the call starts the run in the background and is answered at once
        with its id; the caller's model gets tools to check on it, message it and stop
        it, and its end reaches the caller as a message (docs: how-to/handoffs.md,
        "Agents in the background"). `on_failure="fail_run"` needs `wait=True`."""
        if on_failure not in ("tool_error", "fail_run"):
            raise ValueError(f"as_tool on_failure: 'tool_error' or 'fail_run', not {on_failure!r}")
        if not isinstance(wait, bool):
            raise TypeError(f"as_tool wait: True or False, not {wait!r}")
        if not wait and on_failure == "fail_run":
            raise ValueError(
                "as_tool: on_failure='fail_run' needs wait=True (a run in the background "
                "ends after its call was answered: its end comes as a message)"
            )
        return Tool(
            name=name or re.sub(r"[^A-Za-z0-9_-]", "_", self.name)[:64],
            description=description
            or self.handoff_description
            or f"Ask the {self.name} agent; it answers with its final output.",
            fn=_runs_as_child,
            arguments=AgentTask,
            approval=approval_policy(needs_approval),
            runs_agent=self.name,
            on_failure=None if on_failure == "tool_error" else on_failure,
            background=not wait,
            target=self,
        )

    def tool(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        return next((t for t in self.tools if t.name == name), None)

    def guardrail(self, kind: str, name: str) -> Guardrail | None:
        """The guardrail of `kind` called `name`, or None."""
        found = self.input_guardrails if kind == "input" else self.output_guardrails
        return next((g for g in found if g.name == name), None)


class AgentTask(BaseModel):
    """What the model gives an agent it calls as a tool."""

    model_config = ConfigDict(extra="forbid")
    input: str = Field(description="The task, in full: the agent sees nothing else.")


def _runs_as_child(**_: Any) -> None:
    raise RuntimeError("an agent called as a tool runs as a child workflow, never here")


def _answered_by_the_run(**_: Any) -> None:
    raise RuntimeError("the run answers the tools that operate agents in the background")


class _BackgroundRunId(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str = Field(description="The background run's id, as its start said.")


class _BackgroundMessage(_BackgroundRunId):
    message: str = Field(description="What to tell it.")


_BACKGROUND_CONTROLS = [
    Tool(
        name=name,
        description=text,
        fn=_answered_by_the_run,
        arguments=_BackgroundMessage if kind == "message" else _BackgroundRunId,
        controls_background=kind,
    )
    for kind, (name, text) in background.CONTROL_TOOLS.items()
]
"""The tools a caller's model operates its agents in the background with."""


def _as_handoff(target: Any) -> Tool:
    """A `handoffs` entry as its tool."""
    if isinstance(target, Tool):
        if target.handoff is None:
            raise TypeError(f"{target.name!r} is a @tool: handoffs take agents or handoff(...)")
        return target
    if isinstance(target, str | Agent):
        return handoff(target)
    raise TypeError(f"handoffs take an Agent, an agent's name or handoff(...), not {target!r}")
