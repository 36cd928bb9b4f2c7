"""Agents called as tools (`Agent.as_tool`): a call runs the agent as a run of its own,
a child `AgentWorkflow` that anyone can see, operate and approve on by its id. Pure:
the child's id, its input, what the caller's model is told.

The child's id is the caller's run id and the call id, then a part only the workers'
gate keys make (`child_id`, `workflows.secret_ids`): a workflow task retried, or a worker
killed mid-call, finds the same child and never starts a second, and nobody can hold the
id first. Clients find it in the caller's state (`child_of`).
It gets the model's `input` as its task and the caller's tool context; its final output
(JSON for an agent with an `output_type`) is the call's result, and a child that does
not complete (failed, cancelled, out of turns or budget) is a tool error the caller's
model sees.
"""

from __future__ import annotations

import hashlib
import json

from durable_agents.workflows import budget
from durable_agents.workflows.contract import ERROR_SUB_RUN_FAILED
from durable_agents.workflows.payloads import AgentInput, AgentResult, ToolOutcome
from durable_agents.workflows.run_items import AssistantMessage, ToolCall, ToolResult, Usage
from durable_agents.workflows.state import (
    CHILD_RUNS_KEPT,
    RENAMED_CHILDREN_KEPT,
    ChildRun,
    ErrorInfo,
    RenamedChild,
    RunState,
    RunStatus,
)


def agent_call_ids(state: RunState, calls: list[ToolCall]) -> list[str]:
    """The ids of `calls` that call agents as tools, in order."""
    return [c.call_id for c in calls if target(state, c) is not None]


def target(state: RunState, call: ToolCall) -> str | None:
    """The agent `call` runs as a child, if it is a call of an agent tool."""
    tool = state.agent.tool(call.tool)
    return tool.runs_agent if tool is not None else None


MAX_DEPTH = 4
"""How deeply runs may nest by calling agents as tools (a root run is at 0)."""
MAX_CHILDREN_PER_REPLY = 8
"""Agent calls of one reply that run; the others are answered as refused."""
MAX_ID = 200
"""The most characters of a child's id (what a decision's `run_id` may hold)."""


def child_id(run_id: str, call_id: str, suffix: str = "") -> str:
    """The child run's workflow id: the caller's run id, then the call id (its plain
    form), then `suffix` (`workflows.secret_ids`); if that is longer than `MAX_ID`, the
    start of the plain form and a digest of it, then `suffix`."""
    full = f"{run_id}/{call_id}"
    room = MAX_ID - len(suffix)
    if len(full) <= room:
        return full + suffix
    digest = hashlib.sha256(full.encode()).hexdigest()[:24]
    return f"{run_id[: room - len(digest) - 2]}/~{digest}{suffix}"


def child_of(state: RunState, call_id: str) -> str | None:
    """The id of agent call `call_id`'s child run, as this run started it
    (`RunState.child_runs`; one of those whose start a squatter kept from every id tried:
    `renamed_children`); None when it started none (or forgot it: the newest are kept).
    A run described by no keyed worker computes it (`child_id`). Clients find children
    here, never by computing an id."""
    for child in reversed(state.child_runs):
        if child.call_id == call_id and child.caller == state.run_id:
            return child.run_id
    for renamed in reversed(state.renamed_children):
        if renamed.call_id == call_id and renamed.caller == state.run_id:
            return renamed.run_id
    return child_id(state.run_id, call_id) if state.agent.gate_key is None else None


def started(state: RunState, call_id: str, run_id: str) -> None:
    """Agent call `call_id`'s child run started under `run_id`: recorded for clients."""
    state.child_runs.append(ChildRun(call_id=call_id, caller=state.run_id, run_id=run_id))
    del state.child_runs[:-CHILD_RUNS_KEPT]


def rename(state: RunState, call_id: str, held: str, fresh: str) -> str:
    """The id held by a workflow this run did not start: the child of `call_id` is
    started under `held` and `fresh` (hex), recorded with why; that id."""
    renamed = f"{held[: MAX_ID - len(fresh) - 1]}~{fresh}"
    because = (
        f"its usual id {held[:MAX_ID]!r} was held by a workflow this call did not start; "
        f"started as {renamed!r}"
    )
    state.renamed_children.append(
        RenamedChild(call_id=call_id, caller=state.run_id, run_id=renamed, because=because)
    )
    del state.renamed_children[:-RENAMED_CHILDREN_KEPT]
    return renamed


def refusal(state: RunState, call: ToolCall, reply_calls: list[str]) -> str | None:
    """Why `call` may not run its agent as a child (the caller's model is told), or
    None. `reply_calls`: the ids of the reply's agent calls, in order. A run with a
    token budget may: its children get shares of it (`budget_share`)."""
    if state.depth + 1 > MAX_DEPTH:
        return f"agents called as tools nest at most {MAX_DEPTH} deep; this run is at {state.depth}"
    if call.call_id not in reply_calls[:MAX_CHILDREN_PER_REPLY]:
        return f"one reply may call agents at most {MAX_CHILDREN_PER_REPLY} times"
    if state.cost_budget is not None:
        return (
            "this run has a cost budget, which a child run's spending could not be held "
            "to (its price may be in another currency): it cannot call agents as tools"
        )
    share = budget_share(state, reply_calls)
    if share is not None and share < 1:
        return "this run's token budget is spent"
    return None


