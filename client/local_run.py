"""Drive a run in-process from a snapshot, with no Temporal: for local debugging and tests.

The same pure loop (`workflows.loop`) and the same activity code (`call_model`,
`run_tool`) as a worker, but nothing is durable: no retries (one attempt per
model and tool call; a failing model call fails the run), no approval
timeouts, no continue-as-new. Decisions come from a callback, recorded as made
through the `decide` update.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from durable_agents.activities.model_api import ModelActivities
from durable_agents.activities.registry import AgentRegistry
from durable_agents.activities.run_tool import ToolActivities
from durable_agents.workflows import (
    contract,
    decisions,
    definitions,
    driver,
    guardrails,
    loop,
    reducer,
    resume_trust,
)
from durable_agents.workflows.agent_spec import AgentSpec, GuardrailSpec
from durable_agents.workflows.check_payloads import GuardrailVerdict
from durable_agents.workflows.execution_settings import ExecutionSettings
from durable_agents.workflows.interrupt_models import Interruption
from durable_agents.workflows.payloads import (
    DecideInput,
    DescribeAgentInput,
    ModelReply,
    ModelRequest,
    PendingApproval,
    ToolOutcome,
)
from durable_agents.workflows.run_items import ToolCall
from durable_agents.workflows.state import ErrorInfo, RunState
from pydantic import JsonValue
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

ModelCall = Callable[[ModelRequest], Awaitable[ModelReply]]
"""What answers a model request, e.g. `ModelActivities(openai_client).call_model`."""

Approve = Callable[[PendingApproval], DecideInput | Awaitable[DecideInput | None] | None]
"""Decides one pending call (sync or async); None leaves it pending and stops the run."""

DEFAULT_MAX_STEPS = 100


async def run_locally(
    state: RunState,
    *,
    model: ModelCall,
    registry: AgentRegistry,
    approve: Approve | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    run_id: str | None = None,
) -> RunState:
    """Run `state` forward in this process until it ends or must wait; returns the new state.

    The run continues as a resume of `state` under `run_id` (default: the
    snapshot's id + `-local`, so tool idempotency keys differ from the real
    run's); a failed or cancelled snapshot goes on as running. It stops when the
    run ends, waits for a message (session), waits for a decision that
    `approve` does not give (or there is no `approve`), or after `max_steps`
    steps (status still running). `state` itself is not changed.

    As a worker resumes a snapshot it cannot verify: the agent's definition, tools
    and approval rules are `registry`'s (the MCP tools the snapshot listed are kept,
    each asking for approval), and none of the snapshot's decisions, held decisions
    or `always` rules for its open calls count (`approve` is asked again).
    ValueError if `registry` does not serve the snapshot's agent or the snapshot
    does not fit it.
    """
    models = getattr(model, "__self__", None)  # `ModelActivities(...).call_model`
    tools = ToolActivities(registry, models=models if isinstance(models, ModelActivities) else None)
    try:
        answer = await tools.describe_agent(DescribeAgentInput(agent=state.agent.name))
    except ApplicationError as err:
        raise ValueError(f"cannot run the snapshot locally: {err.message}") from None
    described, settings = answer.spec, answer.settings
    if described is None:
        raise ValueError(f"cannot run the snapshot locally: no spec of {state.agent.name}")
    # The MCP tools the snapshot listed, of servers the agent still declares: kept (no
    # server is reached from here to list them again), each asking for approval.
    servers = {s.name for s in described.mcp_servers}
    listed = [
        t.model_copy(update={"needs_approval": True})
        for t in state.agent.tools
        if t.mcp_server in servers and described.tool(t.name) is None
    ]
    spec = described.model_copy(update={"tools": [*described.tools, *listed]})
    resumed = loop.resume(
        state,
        run_id=run_id or f"{state.run_id}-local",
        workflow_run="local",
        now=_now(),
    )
    try:
        resumed = resume_trust.reground(resumed, spec, now=_now())
    except ValueError as err:
        raise ValueError(f"cannot run the snapshot locally on agent {spec.name}: {err}") from None
    definitions.start(resumed, workflow_run="local")
    io = _LocalIO(model, tools, approve, settings)
    await driver.drive(resumed, io, max_steps=max_steps)
    return resumed


class _LocalIO:
    """The loop's steps performed in this process (`workflows.driver.LoopIO`)."""

    def __init__(
        self,
        model: ModelCall,
        tools: ToolActivities,
        approve: Approve | None,
        settings: ExecutionSettings,
    ) -> None:
        self._settings = settings
        """How the registry's code runs the agent's calls (a tool's timeout)."""
        self._model, self._tools, self._approve = model, tools, approve

    def stamp(self) -> datetime:
        return _now()

    def step_chosen(self, state: RunState, step: loop.Step) -> None:
        pass  # nothing to publish

    def finished(self, state: RunState) -> None:
        pass

    async def before_step(self, state: RunState, step: loop.Step) -> None:
        pass  # no continue-as-new in-process

    def interrupted(self, state: RunState, interruption: Interruption) -> None:
        pass  # a local run takes no messages: nothing interrupts it

    async def call_model(self, state: RunState, step: loop.CallModel) -> ModelReply | None:
        try:
            return await self._model(step.request)
        except Exception as err:  # one attempt: what a worker would retry fails here
            reducer.fold(state, reducer.ModelFailed(_error_info(err)), now=_now())
            return None

    def replied(self, state: RunState) -> None:
        pass  # nothing to announce

    async def run_tools(self, state: RunState, calls: tuple[ToolCall, ...]) -> list[ToolOutcome]:
        return list(
            await asyncio.gather(*(_run_tool(self._tools, self._settings, state, c) for c in calls))
        )

    async def await_decisions(self, state: RunState, step: loop.AwaitDecisions) -> bool:
        return await _decide(state, self._approve)

    async def await_input(self, state: RunState) -> bool:
        return False  # a session waits for the user's next message: stop here

    async def await_children(self, state: RunState) -> bool:
        return False  # a local run starts no child runs: it never waits for one

    async def await_resume(self, state: RunState) -> bool:
        return False  # paused: stop here (unpause the state to go on)

    async def list_tools(self, state: RunState, step: loop.ListTools) -> AgentSpec | str:
        return "a local run reaches no MCP server; the tools listed before are kept"

    async def redefine(self, state: RunState, step: loop.Redefine) -> reducer.Redefined:
        try:
            answer = await self._tools.describe_agent(DescribeAgentInput(agent=state.agent.name))
            found: AgentSpec | str = answer.spec or f"no spec of {state.agent.name}"
            self._settings = answer.settings
        except ApplicationError as err:
            found = err.message
        return reducer.Redefined(found, step.reason, "local")

    async def check_guardrails(
        self, state: RunState, step: loop.CheckGuardrails
    ) -> list[GuardrailVerdict]:
        specs = state.agent.guardrails(step.kind)
        return [
            await _run_guardrail(self._tools, self._settings, state, s, step.value) for s in specs
        ]


