"""Agents written with the OpenAI Agents SDK, served durably as they are.

`from_sdk_agent(sdk_agent)` turns an `agents.Agent` and every agent it reaches (handoff
targets, agents used as tools) into our `Agent`s, which reference each other: a module
that exposes only the converted entry agent serves them all (`AgentRegistry.add`).
What cannot be carried over is refused here, at conversion, with a one-line reason
naming the agent and the feature (`SDKAgentRefused`), never dropped.

Needs the `openai-agents` extra (`pip install 'durable-agents[openai-agents]'`).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Literal

import agents as sdk
from agents.extensions import handoff_filters
from agents.models import get_default_model, get_default_model_settings
from agents.tool_context import ToolContext as SDKToolContext
from pydantic import BaseModel, ConfigDict, TypeAdapter

from durable_agents import openai_agents_guardrails as sdk_guardrails
from durable_agents.activities.agent import Agent
from durable_agents.activities.approval_rules import ApprovalContext
from durable_agents.activities.handoff import handoff
from durable_agents.activities.instructions import InstructionsContext, function_name
from durable_agents.activities.output_type import output_type as as_output
from durable_agents.activities.tool import DEFAULT_TOOL_TIMEOUT, Tool, ToolContext
from durable_agents.openai_agents_guardrails import sdk_usage
from durable_agents.workflows.agent_spec import ApprovalPolicy, ModelSettings

__all__ = ["SDKAgentRefused", "from_sdk_agent"]

LATER_HOOKS = (
    "an input filter in code (on the SDK's HandoffInputData) has no counterpart: "
    "remove_all_tools maps to ours"
)

_MODEL_SETTINGS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max_output_tokens",
    "tool_choice": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
    "metadata": "metadata",
    "extra_headers": "extra_headers",
    "extra_body": "extra_body",
}
"""The SDK's `ModelSettings` fields ours has (its name → ours); `reasoning` maps too."""

_AGENT_TOOL_OPTIONS = (
    "custom_output_extractor",
    "on_stream",
    "run_config",
    "max_turns",
    "hooks",
    "previous_response_id",
    "conversation_id",
    "session",
    "input_builder",
)
"""`sdk.Agent.as_tool` options with no counterpart in our `as_tool` (refused if set)."""


class SDKAgentRefused(ValueError):
    """An SDK agent uses a feature the adapter cannot carry over."""

    def __init__(self, agent: str, feature: str, why: str) -> None:
        super().__init__(f"SDK agent {agent!r}: {feature} cannot be carried over: {why}")
        self.agent = agent
        self.feature = feature


def from_sdk_agent(
    sdk_agent: sdk.Agent[Any],
    *,
    context_type: Any = None,
    guardrail_refusals: Mapping[str, str] | None = None,
) -> Agent:
    """Our `Agent` for `sdk_agent`, and for every agent it reaches (referenced from it).

    `context_type` (a pydantic model or dataclass): what the SDK's functions receive as
    `ctx.context`, validated from the JSON context a run starts with (default: that JSON
    value itself). A function tool's changes to it become the run's context (dumped back
    to JSON), as the SDK's `update_seat` example expects (`ToolContext.context`).
    `guardrail_refusals`: SDK guardrails (by name) whose tripwire answers with this
    text and keeps the session going; any other guardrail's tripwire ends the run
    (`guardrail_tripped`). ValueError for a name no guardrail reached has."""
    if not isinstance(sdk_agent, sdk.Agent):
        raise TypeError(f"from_sdk_agent takes an agents.Agent, not {sdk_agent!r}")
    converter = _Converter(context_type, guardrail_refusals or {})
    converted = converter.agent(sdk_agent)
    unknown = sorted(set(guardrail_refusals or {}) - converter.guardrail_names)
    if unknown:
        raise ValueError(f"guardrail_refusals names no guardrail of these agents: {unknown}")
    return converted


