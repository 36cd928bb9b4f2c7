"""Model settings of a run: the agent's, with the start input's on top. Pure.

A start input may set the sampling and tool-use settings (`temperature`,
`tool_choice`, ...), never `extra_headers` or `extra_body`: those are sent to the
model endpoint with the worker's key, so only the agent (the worker's code) sets
them. A resumed snapshot is input too: its agent-only settings are dropped and the
worker's taken (`workflows.resume_trust`).
"""

from __future__ import annotations

from durable_agents.workflows.agent_spec import AgentSpec, ModelAPIName, ModelSettings

AGENT_ONLY = ("extra_headers", "extra_body")
"""Settings only the agent sets."""
TOOL_CHOICES = ("auto", "none", "required")
"""`tool_choice` values that name no tool."""
NOT_IN_RESPONSES = ("seed", "stop")
"""Settings the Responses API has no parameter for."""


def for_run(agent: AgentSpec, run: ModelSettings | None) -> ModelSettings:
    """The settings a run is asked with; ValueError if `run` sets an agent-only field
    or the result names a tool the agent lacks."""
    if run is not None:
        given = [name for name in AGENT_ONLY if getattr(run, name) is not None]
        if given:
            raise ValueError(
                f"model_settings: {', '.join(given)} can be set by the agent only, "
                "not by a start input"
            )
    update = run.model_dump(exclude_none=True) if run is not None else {}
    merged = agent.model_settings.model_copy(update=update)
    problem = tool_choice_problem(merged, [t.name for t in agent.tools]) or api_problem(
        merged, agent.model_api
    )
    if problem is not None:
        raise ValueError(f"model_settings: {problem}")
    return merged


def for_turn(settings: ModelSettings, *, tools_called: bool) -> ModelSettings | None:
    """What one model call is sent (None: nothing set). A `tool_choice` that forces a
    tool (`required`, a name) is sent until a tool has been called since the user's
    latest message, then left to the endpoint (`auto`): forced on every call, the
    model could never answer (the OpenAI Agents SDK's `reset_tool_choice`)."""
    if tools_called and settings.tool_choice not in (None, "auto", "none"):
        settings = settings.model_copy(update={"tool_choice": None})
    return None if settings.is_empty() else settings


def without_agent_only(settings: ModelSettings) -> ModelSettings:
    """`settings` as a start input may give them (what a resumed snapshot keeps)."""
    return settings.model_copy(update=dict.fromkeys(AGENT_ONLY))


def tool_choice_problem(settings: ModelSettings, tools: list[str]) -> str | None:
    """Why `tool_choice` cannot be sent for an agent with `tools`, or None."""
    choice = settings.tool_choice
    if choice is None or choice in ("auto", "none"):
        return None
    if not tools:
        return f"tool_choice {choice!r}, but the agent has no tools"
    if choice != "required" and choice not in tools:
        return f"tool_choice {choice!r} names no tool of the agent ({', '.join(tools)})"
    return None


def api_problem(settings: ModelSettings, api: ModelAPIName | None) -> str | None:
    """Why `settings` cannot be sent through `api`, or None (a setting the API has no
    parameter for is refused, not dropped)."""
    if api != "responses":
        return None
    given = [name for name in NOT_IN_RESPONSES if getattr(settings, name) is not None]
    if not given:
        return None
    return f"the Responses API has no {' or '.join(given)} (set model_api='chat_completions')"
