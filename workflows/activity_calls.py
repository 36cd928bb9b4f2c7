"""The workflow's activity calls: each with its timeout, retry policy and UI summary,
and its failures put in the run's terms. Timeouts and retries are the worker's, as
`describe_agent` gave them beside the spec (`workflows.execution_settings`), kept by
each workflow instance (`executions`), never in the run's state.

Workflow code (deterministic); it names activities by their contract names and
never imports their implementations.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout
from temporalio.workflow import ActivityCancellationType, ActivityConfig

with workflow.unsafe.imports_passed_through():
    from durable_agents.workflows import (
        argument_view,
        at_most_once,
        contract,
        decisions,
        details,
        guardrails,
        loop,
        mcp_tools,
        revoked_approvals,
    )
    from durable_agents.workflows.agent_spec import AgentSpec, GuardrailSpec, ToolSpec
    from durable_agents.workflows.check_payloads import GuardrailVerdict
    from durable_agents.workflows.execution_settings import (
        Executions,
        ExecutionSettings,
        MCPServerSettings,
        RetrySpec,
        ToolSettings,
    )
    from durable_agents.workflows.payloads import (
        DescribeAgentInput,
        DescribedAgent,
        ModelReply,
        ModelRequest,
        ToolOutcome,
    )
    from durable_agents.workflows.run_items import MAX_RUN_IMAGE_BYTES, ToolCall
    from durable_agents.workflows.state import ErrorInfo, RunState
    from pydantic import JsonValue

if TYPE_CHECKING:
    from mcp.types import RequestParamsMeta
    from temporalio.mcp import TemporalMCPClient

DESCRIBE_AGENT_TIMEOUT = timedelta(seconds=30)
DESCRIBE_AGENT_RETRY = RetryPolicy(maximum_attempts=5)


_EXECUTIONS: weakref.WeakKeyDictionary[Any, Executions] = weakref.WeakKeyDictionary()
"""The execution settings each workflow instance of this worker knows, beside it and gone
with it (an evicted run's replay fills its new instance's from the history's
`describe_agent` results): never in its state. Kept here, not as an attribute of
`AgentWorkflow`, so the workflow class only drives."""


def executions() -> Executions:
    """The execution settings the current workflow instance knows."""
    instance = workflow.instance()
    found = _EXECUTIONS.get(instance)
    if found is None:
        found = _EXECUTIONS[instance] = Executions()
    return found


async def describe_agent(agent: str) -> AgentSpec:
    """The agent's spec from a worker that serves it (its execution settings kept by
    the workflow); a failure fails the run."""
    try:
        described = await _describe(agent)
    except ActivityError as err:
        _reraise_cancel(err)
        raise ApplicationError(
            f"cannot start agent '{agent}': {root_message(err)}",
            type=contract.ERROR_RUN_FAILED,
            non_retryable=True,
        ) from err
    if described.spec is None:  # not asked for: a worker that answers so is broken
        raise ApplicationError(
            f"cannot start agent '{agent}': describe_agent answered no spec",
            type=contract.ERROR_RUN_FAILED,
            non_retryable=True,
        )
    return described.spec


async def _describe(
    agent: str, *, settings_only: bool = False, approval_keys: list[str] | None = None
) -> DescribedAgent:
    asked = DescribeAgentInput(
        agent=agent, settings_only=settings_only, approval_keys=approval_keys or []
    )
    described: DescribedAgent = await workflow.execute_activity(
        contract.ACTIVITY_DESCRIBE_AGENT,
        asked,
        result_type=DescribedAgent,
        start_to_close_timeout=DESCRIBE_AGENT_TIMEOUT,
        retry_policy=DESCRIBE_AGENT_RETRY,
        summary=f"describe agent {agent}",
    )
    executions().record(agent, described.settings)
    if described.gate_key is not None:
        executions().gate_key = described.gate_key
    return described


async def settings_of(agent: str) -> ExecutionSettings | str:
    """How the worker executes `agent`'s calls: as described in this workflow run, else
    described now (a run continued as new starts knowing none: its first call asks,
    once, whatever runs beside it). A str: why they cannot be had."""
    known = executions()
    found = known.get(agent)
    if found is not None:
        return found
    asking = known.asking.get(agent)
    if asking is None:
        asking = asyncio.ensure_future(_describe(agent, settings_only=True))
        known.asking[agent] = asking
        asking.add_done_callback(lambda _: known.asking.pop(agent, None))
    try:
        await asyncio.shield(asking)  # a call cut meanwhile does not cut it for the others
    except ActivityError as err:
        _reraise_cancel(err)
        return f"cannot describe agent '{agent}' (how its calls run): {root_message(err)}"
    return known.get(agent) or f"agent '{agent}' could not be described"


async def approvals_trusted(state: RunState, call: ToolCall) -> ToolOutcome | None:
    """Before a call no activity of its own checks (an agent called as a tool, a handoff)
    starts: None when the worker trusts every key that signed its approvals now
    (`describe_agent` checks them: `activities.revoked_keys`), else the call asked again
    (`workflows.revoked_approvals`). No activity when none was signed."""
    signers = decisions.signed_approval_keys(state, call.call_id)
    if not signers:
        return None
    try:
        await _describe(state.agent.name, settings_only=True, approval_keys=signers)
    except ActivityError as err:
        _reraise_cancel(err)
        if failure_type(err) == contract.ERROR_APPROVAL_KEY_REVOKED:
            return revoked_approvals.reopen(state, call, root_message(err), now=workflow.now())
        why = f"Error: the approval of '{call.tool}' could not be checked: {root_message(err)}"
        return ToolOutcome(call_id=call.call_id, content=why, is_error=True)
    return None


def tool_settings(agent: str, spec: ToolSpec) -> ToolSettings | None:
    """The settings `agent`'s tool `spec` ran with in this workflow run, if known."""
    found = executions().get(agent)
    try:
        return found.tool(spec) if found is not None else None
    except LookupError:
        return None


