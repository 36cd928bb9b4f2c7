"""Agents called as tools (`Agent.as_tool`): a call runs the agent as a run of its own,
a child `AgentWorkflow` that anyone can see, operate and approve on by its id. Pure:
the child's id, its input, what the caller's model is told.

The child's id is the caller's run id and the call id (`child_id`): a workflow task
retried, or a worker killed mid-call, finds the same child and never starts a second.
It gets the model's `input` as its task and the caller's tool context; its final output
(JSON for an agent with an `output_type`) is the call's result, and a child that does
not complete (failed, cancelled, out of turns or budget) is a tool error the caller's
model sees.
"""

from __future__ import annotations

import json

from durable_agents.workflows.payloads import AgentInput, AgentResult, ToolOutcome
from durable_agents.workflows.state import RunState, RunStatus, ToolCall


def target(state: RunState, call: ToolCall) -> str | None:
    """The agent `call` runs as a child, if it is a call of an agent tool."""
    tool = state.agent.tool(call.tool)
    return tool.runs_agent if tool is not None else None


def child_id(run_id: str, call_id: str) -> str:
    """The child run's workflow id: the caller's run id, then the call id."""
    return f"{run_id}/{call_id}"


def child_input(state: RunState, call: ToolCall, agent: str) -> AgentInput | str:
    """The child's start input, or why the call's arguments cannot make one (the
    caller's model is told)."""
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        arguments = None
    task = arguments.get("input") if isinstance(arguments, dict) else None
    if not isinstance(task, str) or not task.strip() or set(arguments) != {"input"}:
        return f'The {agent} agent takes {{"input": "<the task, in full>"}}, nothing else.'
    return AgentInput(agent=agent, input=task, context=state.context)


def result(call: ToolCall, agent: str, done: AgentResult) -> ToolOutcome:
    """What the caller's model is told of the child's end."""
    if done.status is RunStatus.COMPLETED:
        output = done.final_output
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return ToolOutcome(call_id=call.call_id, content=text)
    return ToolOutcome(
        call_id=call.call_id,
        content=f"The {agent} agent's run ended {done.status.value} without an answer.",
        is_error=True,
    )


def failed(call: ToolCall, agent: str, why: str) -> ToolOutcome:
    """What the caller's model is told when the child could not run or failed."""
    return ToolOutcome(
        call_id=call.call_id, content=f"The {agent} agent's run failed: {why}", is_error=True
    )
