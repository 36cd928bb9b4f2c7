"""Size and speed of a 100-turn snapshot: `python -m bench.snapshot_size`.

Each turn is an assistant message with one tool call (~200 characters of
arguments) that needs approval, the approver's decision (made with the `decide`
update, with a reason), and a 1 KB tool result. Prints the file size and the
median of 20 runs of `dumps` and `loads`, unsigned and signed.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from workflows.snapshot import dumps, loads
from workflows.state import (
    AgentSpec,
    ApprovalCondition,
    ApprovalPolicy,
    AssistantMessage,
    Decision,
    RunState,
    RunStatus,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
    UserMessage,
)

TURNS = 100
RUNS = 20
KEY = b"bench-signing-key"


def hundred_turns() -> RunState:
    """A run of TURNS turns (see `state_of`)."""
    return state_of(TURNS)


def state_of(turns: int) -> RunState:
    """A run of `turns` turns, each an approved tool call (~200 chars of arguments), 1 KB result."""
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
    spec = AgentSpec(
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
    return RunState(
        run_id="bench-run",
        agent=spec,
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


def median_ms(operation: Callable[[], object]) -> float:
    """Median wall time of RUNS calls of `operation`, in milliseconds."""
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        operation()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    """Print the figures."""
    state = hundred_turns()
    text = dumps(state)
    signed = dumps(state, key=KEY)
    compact = json.dumps(json.loads(text), separators=(",", ":"))
    payload = len(compact.encode())
    print(f"{TURNS}-turn snapshot: {len(state.items)} items")
    print(f"  file size (indent 2):  {len(text.encode()):>8,} bytes")
    content = sum(len(c.arguments) for i in state.items for c in getattr(i, "tool_calls", []))
    content += sum(len(i.content) for i in state.items if isinstance(i, ToolResult))
    print(f"  compact JSON:          {payload:>8,} bytes (tool arguments + results: {content:,})")
    print(f"  dumps, median of {RUNS}:   {median_ms(lambda: dumps(state)):>8.2f} ms")
    print(f"  loads, median of {RUNS}:   {median_ms(lambda: loads(text)):>8.2f} ms")
    print(f"  dumps signed (HMAC):   {median_ms(lambda: dumps(state, key=KEY)):>8.2f} ms")
    print(f"  loads signed (HMAC):   {median_ms(lambda: loads(signed, key=KEY)):>8.2f} ms")


if __name__ == "__main__":
    main()