async def call_model(spec: AgentSpec, request: ModelRequest) -> ModelReply | ErrorInfo:
    """The model's reply, or why the model call failed for good (retries spent, or
    a request the provider refuses)."""
    settings = await settings_of(spec.name)
    if isinstance(settings, str):
        return ErrorInfo(type=contract.ERROR_RUN_FAILED, message=settings)
    model = settings.model
    try:
        reply: ModelReply = await workflow.execute_activity(
            contract.ACTIVITY_CALL_MODEL,
            request,
            result_type=ModelReply,
            start_to_close_timeout=timedelta(seconds=model.timeout_seconds),
            retry_policy=retry_policy(
                model.retry,
                non_retryable=[contract.ERROR_MODEL_REQUEST, contract.ERROR_MODEL_REPLY],
            ),
            summary=f"model {spec.model} · turn {request.turn}",
            **_liveness(model.heartbeat_timeout_seconds, model.retry),
        )
        return reply
    except ActivityError as err:
        _reraise_cancel(err)
        return error_info(err)


async def run_guardrail(state: RunState, spec: GuardrailSpec, value: JsonValue) -> GuardrailVerdict:
    """The guardrail's verdict on `value`; one that failed for good counts as tripped
    (a check that cannot run lets nothing through)."""
    found = await settings_of(state.agent.name)
    try:
        settings = found.guardrail(spec) if not isinstance(found, str) else found
    except LookupError as err:
        settings = str(err)
    if isinstance(settings, str):  # a check that cannot run lets nothing through
        return guardrails.failed(spec, settings)
    try:
        verdict: GuardrailVerdict = await workflow.execute_activity(
            contract.ACTIVITY_RUN_GUARDRAIL,
            guardrails.request(state, spec, value),
            result_type=GuardrailVerdict,
            start_to_close_timeout=timedelta(seconds=settings.timeout_seconds),
            retry_policy=retry_policy(settings.retry),
            summary=f"{spec.kind} guardrail {spec.name}",
        )
        return verdict
    except ActivityError as err:
        if isinstance(err.cause, CancelledError):  # the run is being cancelled
            raise asyncio.CancelledError() from err
        return guardrails.failed(spec, root_message(err))


async def with_mcp_tools(spec: AgentSpec) -> AgentSpec:
    """`spec` with the tools of its MCP servers, listed once (an activity per server,
    through `temporalio-mcp`; the worker holds the connections): a server that cannot
    be listed fails the run's start, with the reason."""
    listed = await listed_mcp_tools(spec)
    if isinstance(listed, str):
        unavailable = listed.startswith(_CANNOT_LIST)
        raise ApplicationError(
            listed if unavailable else f"cannot start agent '{spec.name}': {listed}",
            type=contract.ERROR_MCP_UNAVAILABLE if unavailable else contract.ERROR_INVALID_INPUT,
            non_retryable=True,
        )
    return listed