async def _decide(state: RunState, approve: Approve | None) -> bool:
    """Ask `approve` about every pending call; False if it left one undecided."""
    if approve is None:
        return False
    for pending in decisions.pending_approvals(state):
        request = approve(pending)
        if inspect.isawaitable(request):
            request = await request
        if request is None:
            return False
        reducer.fold(state, reducer.Decided(request, via="update"), now=_now())
    return True


async def _run_tool(
    tools: ToolActivities, settings: ExecutionSettings, state: RunState, call: ToolCall
) -> ToolOutcome:
    """One attempt of the `run_tool` activity, in an activity context like a worker's
    (a tool may heartbeat or read `activity.info()`)."""
    spec = state.agent.require_tool(call.tool)  # malformed calls are answered, never run
    try:
        timeout = settings.tool(spec).timeout_seconds
    except LookupError as err:
        return ToolOutcome(call_id=call.call_id, content=f"Error: {err}", is_error=True)
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(
        environment.info,
        activity_id=call.call_id,
        activity_type=contract.ACTIVITY_RUN_TOOL,
        task_queue="local",
        workflow_id=state.run_id,
        workflow_run_id="local",
        workflow_type=contract.WORKFLOW_TYPE,
        start_to_close_timeout=timedelta(seconds=timeout),
        schedule_to_close_timeout=None,
    )
    request = loop.tool_request(state, call)
    try:
        return await asyncio.wait_for(environment.run(tools.run_tool, request), timeout=timeout)
    except Exception as err:  # as the workflow does once the tool's retries are spent
        return ToolOutcome(
            call_id=call.call_id,
            content=f"Error: tool '{call.tool}' failed: {_message(err)}",
            is_error=True,
        )


async def _run_guardrail(
    tools: ToolActivities,
    settings: ExecutionSettings,
    state: RunState,
    spec: GuardrailSpec,
    value: JsonValue,
) -> GuardrailVerdict:
    """One attempt of the `run_guardrail` activity; a failure counts as tripped."""
    request = guardrails.request(state, spec, value)
    try:
        timeout = settings.guardrail(spec).timeout_seconds
        return await asyncio.wait_for(
            ActivityEnvironment().run(tools.run_guardrail, request), timeout=timeout
        )
    except Exception as err:  # as the workflow does once the guardrail's retries are spent
        return guardrails.failed(spec, _message(err))


def _error_info(err: BaseException) -> ErrorInfo:
    if isinstance(err, ApplicationError):
        details = err.details[0] if err.details and isinstance(err.details[0], dict) else {}
        return ErrorInfo(type=err.type or "ApplicationError", message=err.message, details=details)
    return ErrorInfo(type=type(err).__name__, message=_message(err))


def _message(err: BaseException) -> str:
    if isinstance(err, TimeoutError):
        return "timed out"
    return getattr(err, "message", None) or str(err) or type(err).__name__


def _now() -> datetime:
    return datetime.now(UTC)