class _Converter:
    """One conversion: SDK agents already converted (or under way: a cycle of handoffs)."""

    def __init__(self, context_type: Any, refusals: Mapping[str, str]) -> None:
        self._context = TypeAdapter(context_type) if context_type is not None else None
        self._done: dict[str, tuple[sdk.Agent[Any], Agent | None]] = {}
        self._refusals = refusals
        self.guardrail_names: set[str] = set()

    def agent(self, source: sdk.Agent[Any]) -> Agent:
        seen = self._done.get(source.name)
        if seen is not None:
            if seen[0] is not source:
                raise SDKAgentRefused(source.name, "its name", "two different agents share it")
            if seen[1] is None:  # only a handoff reaches an agent under way (see _handoff)
                raise AssertionError("an agent under way reached again")
            return seen[1]
        self._done[source.name] = (source, None)
        _refuse_agent_features(source)
        tools = [self._tool(source, t) for t in source.tools]
        handoffs = [self._handoff(source, h) for h in source.handoffs]
        converted = Agent(
            name=source.name,
            instructions=self._instructions(source),
            model=source.model or get_default_model(),  # a Model object was refused
            tools=tools,
            handoffs=handoffs,
            handoff_description=source.handoff_description,
            model_settings=_model_settings(source),
            output_type=_output_type(source),
            input_guardrails=self._guardrails(source, "input"),
            output_guardrails=self._guardrails(source, "output"),
        )
        self._done[source.name] = (source, converted)
        return converted

    def _guardrails(self, owner: sdk.Agent[Any], kind: Literal["input", "output"]) -> list[Any]:
        found = getattr(owner, f"{kind}_guardrails")
        self.guardrail_names.update(g.get_name() for g in found)
        return [
            sdk_guardrails.convert(owner, g, kind, context=self._context, refusals=self._refusals)
            for g in found
        ]

    def _instructions(self, source: sdk.Agent[Any]) -> Any:
        """The SDK agent's instructions: its text, or its function `(run_context, agent)
        -> str` (sync or async) as ours, asked on the worker before each model call with
        the run's context as the SDK's `RunContextWrapper.context` (issue 46)."""
        given = source.instructions
        if not callable(given):
            return given or ""
        context = self._context

        async def instructions(ctx: InstructionsContext) -> str:
            value = context.validate_python(ctx.context) if context is not None else ctx.context
            text = given(sdk.RunContextWrapper(context=value), source)
            return await text if inspect.isawaitable(text) else text

        instructions.__module__ = getattr(given, "__module__", None) or __name__
        instructions.__qualname__ = getattr(given, "__qualname__", None) or "instructions"
        return instructions

    def _tool(self, owner: sdk.Agent[Any], found: Any) -> Tool:
        if not isinstance(found, sdk.FunctionTool):
            raise SDKAgentRefused(
                owner.name, f"tool {type(found).__name__}", "hosted tools run at OpenAI, not here"
            )
        feature = f"tool {found.name!r}"
        approval = self._approval(found.needs_approval)
        _refuse_tool_features(owner.name, feature, found)
        if found._is_agent_tool:
            _refuse_agent_tool_options(owner.name, feature, found)
            child = self.agent(found._agent_instance)
            as_tool = child.as_tool(
                name=found.name, description=found.description, needs_approval=approval
            )
            return dataclasses.replace(as_tool, parameters_schema=found.params_json_schema)
        return Tool(
            name=found.name,
            description=found.description,
            fn=_not_called,
            arguments=_JSONObject,
            parameters_schema=found.params_json_schema,
            invoke_json=self._invoker(owner, found),
            approval=ApprovalPolicy() if approval is True else approval or None,
            timeout=(
                timedelta(seconds=found.timeout_seconds)
                if found.timeout_seconds
                else DEFAULT_TOOL_TIMEOUT
            ),
        )

    def _approval(self, needs_approval: Any) -> bool | ApprovalPolicy:
        """The SDK's `needs_approval`: a bool, or its function `(run_context, arguments,
        call_id) -> bool` (sync or async) as our code rule, asked on the worker with the
        run's context as the SDK's `RunContextWrapper.context`."""
        if not callable(needs_approval):
            return bool(needs_approval)
        context = self._context
        sdk_rule = needs_approval

        async def rule(arguments: dict[str, Any], ctx: ApprovalContext) -> Any:
            value = context.validate_python(ctx.context) if context is not None else ctx.context
            answer = sdk_rule(sdk.RunContextWrapper(context=value), arguments, ctx.call_id)
            return await answer if inspect.isawaitable(answer) else answer

        rule.__module__ = getattr(sdk_rule, "__module__", None) or __name__
        rule.__qualname__ = getattr(sdk_rule, "__qualname__", None) or "needs_approval"
        return ApprovalPolicy(rule=rule)

    def _invoker(self, owner: sdk.Agent[Any], found: sdk.FunctionTool) -> Any:
        context = self._context

        async def invoke(raw: str, ctx: ToolContext) -> Any:
            value = context.validate_python(ctx.context) if context is not None else ctx.context
            tool_context = SDKToolContext(
                context=value,
                usage=sdk_usage(ctx.usage),
                tool_name=found.name,
                tool_call_id=ctx.call_id,
                tool_arguments=raw,
                agent=owner,
            )
            before = context.dump_python(value, mode="json") if context is not None else None
            result = await found.on_invoke_tool(tool_context, raw)
            if context is not None:  # a change the tool made to the typed context, kept
                after = context.dump_python(tool_context.context, mode="json")
                if after != before:
                    ctx.set_context(after)
            return result

        return invoke

    def _handoff(self, owner: sdk.Agent[Any], found: Any) -> Tool:
        if isinstance(found, sdk.Agent):
            target, name, description = found, None, None
            filter_ = None
        else:
            target = found._agent_ref() if found._agent_ref is not None else None
            feature = f"handoff {found.tool_name!r}"
            if not isinstance(target, sdk.Agent):
                raise SDKAgentRefused(owner.name, feature, "not made by handoff(agent, ...)")
            _refuse_handoff_features(owner.name, feature, found)
            name, description = found.tool_name, found.tool_description
            filter_ = "remove_tools" if found.input_filter is not None else None
        seen = self._done.get(target.name)
        if seen is not None and seen[1] is None and seen[0] is target:
            # a handoff back to an agent under way (triage -> billing -> triage): by name
            reached: Any = target.name
        else:
            reached = self.agent(target)
        converted = handoff(
            reached,
            tool_name=name or sdk.Handoff.default_tool_name(target),
            description=description or sdk.Handoff.default_tool_description(target),
            input_filter=filter_,
        )
        if isinstance(found, sdk.Agent) or _handoff_hook(found) is None:
            return converted
        return self._hooked(owner, found, converted)

    def _hooked(self, owner: sdk.Agent[Any], found: sdk.Handoff[Any, Any], tool: Tool) -> Tool:
        """The SDK handoff's `on_handoff` (and its `input_type`) as our hook: run on the
        worker through the SDK's own `on_invoke_handoff` (it validates the input and calls
        the hook) with the run's context, whose changes become the run's (issue 46)."""
        context = self._context
        hook = _handoff_hook(found)

        async def invoke(raw: str, ctx: ToolContext) -> str:
            value = context.validate_python(ctx.context) if context is not None else ctx.context
            before = context.dump_python(value, mode="json") if context is not None else None
            run_context = sdk.RunContextWrapper(context=value)
            await found.on_invoke_handoff(run_context, raw)
            if context is not None:
                after = context.dump_python(run_context.context, mode="json")
                if after != before:
                    ctx.set_context(after)
            return f"on_handoff of {found.tool_name} ran"

        takes_input = bool(found.input_json_schema.get("properties"))
        return dataclasses.replace(
            tool,
            on_handoff=function_name(hook),
            invoke_json=invoke,
            arguments=_JSONObject if takes_input else tool.arguments,
            parameters_schema=found.input_json_schema if takes_input else None,
        )


