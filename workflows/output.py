"""Structured output: what a final reply of an agent with an output type settles. Pure.

`call_model` checks a final reply against the agent's output type in the worker
that defines it (`activities.output_type`) and says so in `ModelReply.output_check`.
A valid reply becomes the run's `final_output` (its JSON). An invalid one goes
back to the model as a feedback message with the validation error, at most
`AgentSpec.output_retries` times; after that the run ends `output_invalid` with
the last error.
"""

from __future__ import annotations

import json
from datetime import datetime

from durable_agents.workflows.contract import ERROR_OUTPUT_INVALID
from durable_agents.workflows.payloads import OutputCheck
from durable_agents.workflows.run_items import UserMessage
from durable_agents.workflows.state import ErrorInfo, RunState, RunStatus

PROBLEM_CHARS = 2_000
"""Characters of a validation error kept (in the feedback message and the error)."""

UNCHECKED = "the reply was not checked against the output type (no check came with it)"


def settle(state: RunState, check: OutputCheck | None, *, now: datetime) -> None:
    """Record the final reply's outcome: the output, a retry, or `output_invalid`."""
    spec = state.agent.output
    if spec is None:
        raise ValueError("settle() is for agents with an output type")
    check = check or OutputCheck(valid=False, problem=UNCHECKED)
    if check.valid:
        state.final_output = json.dumps(check.value, ensure_ascii=False)
        return
    problem = (check.problem or "not valid")[:PROBLEM_CHARS]
    used = retries_used(state)
    if used >= state.agent.output_retries:
        state.error = ErrorInfo(
            type=ERROR_OUTPUT_INVALID,
            message=f"the final reply is not a valid {spec.name} after {used + 1} "
            f"attempt{'s' if used else ''}: {problem}",
            details={"output_type": spec.name, "schema_sha256": spec.sha256},
        )
        state.status = RunStatus.OUTPUT_INVALID
        state.updated_at = now
        return
    state.items.append(
        UserMessage(
            content=f"Your reply is not a valid {spec.name}: {problem}\n"
            "Reply again with only the JSON that matches the required schema.",
            feedback=True,
        )
    )


def reopen(state: RunState) -> None:
    """An `output_invalid` run, resumed: running again, the model told why its last
    reply was refused. The message counts as the user's (the person who resumed
    the run asks again), so the retries start afresh."""
    spec = state.agent.output
    why = state.error.message if state.error is not None else "not valid"
    state.status = RunStatus.RUNNING
    state.error = None
    name = spec.name if spec is not None else "output"
    state.items.append(
        UserMessage(
            content=f"The run was resumed. {why[:PROBLEM_CHARS]}\n"
            f"Reply with only the JSON of a valid {name}."
        )
    )


def retries_used(state: RunState) -> int:
    """Feedback messages since the latest message of the user."""
    used = 0
    for item in reversed(state.items):
        if isinstance(item, UserMessage):
            if not item.feedback:
                break
            used += 1
    return used
