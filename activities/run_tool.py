"""Activities that touch the worker's agents and tools: `describe_agent`, `run_tool`."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping, Sequence

import pydantic_core
from durable_agents.activities import revoked_keys, telemetry
from durable_agents.activities.context_change import changed_context
from durable_agents.activities.guardrail import GuardrailContext
from durable_agents.activities.guardrail_models import GuardrailModels
from durable_agents.activities.handoff import described_by_target, left_out_by
from durable_agents.activities.heartbeat import heartbeating
from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.tool import Tool, ToolContext
from durable_agents.workflows.agent_spec import ModelPrice, WebhookSubscription
from durable_agents.workflows.approval_policy import arguments_problem
from durable_agents.workflows.check_payloads import GuardrailRequest, GuardrailVerdict
from durable_agents.workflows.contract import (
    ACTIVITY_DESCRIBE_AGENT,
    ACTIVITY_RUN_GUARDRAIL,
    ACTIVITY_RUN_TOOL,
    ERROR_TOOL_RESULT,
    ERROR_TOOL_TIMEOUT,
    ERROR_UNKNOWN_AGENT,
    ERROR_UNKNOWN_GUARDRAIL,
)
from durable_agents.workflows.payloads import (
    DescribeAgentInput,
    DescribedAgent,
    ToolOutcome,
    ToolRequest,
    problems,
)
from pydantic import BaseModel, TypeAdapter, ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agents import stream_gate
from durable_agents.signing import Trust

RAISED = "raised"
"""`agent_tool_failures` reason: the tool raised (its retry policy applies)."""
UNSERIALISABLE = "unserialisable_result"
"""`agent_tool_failures` reason: the tool returned something that is not JSON."""


REASON_CHARS = 2_000
"""Characters of a guardrail's reason kept in the run."""


ERROR_NOT_PLACED_HERE = "ToolNotPlacedHere"
"""A tools-only worker was asked for a tool not placed on its queue (or not loaded)."""


