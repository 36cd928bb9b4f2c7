"""A run waiting for approval written as an OpenAI Agents SDK run state (`RunState`
JSON, `$schemaVersion` 1.21), so `RunState.from_string(agent, text)` in `openai-agents`
loads it, `get_interruptions()` lists the calls that wait here (same call ids, tools
and arguments) and `Runner.run(agent, state)` goes on after `state.approve(...)`.
Pure functions on plain JSON data, no Temporal, no network.

It is a conversion, not a snapshot: no integrity block, no audit log (decisions are
carried as the SDK records them, on calls that have run), no policies (the SDK
agent's tools decide what needs approval there), no `always` rules, guardrail
checks, compactions or attachments. A call that was approved here but has not run
waits for approval again there. See docs/how-to/openai-agents.md.
"""

from __future__ import annotations

from typing import Any

from durable_agents.activities.user_content import responses_content
from durable_agents.client.openai_agents_import import WRITTEN_SCHEMA_VERSION
from durable_agents.workflows import budget
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ReasoningItem,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from durable_agents.workflows.state import RunState


class NotExportable(ValueError):
    """The run cannot be written as an SDK run state (the reason says why)."""


def export_state(state: RunState) -> dict[str, Any]:
    """The SDK run state (JSON data) of `state`, a run waiting for approval."""
    if state.status.is_final:
        raise NotExportable(
            f"run {state.run_id} has ended ({state.status.value}): only a run waiting for "
            "approval converts to an OpenAI Agents SDK run state (an interrupted run)"
        )
    if budget.open_request(state) is not None:
        raise NotExportable(
            f"run {state.run_id} waits for a budget decision, which the SDK has no counterpart for"
        )
    last = max(
        (n for n, i in enumerate(state.items) if isinstance(i, AssistantMessage)), default=-1
    )
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    reply = state.items[last] if last >= 0 else None
    waiting = [
        c
        for c in (reply.tool_calls if isinstance(reply, AssistantMessage) else [])
        if c.needs_approval and c.call_id not in answered
    ]
    if not waiting:
        raise NotExportable(
            f"run {state.run_id} waits for no approval ({state.status.value}): only a run "
            "waiting for approval converts to an OpenAI Agents SDK run state"
        )
    if state.context is not None and not isinstance(state.context, dict):
        raise NotExportable(
            "the run's tool context is not a JSON object: the SDK's context is an object"
        )
    assert isinstance(reply, AssistantMessage)
    agent = {"name": state.agent.name}
    since_user = max(
        (n for n, i in enumerate(state.items) if isinstance(i, UserMessage)), default=-1
    )
    current_turn = sum(isinstance(i, AssistantMessage) for i in state.items[since_user + 1 :])
    generated = _reply_items(reply, agent)
    for item in state.items[last + 1 :]:
        if isinstance(item, ToolResult):
            generated.append(
                {
                    "type": "tool_call_output_item",
                    "raw_item": _output(item),
                    "agent": agent,
                    "output": item.content,
                }
            )
    approvals = [_approval_item(call, agent) for call in waiting]
    open_calls = [c for c in reply.tool_calls if c.call_id not in answered]
    processed = {
        "new_items": generated,
        "tools_used": sorted({c.tool for c in reply.tool_calls}),
        "functions": [{"tool_call": _call(c), "tool": {"name": c.tool}} for c in open_calls],
        "computer_actions": [],
        "local_shell_actions": [],
        "shell_actions": [],
        "apply_patch_actions": [],
        "custom_tool_actions": [],
        "handoffs": [],
        "mcp_approval_requests": [],
        "interruptions": approvals,
    }
    context: dict[str, Any] = {
        "usage": _usage(state.usage),
        "approvals": {},
        "context": state.context,
        "context_meta": {
            "original_type": "none" if state.context is None else "mapping",
            "serialized_via": "none" if state.context is None else "mapping",
            "requires_deserializer": False,
            "omitted": False,
        },
    }
    decided = _decisions(state, answered, agent)
    if decided:
        context["function_tool_approvals"] = decided
    return {
        "$schemaVersion": WRITTEN_SCHEMA_VERSION,
        "current_turn": current_turn,
        "current_agent": agent,
        "original_input": _input_items(state.items[:last]),
        "pending_input": [
            {"role": "user", "content": m if isinstance(m, str) else responses_content(m)}
            for m in state.queued_messages
        ],
        "model_responses": [
            {
                "usage": _usage(reply.usage or Usage(model_calls=1)),
                "output": _response_output(reply),
                "response_id": None,
                "request_id": None,
            }
        ],
        "context": context,
        "max_turns": state.max_turns,
        "generated_items": [*generated, *approvals],
        "current_step": {
            "type": "next_step_interruption",
            "data": {"interruptions": approvals},
        },
        "last_processed_response": processed,
        "trace": None,
    }