_CANNOT_LIST = "cannot list the tools of MCP server"


async def listed_mcp_tools(spec: AgentSpec) -> AgentSpec | str:
    """`spec` with the tools of its MCP servers listed now; a str: why they cannot be
    (a server that cannot be listed, a name that clashes)."""
    listed: dict[str, list[dict[str, Any]]] = {}
    settings = await settings_of(spec.name) if spec.mcp_servers else ""
    for server in spec.mcp_servers:
        try:
            found = settings.mcp_server(server.name) if not isinstance(settings, str) else settings
        except LookupError as err:
            found = str(err)
        if isinstance(found, str):
            return f"{_CANNOT_LIST} {server.name!r}: {found}"
        client = _mcp_client(server.name, _mcp_config(server.name, found, "list"))
        try:
            tools = await client.list_tools()
        except ActivityError as err:
            _reraise_cancel(err)
            return f"{_CANNOT_LIST} {server.name!r}: {root_message(err)}"
        listed[server.name] = [t.model_dump(mode="json", by_alias=True) for t in tools.tools]
    try:
        return mcp_tools.with_mcp_tools(spec, listed)
    except ValueError as err:
        return str(err)


def _mcp_client(server: str, config: ActivityConfig) -> TemporalMCPClient:
    """`temporalio-mcp`'s workflow client, imported at first use: the `mcp` package
    costs a worker ~29 MB of memory, which a worker whose agents use no MCP server
    should not pay (bench.concurrency). A worker serving an MCP agent has imported it
    at start (`mcp_connections.mcp_plugin`). A worker serving none that gets a workflow
    task of an MCP run (a fleet split by agents, a resumed snapshot) imports it in that
    task, once per process: about 0.6 s on a loaded 2-core machine, but it has passed
    the SDK's 2 s deadlock limit on one running the test suite; that task then fails
    once and is retried after the import has finished (the SDK waits for it)."""
    from temporalio.mcp import TemporalMCPClient

    return TemporalMCPClient(server, activity_config=config)


def _mcp_config(
    server: str, settings: MCPServerSettings, what: str, retry: RetrySpec | None = None
) -> ActivityConfig:
    """The activity options of one MCP call: its tool's retries (the server's for the
    tool list), the timeout, a retry budget as the schedule-to-close timeout. (The
    temporalio-mcp activity does not heartbeat: a cancelled run does not stop a call
    already running on its server.)"""
    retry = retry or settings.retry or RetrySpec()
    config = ActivityConfig(
        start_to_close_timeout=timedelta(seconds=settings.timeout_seconds),
        retry_policy=retry_policy(retry),
        summary=f"MCP {server}: {what}",
    )
    if retry.budget_seconds is not None:
        config["schedule_to_close_timeout"] = timedelta(seconds=retry.budget_seconds)
    return config


async def _run_mcp_tool(
    state: RunState, call: ToolCall, spec: ToolSpec, settings: ExecutionSettings, shown: str
) -> ToolOutcome:
    server = spec.mcp_server or ""
    retry = settings.tool(spec).retry
    client = _mcp_client(server, _mcp_config(server, settings.mcp_server(server), shown, retry))
    try:
        arguments = json.loads(call.arguments) if call.arguments else {}
    except (ValueError, RecursionError):  # parsed when proposed, on a shallower stack
        return ToolOutcome(
            call_id=call.call_id,
            content=f"Error: the arguments of '{call.tool}' are nested too deeply to send",
            is_error=True,
        )
    key = loop.tool_request(state, call).idempotency_key
    given: dict[str, Any] = {contract.MCP_IDEMPOTENCY_KEY: key}
    signers = decisions.signed_approval_keys(state, call.call_id)
    if signers:  # checked, then taken out, by the worker's gate (`revoked_keys`)
        given[contract.MCP_APPROVAL_KEYS] = signers
    meta = cast("RequestParamsMeta", given)
    try:
        result = await client.call_tool(spec.mcp_tool or call.tool, arguments, meta=meta)
    except ActivityError as err:
        _reraise_cancel(err)
        if failure_type(err) == contract.ERROR_APPROVAL_KEY_REVOKED:  # it never started
            return revoked_approvals.reopen(state, call, root_message(err), now=workflow.now())
        return ToolOutcome(
            call_id=call.call_id,
            content=f"Error: tool '{call.tool}' failed: {root_message(err)}",
            is_error=True,
        )
    dumped = result.model_dump(mode="json", by_alias=True)
    images = any(isinstance(b, dict) and b.get("type") == "image" for b in dumped["content"])
    keep = images
    room = MAX_RUN_IMAGE_BYTES - mcp_tools.image_bytes(state) if keep else 0
    return mcp_tools.outcome(call.call_id, call.tool, dumped, keep_images=keep, room=room)


