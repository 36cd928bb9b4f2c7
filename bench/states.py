"""Synthetic run states for the benchmarks: plain data, no server."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from durable_agents.workflows.agent_spec import (
    AgentSpec,
    ApprovalCondition,
    ApprovalPolicy,
    ToolSpec,
)
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from durable_agents.workflows.state import RunState, RunStatus


def state_of(turns: int) -> RunState:
    """A run of `turns` turns, each an approved tool call (~200 characters of arguments,
    the approver's decision with a reason) and a 1 KB result."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    arguments = json.dumps({"query": "x" * 180, "limit": 10})
    items: list = [UserMessage(content="Research the topic, one search per turn.")]
    for turn in range(1, turns + 1):
        call = ToolCall(
            call_id=f"call_{turn:04d}", tool="search", arguments=arguments, needs_approval=True
        )
        at = t0 + timedelta(seconds=turn)
        items.append(AssistantMessage(turn=turn, tool_calls=[call], at=at))
        items.append(
            Decision(
                call_id=call.call_id,
                decision="approve",
                approver="analyst",
                reason="in scope",
                via="update",
                at=at + timedelta(milliseconds=500),
            )
        )
        items.append(ToolResult(call_id=call.call_id, content="r" * 1024))
    return RunState(
        run_id="bench-run",
        agent=_researcher(),
        status=RunStatus.RUNNING,
        turn=turns,
        max_turns=turns + 1,
        items=items,
        usage=Usage(
            model_calls=turns, input_tokens=10**6, output_tokens=10**4, total_tokens=1010000
        ),
        created_at=t0,
        updated_at=t0 + timedelta(seconds=turns),
    )


def parked(turns: int) -> RunState:
    """`state_of(turns)` whose next step is to wait for one more approval."""
    state = state_of(turns)
    call = ToolCall(call_id="pending", tool="search", arguments="{}", needs_approval=True)
    # Proposed now: the tool's approval timeout (1 h) must not have passed already.
    at = datetime.now(UTC)
    state.items.append(AssistantMessage(turn=turns + 1, tool_calls=[call], at=at))
    state.turn, state.max_turns = turns + 1, turns + 2
    return state


def _researcher() -> AgentSpec:
    return AgentSpec(
        name="researcher",
        instructions="Search, then answer.",
        model="gpt-test",
        tools=[
            ToolSpec(
                name="search",
                description="Web search.",
                parameters={"type": "object"},
                needs_approval=True,
                approval=ApprovalPolicy(
                    when=[ApprovalCondition(field="limit", op=">", value=5)],
                    approvers=["analyst"],
                    timeout=timedelta(hours=1),
                ),
            )
        ],
    )