class ToolActivities:
    """Activities bound to one worker's agent registry."""

    def __init__(
        self,
        registry: AgentRegistry,
        *,
        trust: Trust | None = None,
        prices: Mapping[str, ModelPrice] | None = None,
        webhooks: Sequence[WebhookSubscription] = (),
        placed_on: str | None = None,
        models: ModelActivities | None = None,
    ) -> None:
        """`placed_on`: a tools-only worker of that task queue, which runs only the tools
        placed there (`@tool(task_queue=...)`). `models`: the worker's model API, for the
        agents guardrails run (`GuardrailContext.run_agent`)."""
        self._guardrail_models = GuardrailModels(models, prices) if models is not None else None
        self._registry = registry
        self._placed_on = placed_on
        self._trust = trust or Trust()
        self._prices = dict(prices or {})
        self._webhooks = list(webhooks)

    @activity.defn(name=ACTIVITY_DESCRIBE_AGENT)
    async def describe_agent(self, request: DescribeAgentInput) -> DescribedAgent:
        """The spec of a registered agent, with the worker's approver keys and its
        model's price, to be frozen into a run when it starts or resumes; and beside it
        how this worker executes its calls (timeouts, retries: never part of the run)."""
        revoked_keys.check(self._trust, request.approval_keys)  # a call about to start
        agent = self._registry.get(request.agent)
        if agent is None:
            known = ", ".join(self._registry.names()) or "none"
            raise ApplicationError(
                f"unknown agent '{request.agent}'; this worker serves: {known}",
                type=ERROR_UNKNOWN_AGENT,
                non_retryable=True,
            )
        keys = stream_gate.KEYS.get()  # set while the gate admits a run's call
        current = keys.current if keys is not None else None
        if request.settings_only:
            return DescribedAgent(spec=None, settings=agent.execution_settings(), gate_key=current)
        spec = agent.spec(self._trust, self._prices.get(agent.model))
        spec.tools = [described_by_target(t, self._said_of(t.handoff)) for t in spec.tools]
        for tool in spec.tools:  # an agent evaluator's calls cost the run: its price
            ref = tool.approval.evaluator
            if ref is not None and ref.kind == "agent" and ref.model in self._prices:
                tool.approval = tool.approval.model_copy(
                    update={"evaluator": ref.model_copy(update={"price": self._prices[ref.model]})}
                )
        if self._webhooks:  # the worker's subscriptions, for every agent it serves
            spec.webhooks = [*spec.webhooks, *self._webhooks]
        spec.gate_key = current
        return DescribedAgent(spec=spec, settings=agent.execution_settings())

    def _said_of(self, agent: str | None) -> str | None:
        """The `handoff_description` of the served agent called `agent`, if any."""
        found = self._registry.get(agent) if agent is not None else None
        return found.handoff_description if found is not None else None

    @activity.defn(name=ACTIVITY_RUN_GUARDRAIL)
    async def run_guardrail(self, request: GuardrailRequest) -> GuardrailVerdict:
        """Run one guardrail of the agent on the value it checks. A guardrail that raises
        fails the attempt (its retry policy applies; the run counts a last failure as
        a tripwire)."""
        agent = self._registry.get(request.agent)
        found = agent.guardrail(request.kind, request.name) if agent is not None else None
        if found is None:
            raise ApplicationError(
                f"agent {request.agent!r} has no {request.kind} guardrail {request.name!r} "
                "on this worker",
                type=ERROR_UNKNOWN_GUARDRAIL,
                non_retryable=True,
            )
        models = self._guardrail_models.for_check() if self._guardrail_models else None
        context = GuardrailContext(
            run_id=request.run_id, agent=request.agent, context=request.context, models=models
        )
        value = request.value
        if request.kind == "output" and agent is not None and agent.output_type is not None:
            value = TypeAdapter(agent.output_type).validate_python(value)
        async with heartbeating():
            result = await found.check(value, context)
        reason = result.reason[:REASON_CHARS] if result.reason is not None else None
        used = models.used if models is not None else None
        return GuardrailVerdict(name=found.name, tripped=result.tripped, reason=reason, usage=used)

    @activity.defn(name=ACTIVITY_RUN_TOOL)
    async def run_tool(self, request: ToolRequest) -> ToolOutcome:
        """Validate the arguments and run the tool.

        Bad calls come back as an error outcome for the model. A tool that
        raises fails the attempt, so the tool's retry policy applies; the
        workflow turns the last failure into an error outcome.
        """
        agent = self._registry.get(request.agent)
        found = agent.tool(request.tool) if agent is not None else None
        if found is None and agent is not None:  # a handoff's hook (`on_handoff`)
            found = next(
                (
                    t
                    for t in agent.all_tools()
                    if t.name == request.tool and (t.on_handoff or t.filter_items)
                ),
                None,
            )
        if self._placed_on is not None and (found is None or found.task_queue != self._placed_on):
            # Another worker of the queue may serve it: retried, and the last failure is
            # what the model reads. Never run a tool this queue was not given.
            raise ApplicationError(
                f"this tools-only worker of task queue '{self._placed_on}' does not run agent "
                f"'{request.agent}''s tool '{request.tool}' (not in its modules, or not "
                "placed on this queue)",
                type=ERROR_NOT_PLACED_HERE,
            )
        revoked_keys.check(self._trust, request.approval_keys)
        telemetry.count_tool_call(found.name if found is not None else None)
        if found is None:
            telemetry.count_tool_failure(None, "unknown_tool")
            return _error(request, f"Error: tool '{request.tool}' is not available.")
        if found.external:  # answered by a person or a service: never scheduled to run
            return _error(request, f"Error: tool '{found.name}' is answered, never run.")
        try:
            arguments = found.arguments.model_validate(json.loads(request.arguments or "{}"))
        except json.JSONDecodeError as err:
            telemetry.count_tool_failure(found.name, "invalid_arguments")
            return _error(request, f"Error: arguments are not valid JSON ({err.msg}).")
        except ValidationError as err:
            telemetry.count_tool_failure(found.name, "invalid_arguments")
            return _error(request, f"Error: invalid arguments for '{found.name}': {problems(err)}")
        problem = _schema_problem(found, arguments)
        if problem is not None:
            telemetry.count_tool_failure(found.name, "invalid_arguments")
            return _error(request, f"Error: invalid arguments for '{found.name}': {problem}")
        ctx = ToolContext(
            idempotency_key=request.idempotency_key,
            run_id=request.run_id,
            call_id=request.call_id,
            agent=request.agent,
            context=copy.deepcopy(request.context),  # the tool's to change
            usage=request.usage,
        )
        raw = request.arguments or "{}"
        if found.handoff is not None and found.invoke_json is None:  # a filter, no hook
            content = f"the input filter of {found.name} ran"
        else:
            content = _as_text(found.name, await _invoke(found, arguments, ctx, raw))
        return ToolOutcome(
            call_id=request.call_id,
            content=content,
            context_update=changed_context(request.context, ctx.context_after()),
            left_out=await left_out_by(found, request.conversation),
        )