async def run_tool(
    state: RunState, call: ToolCall, *, execute: Callable[..., Awaitable[Any]] | None = None
) -> ToolOutcome:
    """The tool's output; a tool that failed for good gives the model its error.
    `execute`: how to run the activity (default `workflow.execute_activity`, or
    `workflow.execute_local_activity` for a tool declared local)."""
    spec = state.agent.require_tool(call.tool)  # malformed calls are answered, never run
    shown = argument_view.redacted(call.arguments, spec.sensitive)  # the UI's summary
    found = await settings_of(state.agent.name)
    try:
        settings = found.tool(spec) if not isinstance(found, str) else found
    except LookupError as err:
        settings = str(err)
    if isinstance(settings, str):
        return ToolOutcome(
            call_id=call.call_id,
            content=f"Error: tool '{call.tool}' failed: {settings}",
            is_error=True,
        )
    if spec.mcp_server is not None and not isinstance(found, str):
        summary = details.tool_call_summary(call.tool, shown)
        return await _run_mcp_tool(state, call, spec, found, summary)
    once = spec.at_most_once  # `@tool(at_most_once=True)`: never local, one attempt
    if execute is None and spec.local and not once:
        execute = workflow.execute_local_activity  # `@tool(local=True)`
    retry = settings.retry.model_copy(update={"maximum_attempts": 1}) if once else settings.retry
    if once and not at_most_once.mark_started(state, call.call_id, now=workflow.now()):
        return at_most_once.interrupted(call, "it was started before and is never started again")
    placed: dict[str, Any] = {}
    if spec.task_queue is not None:
        placed = {  # `@tool(task_queue=...)`: its own workers
            "task_queue": spec.task_queue,
            "schedule_to_start_timeout": timedelta(seconds=settings.queue_timeout_seconds),
        }
    try:
        outcome: ToolOutcome = await (execute or workflow.execute_activity)(
            contract.ACTIVITY_RUN_TOOL,
            loop.tool_request(state, call),
            result_type=ToolOutcome,
            start_to_close_timeout=timedelta(seconds=settings.timeout_seconds),
            retry_policy=retry_policy(retry),
            summary=f"tool {details.tool_call_summary(call.tool, shown)}",
            **placed,
            **_liveness(
                settings.heartbeat_timeout_seconds if execute is None else None,  # local: none
                retry,
                wait_for_cancel=True,
            ),
        )
        # The outcome answers this call, and brings what a tool's result can: a
        # tools-only worker (`@tool(task_queue=...)`) may be anyone's.
        update: dict[str, Any] = {
            "call_id": call.call_id,
            "handoff_to": None,
            "attachments": [],
            "interrupted": False,
        }
        return outcome.model_copy(update=update)
    except ActivityError as err:
        _reraise_cancel(err)  # stopped (a cancelled run, an interrupt): no outcome of its own
        if failure_type(err) == contract.ERROR_APPROVAL_KEY_REVOKED:  # it never started
            return revoked_approvals.reopen(state, call, root_message(err), now=workflow.now())
        lost = _outcome_lost(err) if once else None
        if lost is not None:
            return at_most_once.interrupted(call, lost)
        if placed and _not_started(err):
            why = (
                f"no worker of task queue '{spec.task_queue}' started it within "
                f"{settings.queue_timeout_seconds:g} s (the tool's workers are down or busy)"
            )
        else:
            why = root_message(err)
        return ToolOutcome(
            call_id=call.call_id, content=f"Error: tool '{call.tool}' failed: {why}", is_error=True
        )