class _JSONObject(BaseModel):
    """A converted tool's arguments as we check them: a JSON object (the SDK validates
    the rest, as its Runner would)."""

    model_config = ConfigDict(extra="allow")


def _not_called(**_: Any) -> None:
    raise RuntimeError("a converted SDK tool runs through its on_invoke_tool")


def _refuse_agent_features(agent: sdk.Agent[Any]) -> None:
    name = agent.name
    if agent.prompt is not None:
        raise SDKAgentRefused(name, "prompt", "stored prompts are not supported")
    if agent.model is not None and not isinstance(agent.model, str):
        raise SDKAgentRefused(name, "model as an object", "give the model's name")
    if agent.hooks is not None:
        raise SDKAgentRefused(name, "hooks", "lifecycle hooks are not supported")
    if agent.tool_use_behavior != "run_llm_again":
        raise SDKAgentRefused(
            name,
            f"tool_use_behavior={agent.tool_use_behavior!r}",
            "a tool result always goes back to the model",
        )
    if agent.mcp_servers:
        raise SDKAgentRefused(
            name, "mcp_servers", "give the agent our MCPServer(...) (AGENT_MCP_SERVERS)"
        )
    if agent.reset_tool_choice is not True:
        raise SDKAgentRefused(
            name, "reset_tool_choice=False", "a forced tool choice resets after a tool call"
        )


