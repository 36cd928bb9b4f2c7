"""Activities that touch the worker's agents and tools: `describe_agent`, `run_tool`."""

from __future__ import annotations

import json

import pydantic_core
from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import telemetry
from activities.registry import AgentRegistry
from activities.tool import ToolContext
from workflows.contract import ACTIVITY_DESCRIBE_AGENT, ACTIVITY_RUN_TOOL, ERROR_UNKNOWN_AGENT
from workflows.payloads import DescribeAgentInput, ToolOutcome, ToolRequest
from workflows.state import AgentSpec


class ToolActivities:
    """Activities bound to one worker's agent registry."""

    def __init__(self, registry: AgentRegistry) -> None:
        self._registry = registry

    @activity.defn(name=ACTIVITY_DESCRIBE_AGENT)
    async def describe_agent(self, request: DescribeAgentInput) -> AgentSpec:
        """The spec of a registered agent, to be frozen into a new run."""
        agent = self._registry.get(request.agent)
        if agent is None:
            known = ", ".join(self._registry.names()) or "none"
            raise ApplicationError(
                f"unknown agent '{request.agent}'; this worker serves: {known}",
                type=ERROR_UNKNOWN_AGENT,
                non_retryable=True,
            )
        return agent.spec()

    @activity.defn(name=ACTIVITY_RUN_TOOL)
    async def run_tool(self, request: ToolRequest) -> ToolOutcome:
        """Validate the arguments and run the tool.

        Bad calls come back as an error outcome for the model. A tool that
        raises fails the attempt, so the tool's retry policy applies; the
        workflow turns the last failure into an error outcome.
        """
        agent = self._registry.get(request.agent)
        found = agent.tool(request.tool) if agent is not None else None
        telemetry.count_tool_call(found.name if found is not None else None)
        if found is None:
            telemetry.count_tool_failure(None, "unknown_tool")
            return _error(request, f"Error: tool '{request.tool}' is not available.")
        try:
            arguments = found.arguments.model_validate(json.loads(request.arguments or "{}"))
        except json.JSONDecodeError as err:
            telemetry.count_tool_failure(found.name, "invalid_arguments")
            return _error(request, f"Error: arguments are not valid JSON ({err.msg}).")
        except ValidationError as err:
            telemetry.count_tool_failure(found.name, "invalid_arguments")
            return _error(request, f"Error: invalid arguments for '{found.name}': {_brief(err)}")
        ctx = ToolContext(
            idempotency_key=request.idempotency_key,
            run_id=request.run_id,
            call_id=request.call_id,
            agent=request.agent,
            context=request.context,
        )
        try:
            content = _as_text(await found.invoke(arguments, ctx))
        except Exception:
            telemetry.count_tool_failure(found.name, "raised")
            raise
        return ToolOutcome(call_id=request.call_id, content=content)


def _error(request: ToolRequest, message: str) -> ToolOutcome:
    return ToolOutcome(call_id=request.call_id, content=message, is_error=True)


def _brief(err: ValidationError) -> str:
    """One line per problem: `amount: Input should be a valid number`."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors()
    )


def _as_text(result: object) -> str:
    if isinstance(result, str):
        return result
    try:
        return pydantic_core.to_json(result).decode()
    except pydantic_core.PydanticSerializationError as err:
        raise ApplicationError(
            f"tool result of type {type(result).__name__} is not JSON-serialisable: {err}",
            type="ToolResultNotSerialisable",
            non_retryable=True,
        ) from err