_LOST_TYPES = {
    contract.ERROR_TOOL_TIMEOUT: "it ran past its timeout",
    "ActivityPause": "an operator paused its activity",  # the SDK's types for these
    "ActivityReset": "an operator reset its activity",
    "ActivityRefused": "what its worker reported is not trusted (the activity gate)",
}
_LOST_TIMEOUTS = {
    TimeoutType.HEARTBEAT: "its worker stopped answering: no heartbeat within its timeout",
    TimeoutType.START_TO_CLOSE: "it ran past its timeout, or its worker died",
    TimeoutType.SCHEDULE_TO_CLOSE: "its time budget ran out",
}


def _outcome_lost(err: ActivityError) -> str | None:
    """Why the one attempt of an at-most-once call ended without an outcome (its worker
    died, it timed out, it was cancelled or paused mid-call); None: it did not start (no
    worker took it) or it ended with an answer of its own (the tool raised)."""
    cause = err.cause
    if isinstance(cause, ActivityTimeout):
        # SCHEDULE_TO_START: it never started
        return _LOST_TIMEOUTS.get(cause.type) if cause.type is not None else root_message(err)
    if isinstance(cause, CancelledError):
        return "it was cancelled while it ran"
    if isinstance(cause, ApplicationError):
        return _LOST_TYPES.get(cause.type or "")
    return root_message(err)


def _not_started(err: ActivityError) -> bool:
    """The activity timed out waiting for a worker to start it (schedule-to-start)."""
    cause = err.cause
    return isinstance(cause, ActivityTimeout) and cause.type is TimeoutType.SCHEDULE_TO_START


def _liveness(
    heartbeat_seconds: float | None, retry: RetrySpec, *, wait_for_cancel: bool = False
) -> dict[str, Any]:
    """Heartbeat timeout, retry time budget and cancellation of an activity call,
    as the spec says (a spec without them schedules its calls without them).

    `wait_for_cancel`: a cancelled run waits until the activity has stopped (it
    hears of the cancel at its next heartbeat), so that `cancelled` is true when
    reported and no side effect of the call happens after it."""
    wanted = heartbeat_seconds is not None or retry.budget_seconds is not None
    if not wanted:
        return {}
    options: dict[str, Any] = {}
    if heartbeat_seconds is not None:
        options["heartbeat_timeout"] = timedelta(seconds=heartbeat_seconds)
        if wait_for_cancel:
            options["cancellation_type"] = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
    if retry.budget_seconds is not None:
        options["schedule_to_close_timeout"] = timedelta(seconds=retry.budget_seconds)
    return options


def _reraise_cancel(err: ActivityError) -> None:
    """The run was cancelled while the activity ran: the SDK reports that as the
    activity's failure; raise it as the cancellation it is, so the run ends
    `cancelled` rather than `failed`."""
    if isinstance(err.cause, CancelledError):
        raise asyncio.CancelledError() from err


def retry_policy(spec: RetrySpec, *, non_retryable: list[str] | None = None) -> RetryPolicy:
    """Temporal's RetryPolicy for a spec's plain-data policy, plus `non_retryable` types."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=spec.initial_interval_seconds),
        backoff_coefficient=spec.backoff_coefficient,
        maximum_interval=timedelta(seconds=spec.maximum_interval_seconds),
        maximum_attempts=spec.maximum_attempts,
        non_retryable_error_types=[*spec.non_retryable_error_types, *(non_retryable or [])],
    )


NO_MESSAGE = "Application error"
"""What the SDK names an error sent with no message (its failure converter)."""


def root_message(err: BaseException) -> str:
    """The message of the innermost cause that has one (the activity's own error; a
    message-less error it was raised from, e.g. asyncio's TimeoutError, says nothing)."""
    said = NO_MESSAGE
    while err is not None:
        message = getattr(err, "message", None) or str(err)
        if message and message != NO_MESSAGE:
            said = message
        err = err.__cause__  # type: ignore[assignment]
    return said


def failure_type(err: BaseException) -> str | None:
    """The type of the innermost application error in `err`'s causes, if any."""
    found = None
    while err is not None:
        if isinstance(err, ApplicationError):
            found = err.type
        err = err.__cause__  # type: ignore[assignment]
    return found


def error_info(err: ActivityError) -> ErrorInfo:
    """Why an activity failed, for RunState.error (the provider's details kept)."""
    cause = err.cause
    if isinstance(cause, ApplicationError):
        details = cause.details[0] if cause.details and isinstance(cause.details[0], dict) else {}
        return ErrorInfo(
            type=cause.type or "ApplicationError", message=cause.message, details=details
        )
    return ErrorInfo(type=type(cause).__name__, message=root_message(err))