def _refuse_tool_features(agent: str, feature: str, found: sdk.FunctionTool) -> None:
    if found.is_enabled is not True:
        raise SDKAgentRefused(agent, f"{feature}: is_enabled", "a tool is always enabled")
    if found.tool_input_guardrails or found.tool_output_guardrails:
        raise SDKAgentRefused(
            agent, f"{feature}: tool guardrails", "tool-level guardrails are not supported"
        )
    if found.timeout_behavior != "error_as_result":
        raise SDKAgentRefused(
            agent, f"{feature}: timeout_behavior", "a timed-out call is an error the model reads"
        )
    for option in ("defer_loading", "custom_data_extractor", "_tool_namespace"):
        if getattr(found, option):
            raise SDKAgentRefused(agent, f"{feature}: {option.lstrip('_')}", "not supported")


def _refuse_agent_tool_options(agent: str, feature: str, found: sdk.FunctionTool) -> None:
    implementation = getattr(found.on_invoke_tool, "_invoke_tool_impl", None)
    options = _closure(implementation)
    for option in _AGENT_TOOL_OPTIONS:
        if options.get(option) is not None:
            raise SDKAgentRefused(
                agent, f"{feature}: as_tool({option}=...)", "our agent tools have no such option"
            )
    if options.get("params_adapter") is None or set(
        found.params_json_schema.get("properties", {})
    ) != {"input"}:
        raise SDKAgentRefused(
            agent, f"{feature}: as_tool(parameters=...)", "an agent tool takes one `input`"
        )


def _handoff_hook(found: sdk.Handoff[Any, Any]) -> Any:
    """The `on_handoff` function `sdk.handoff(...)` was given, or None."""
    return _closure(getattr(found.on_invoke_handoff, "args", (None,))[0]).get("on_handoff")


def _refuse_handoff_features(agent: str, feature: str, found: sdk.Handoff[Any, Any]) -> None:
    if found.input_json_schema.get("properties") and _handoff_hook(found) is None:
        raise SDKAgentRefused(agent, f"{feature}: on_handoff", "an input_type needs on_handoff")
    mapped = (None, handoff_filters.remove_all_tools)  # ours: input_filter="remove_tools"
    if found.input_filter not in mapped:
        raise SDKAgentRefused(agent, f"{feature}: input_filter", LATER_HOOKS)
    if found.is_enabled is not True:
        raise SDKAgentRefused(agent, f"{feature}: is_enabled", "a handoff is always enabled")
    if found.nest_handoff_history:
        raise SDKAgentRefused(
            agent, f"{feature}: nest_handoff_history", "the next agent sees the conversation"
        )


def _closure(fn: Callable[..., Any] | None) -> dict[str, Any]:
    """The values a function closes over, by name (empty if it is no closure)."""
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    values = {}
    for name, cell in zip(code.co_freevars, cells, strict=False):
        try:
            values[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return values


def _model_settings(agent: sdk.Agent[Any]) -> ModelSettings:
    # Not set: the field's default, or the SDK's default for its default model (gpt-5's
    # reasoning and verbosity), left to the endpoint as for our own agents.
    given, defaults = agent.model_settings, (sdk.ModelSettings(), get_default_model_settings())
    mapped: dict[str, Any] = {}
    for field in dataclasses.fields(given):
        value = getattr(given, field.name)
        if any(value == getattr(default, field.name) for default in defaults):
            continue
        if field.name in _MODEL_SETTINGS:
            mapped[_MODEL_SETTINGS[field.name]] = value
        elif field.name == "reasoning" and set(
            k for k, v in value.model_dump(exclude_none=True).items()
        ) <= {"effort"}:
            mapped["reasoning_effort"] = value.effort
        else:
            raise SDKAgentRefused(
                agent.name, f"model_settings.{field.name}", "our ModelSettings has no such field"
            )
    if not isinstance(mapped.get("tool_choice", ""), str):
        raise SDKAgentRefused(
            agent.name, "model_settings.tool_choice", "give auto, none, required or a tool name"
        )
    try:
        return ModelSettings(**mapped)
    except ValueError as err:
        raise SDKAgentRefused(agent.name, "model_settings", str(err).splitlines()[-1]) from None


def _output_type(agent: sdk.Agent[Any]) -> Any:
    found = agent.output_type
    if found is None or found is str:
        return None
    if isinstance(found, sdk.AgentOutputSchemaBase):
        raise SDKAgentRefused(agent.name, "output_type as a schema object", "give the type")
    try:
        as_output(found)
    except TypeError as err:
        raise SDKAgentRefused(agent.name, "output_type", str(err)) from None
    return found