def budget_share(state: RunState, reply_calls: list[str]) -> int | None:
    """The token budget each child of the reply's agent calls gets: what is left of the
    run's, split evenly between them (None: the run has no token budget). Together they
    cannot use more than is left; the run counts what each used when it ends."""
    if state.token_budget is None:
        return None
    left = state.token_budget - budget.tokens_used(state)
    return left // max(1, len(reply_calls[:MAX_CHILDREN_PER_REPLY]))


def count_spent(state: RunState, used: Usage | None, share: int) -> None:
    """A child given `share` tokens ended: count what it used (`used`; None when it
    failed and cannot say: its whole share) against the run's budget."""
    spent = used or Usage(total_tokens=share)
    counted = spent.model_copy(update={"cost": 0.0})  # its price may be another currency
    state.sub_run_usage = (state.sub_run_usage or Usage()).plus(counted)


def child_input(
    state: RunState,
    call: ToolCall,
    agent: str,
    *,
    token_budget: int | None = None,
    signed_start: bool = False,
) -> AgentInput | str:
    """The child's start input (with `token_budget`, its share of the caller's; with
    `signed_start`, who signed the caller's start), or why the call's arguments cannot
    make one (the caller's model is told)."""
    try:
        arguments = json.loads(call.arguments)
    except (ValueError, RecursionError):
        arguments = None
    task = arguments.get("input") if isinstance(arguments, dict) else None
    if not isinstance(task, str) or not task.strip() or set(arguments) != {"input"}:
        return f'The {agent} agent takes {{"input": "<the task, in full>"}}, nothing else.'
    return AgentInput(
        agent=agent,
        input=task,
        context=state.context,
        depth=state.depth + 1,
        token_budget=token_budget,
        caller_start=state.start_proof if signed_start else None,
    )


def open_calls(state: RunState) -> list[tuple[str, str]]:
    """(call id, agent) of the run's agent calls that have no result yet: those whose
    children an export takes along (`RunState.sub_runs`)."""
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    found = []
    for item in state.items:
        if isinstance(item, AssistantMessage):
            for call in item.tool_calls:
                agent = target(state, call)
                if agent is not None and call.call_id not in answered:
                    found.append((call.call_id, agent))
    return found


def resumed_child(
    state: RunState,
    call: ToolCall,
    agent: str,
    *,
    signed_start: bool = False,
    token_budget: int | None = None,
) -> AgentInput | None:
    """The start of `call`'s child from the snapshot the run was resumed from, if it
    carries one for that call whose agent is the call's (taken out of the state: it is
    used once; a child that handed over to another agent starts afresh, since a snapshot
    cannot prove which agent it started as). Whatever the snapshot says, the child nests
    under this run, has this run's tool context, and is not paused (this run, running
    the call, is not)."""
    found = next((s for s in state.sub_runs if s.call_id == call.call_id), None)
    if found is None:
        return None
    state.sub_runs = [s for s in state.sub_runs if s is not found]
    child = found.state
    if child.agent.name != agent:
        return None  # not this agent's run: the agent starts afresh
    child.depth = state.depth + 1
    child.context = state.context
    if token_budget is not None:  # this run's share, whatever the snapshot says
        child.token_budget = min(child.token_budget or token_budget, token_budget)
        child.agent = child.agent.model_copy(update={"on_budget": "stop"})
    return AgentInput(
        agent=agent,
        input="",
        resume_from=child,
        depth=child.depth,
        unpause=True,
        caller_start=state.start_proof if signed_start else None,
    )


def prune_sub_runs(state: RunState) -> None:
    """Drop the sub-run snapshots of calls that have a result (rejected, refused): none
    of them will be resumed."""
    open_ids = {call_id for call_id, _ in open_calls(state)}
    state.sub_runs = [s for s in state.sub_runs if s.call_id in open_ids]


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


def failure(call: ToolCall, agent: str, child: str | None, outcome: ToolOutcome) -> ErrorInfo:
    """Why the caller fails when `call`'s child did not complete and its tool says
    `on_failure="fail_run"`."""
    return ErrorInfo(
        type=ERROR_SUB_RUN_FAILED,
        message=f"call {call.call_id}: {outcome.content}",
        details={"call_id": call.call_id, "agent": agent, "child_run_id": child},
    )


def not_called(call: ToolCall, agent: str, why: str) -> ToolOutcome:
    """What the caller's model is told of a call that may not run its agent."""
    return ToolOutcome(
        call_id=call.call_id, content=f"The {agent} agent was not called: {why}.", is_error=True
    )


def failed(call: ToolCall, agent: str, why: str) -> ToolOutcome:
    """What the caller's model is told when the child could not run or failed."""
    return ToolOutcome(
        call_id=call.call_id, content=f"The {agent} agent's run failed: {why}", is_error=True
    )