async def _invoke(found: Tool, arguments: BaseModel, ctx: ToolContext, raw: str) -> object:
    """Run the tool within its attempt's start-to-close timeout; count any failure once.

    The server times an attempt out on its own, but a tool that does not heartbeat never
    hears of it: it would run on (beside its retry) with a result nobody takes. So the
    attempt is cut here too, as a `ToolTimeout` (for a sync tool, only its wait stops).
    It carries no cause: asyncio's message-less timeout would be the innermost error, and
    the model is told the innermost error's message (then "Application error", issue 42;
    the server's own timeout of a later attempt carries this failure as its cause)."""
    deadline = asyncio.timeout(_attempt_limit())
    try:
        async with deadline, heartbeating(ctx.progress):
            return await found.invoke(arguments, ctx, raw)
    except BaseException as err:  # CancelledError too: cancels, shutdown
        if deadline.expired():
            telemetry.count_tool_failure(found.name, telemetry.TIMED_OUT)
            raise ApplicationError(
                f"tool '{found.name}' ran past its {_attempt_limit():g}s timeout",
                type=ERROR_TOOL_TIMEOUT,
            ) from None
        telemetry.count_tool_failure(found.name, telemetry.failure_reason(err, default=RAISED))
        raise


def _schema_problem(found: Tool, arguments: BaseModel) -> str | None:
    """Why arguments do not fit a schema given as is (`Tool.parameters_schema`), checked
    as the workflow checks an edited call's; None also for a tool with a pydantic model
    (which validated them)."""
    if found.parameters_schema is None:
        return None
    return arguments_problem(found.spec(), arguments.model_dump())


def _attempt_limit() -> float | None:
    """Seconds this attempt may run (its start-to-close timeout), if it has a limit."""
    limit = activity.info().start_to_close_timeout
    return limit.total_seconds() if limit else None


def _error(request: ToolRequest, message: str) -> ToolOutcome:
    return ToolOutcome(call_id=request.call_id, content=message, is_error=True)


def _as_text(tool: str, result: object) -> str:
    if isinstance(result, str):  # a lone surrogate (no UTF-8 for it) becomes "?"
        return result.encode("utf-8", "replace").decode("utf-8")
    try:
        return pydantic_core.to_json(result).decode()
    except pydantic_core.PydanticSerializationError as err:
        telemetry.count_tool_failure(tool, UNSERIALISABLE)
        raise ApplicationError(
            f"tool result of type {type(result).__name__} is not JSON-serialisable: {err}",
            type=ERROR_TOOL_RESULT,
            non_retryable=True,
        ) from None  # the message says it all: the model is told the innermost cause