def _input_items(items: list[Any]) -> list[dict[str, Any]]:
    """The conversation before the latest reply, as Responses input items."""
    found: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, UserMessage):
            found.append({"role": "user", "content": responses_content(item)})
        elif isinstance(item, AssistantMessage):
            found += [_reasoning(r) for r in item.reasoning]
            if item.content:  # with an id: Chat Completions joins it to the calls after it
                found.append(_message(item))
            found += [_call(c) for c in item.tool_calls]
        elif isinstance(item, ToolResult):
            found.append(_output(item))
    return found


def _reply_items(reply: AssistantMessage, agent: dict[str, str]) -> list[dict[str, Any]]:
    """The latest reply as the SDK's run items."""
    found: list[dict[str, Any]] = [
        {"type": "reasoning_item", "raw_item": _reasoning(r), "agent": agent}
        for r in reply.reasoning
    ]
    if reply.content:
        found.append({"type": "message_output_item", "raw_item": _message(reply), "agent": agent})
    found += [
        {"type": "tool_call_item", "raw_item": _call(c), "agent": agent, "tool_name": c.tool}
        for c in reply.tool_calls
    ]
    return found


def _response_output(reply: AssistantMessage) -> list[dict[str, Any]]:
    """The latest reply as the model's response output (what the SDK validates)."""
    output: list[dict[str, Any]] = [_reasoning(r) for r in reply.reasoning]
    if reply.content:
        output.append(_message(reply))
    return output + [_call(c) for c in reply.tool_calls]


def _message(reply: AssistantMessage) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_turn_{reply.turn}",  # the SDK needs an id; ours have none
        "status": "completed",
        "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
    }


def _call(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call.call_id,
        "name": call.tool,
        "arguments": call.arguments,
    }


def _output(result: ToolResult) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": result.call_id, "output": result.content}


def _reasoning(item: ReasoningItem) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "type": "reasoning",
        "id": item.id,
        "summary": [{"type": "summary_text", "text": text} for text in item.summary],
    }
    if item.encrypted_content is not None:
        raw["encrypted_content"] = item.encrypted_content
    return raw


def _approval_item(call: ToolCall, agent: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "tool_approval_item",
        "raw_item": _call(call),
        "agent": agent,
        "tool_name": call.tool,
        "tool_lookup_key": {"kind": "bare", "name": call.tool},
    }


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "requests": usage.model_calls,
        "input_tokens": usage.input_tokens,
        "input_tokens_details": [{"cached_tokens": usage.cached_input_tokens}],
        "output_tokens": usage.output_tokens,
        "output_tokens_details": [{"reasoning_tokens": usage.reasoning_tokens}],
        "total_tokens": usage.total_tokens,
        "request_usage_entries": [],
    }


def _decisions(state: RunState, answered: set[str], agent: dict[str, str]) -> list[dict[str, Any]]:
    """The decisions on calls that have run (or been answered), per tool, as the SDK
    records them: call ids approved or rejected, with the rejection's reason."""
    tools = {
        c.call_id: c.tool
        for i in state.items
        if isinstance(i, AssistantMessage)
        for c in i.tool_calls
    }
    per_tool: dict[str, dict[str, Any]] = {}
    for item in state.items:
        if not isinstance(item, Decision) or item.call_id not in answered:
            continue
        tool = tools.get(item.call_id)
        if tool is None:  # a budget request's decision
            continue
        entry = per_tool.setdefault(tool, {"approved": [], "rejected": []})
        if item.decision == "approve":
            entry["approved"].append(item.call_id)
        else:
            entry["rejected"].append(item.call_id)
            if item.reason:
                entry.setdefault("rejection_messages", {})[item.call_id] = item.reason
    return [
        {"agent": agent, "tool_key": tool, "decision": decision}
        for tool, decision in per_tool.items()
    ]
