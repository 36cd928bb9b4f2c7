"""The agent loop as pure functions of RunState.

No Temporal, no I/O, no clock: the caller passes `now`. `next_step` looks at
the state and says what must happen next; the `record_*` and `apply_*`
functions fold the outcome of a step back into the state. The workflow only
performs the steps, so this module can be tested and replayed on its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from workflows.payloads import (
    AgentInput,
    DecideInput,
    ModelReply,
    ModelRequest,
    PendingApproval,
    StatusView,
    ToolOutcome,
    ToolSchema,
)
from workflows.state import (
    AgentSpec,
    AssistantMessage,
    Decision,
    ErrorInfo,
    RunOrigin,
    RunState,
    RunStatus,
    ToolCall,
    ToolResult,
    UserMessage,
)

# --- steps ------------------------------------------------------------------


@dataclass(frozen=True)
class CallModel:
    """Ask the model for the next reply."""

    request: ModelRequest


@dataclass(frozen=True)
class RunTools:
    """Run these calls (approved or needing no approval), concurrently."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True)
class AwaitDecisions:
    """Wait until a decision arrives for any of these calls."""

    call_ids: tuple[str, ...]


@dataclass(frozen=True)
class Finish:
    """The run is over, with this status."""

    status: RunStatus


Step = CallModel | RunTools | AwaitDecisions | Finish


class DecisionRefused(ValueError):
    """A decision that cannot apply to the run; the message says why."""


# --- starting ----------------------------------------------------------------


def new_state(spec: AgentSpec, agent_input: AgentInput, *, run_id: str, now: datetime) -> RunState:
    """The state of a fresh run: the user's input is the first item."""
    return RunState(
        run_id=run_id,
        agent=spec,
        max_turns=agent_input.max_turns or spec.max_turns,
        context=agent_input.context,
        items=[UserMessage(content=agent_input.input)],
        created_at=now,
        updated_at=now,
    )


def resume(snapshot: RunState, *, run_id: str, now: datetime) -> RunState:
    """The state of a new run `run_id` that continues from `snapshot`.

    The snapshot's own `origin` is kept when it already names the snapshot's
    run (a fork prepared by `workflows.snapshot.fork`); otherwise the new run
    records that it resumed the snapshot's run. A failed or cancelled run
    resumes as running: resuming is how it is retried.
    """
    state = snapshot.model_copy(deep=True)
    if state.origin is None or state.origin.run_id != snapshot.run_id:
        state.origin = RunOrigin(run_id=snapshot.run_id, turn=snapshot.turn, mode="resume")
    if state.status in (RunStatus.FAILED, RunStatus.CANCELLED):
        state.status = RunStatus.RUNNING
        state.error = None
    state.run_id = run_id
    state.updated_at = now
    return state


# --- deciding what comes next -----------------------------------------------------


def next_step(state: RunState) -> Step:
    """What the run must do next, given only its state."""
    if state.status.is_final:
        return Finish(state.status)
    reply = last_reply(state)
    if reply is not None and not reply.tool_calls:
        return Finish(RunStatus.COMPLETED)
    open_calls = _unresolved_calls(state, reply)
    if not open_calls:
        if state.turn >= state.max_turns:
            return Finish(RunStatus.MAX_TURNS_EXCEEDED)
        return CallModel(model_request(state))
    decided = _decisions(state)
    runnable = tuple(c for c in open_calls if not c.needs_approval or c.call_id in decided)
    if runnable:
        return RunTools(runnable)
    return AwaitDecisions(tuple(c.call_id for c in open_calls))


def model_request(state: RunState) -> ModelRequest:
    """The request for the model's next turn."""
    spec = state.agent
    return ModelRequest(
        model=spec.model,
        instructions=spec.instructions,
        items=state.items,
        tools=[
            ToolSchema(name=t.name, description=t.description, parameters=t.parameters)
            for t in spec.tools
        ],
        turn=state.turn + 1,
    )


def status_for(step: Step) -> RunStatus:
    """The status a run has while it performs `step`."""
    if isinstance(step, Finish):
        return step.status
    if isinstance(step, AwaitDecisions):
        return RunStatus.AWAITING_APPROVAL
    return RunStatus.RUNNING


# --- folding outcomes back in ------------------------------------------------------


def record_model_reply(state: RunState, reply: ModelReply, *, now: datetime) -> None:
    """Append the model's reply; settle calls that cannot run, pre-decide by rule."""
    state.turn += 1
    state.usage = state.usage.plus(reply.usage)
    calls = [
        ToolCall(
            call_id=c.call_id,
            tool=c.tool,
            arguments=c.arguments,
            needs_approval=_needs_approval(state.agent, c.tool),
        )
        for c in reply.tool_calls
    ]
    state.items.append(
        AssistantMessage(turn=state.turn, content=reply.content, tool_calls=calls, at=now)
    )
    for call in calls:
        problem = malformed_call_problem(state.agent, call)
        if problem is not None:
            state.items.append(ToolResult(call_id=call.call_id, content=problem, is_error=True))
        elif call.needs_approval:
            rule = _standing_rule(state, call.tool)
            if rule is not None:
                _append_decision(
                    state,
                    Decision(
                        call_id=call.call_id,
                        decision=rule.decision,
                        approver=rule.approver,
                        reason=rule.reason,
                        by_rule=True,
                        at=now,
                    ),
                )
    if not calls:
        state.final_output = reply.content or ""
    state.updated_at = now


def record_tool_outcomes(state: RunState, outcomes: list[ToolOutcome], *, now: datetime) -> None:
    """Append the results of executed tool calls, in the order given."""
    for outcome in outcomes:
        state.items.append(
            ToolResult(call_id=outcome.call_id, content=outcome.content, is_error=outcome.is_error)
        )
    state.updated_at = now


def check_decision(state: RunState, call_id: str) -> ToolCall:
    """The pending call a decision on `call_id` would apply to; raises DecisionRefused."""
    if state.status.is_final:
        raise DecisionRefused(f"run {state.run_id} has ended ({state.status.value})")
    for call in _unresolved_calls(state, last_reply(state)):
        if call.call_id != call_id:
            continue
        if not call.needs_approval:
            raise DecisionRefused(f"tool call {call_id} ({call.tool}) needs no approval")
        if call_id in _decisions(state):
            raise DecisionRefused(f"tool call {call_id} is already decided")
        return call
    if any(isinstance(i, Decision) and i.call_id == call_id for i in state.items):
        raise DecisionRefused(f"tool call {call_id} is already decided")
    raise DecisionRefused(f"no tool call {call_id} is awaiting approval in run {state.run_id}")


def apply_decision(state: RunState, decision: DecideInput, *, now: datetime) -> Decision:
    """Record a decision (and, with `always`, apply it to the tool's other pending calls)."""
    call = check_decision(state, decision.call_id)
    recorded = Decision(
        call_id=call.call_id,
        decision=decision.decision,
        approver=decision.approver,
        reason=decision.reason,
        always=decision.always,
        at=now,
    )
    _append_decision(state, recorded)
    if decision.always:
        decided = _decisions(state)
        for other in _unresolved_calls(state, last_reply(state)):
            if other.tool == call.tool and other.needs_approval and other.call_id not in decided:
                _append_decision(
                    state,
                    recorded.model_copy(
                        update={"call_id": other.call_id, "always": False, "by_rule": True}
                    ),
                )
    state.updated_at = now
    return recorded


def finish(state: RunState, status: RunStatus, *, now: datetime) -> None:
    """Mark the run as ended."""
    state.status = status
    state.updated_at = now


def fail(state: RunState, error: ErrorInfo, *, now: datetime) -> None:
    """Mark the run as failed, keeping why."""
    state.error = error
    finish(state, RunStatus.FAILED, now=now)


# --- reading -----------------------------------------------------------------------


def pending_approvals(state: RunState) -> list[PendingApproval]:
    """The calls waiting for a decision, oldest first."""
    reply = last_reply(state)
    if reply is None or state.status.is_final:
        return []
    decided = _decisions(state)
    return [
        PendingApproval(
            call_id=c.call_id, tool=c.tool, arguments=c.arguments, requested_at=reply.at
        )
        for c in _unresolved_calls(state, reply)
        if c.needs_approval and c.call_id not in decided
    ]


def status_view(state: RunState) -> StatusView:
    """The short status of a run."""
    return StatusView(
        status=state.status,
        agent=state.agent.name,
        turn=state.turn,
        pending_approvals=len(pending_approvals(state)),
        usage=state.usage,
    )


def last_reply(state: RunState) -> AssistantMessage | None:
    """The model's latest reply, if any."""
    return next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)


def malformed_call_problem(spec: AgentSpec, call: ToolCall) -> str | None:
    """Why a call cannot run at all (unknown tool, arguments not a JSON object), or None."""
    if spec.tool(call.tool) is None:
        known = ", ".join(t.name for t in spec.tools) or "none"
        return f"Error: unknown tool '{call.tool}'. Available tools: {known}."
    try:
        arguments = json.loads(call.arguments or "{}")
    except json.JSONDecodeError as err:
        return (
            f"Error: arguments for tool '{call.tool}' are not valid JSON ({err.msg}). "
            "Retry with a JSON object."
        )
    if not isinstance(arguments, dict):
        return f"Error: arguments for tool '{call.tool}' must be a JSON object."
    return None


# --- helpers -------------------------------------------------------------------------


def _needs_approval(spec: AgentSpec, tool: str) -> bool:
    found = spec.tool(tool)
    return found is not None and found.needs_approval


def _unresolved_calls(state: RunState, reply: AssistantMessage | None) -> list[ToolCall]:
    if reply is None:
        return []
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    return [c for c in reply.tool_calls if c.call_id not in answered]


def _decisions(state: RunState) -> dict[str, Decision]:
    return {i.call_id: i for i in state.items if isinstance(i, Decision)}


def _standing_rule(state: RunState, tool: str) -> Decision | None:
    """The latest explicit `always` decision on a call of `tool`, if any."""
    tools_by_call = {
        c.call_id: c.tool
        for i in state.items
        if isinstance(i, AssistantMessage)
        for c in i.tool_calls
    }
    rules = [
        i
        for i in state.items
        if isinstance(i, Decision) and i.always and tools_by_call.get(i.call_id) == tool
    ]
    return rules[-1] if rules else None


def _append_decision(state: RunState, decision: Decision) -> None:
    """Record a decision; a rejection also answers the call for the model."""
    state.items.append(decision)
    if decision.decision == "reject":
        who = "a standing rule of " + decision.approver if decision.by_rule else decision.approver
        because = f": {decision.reason}" if decision.reason else "."
        state.items.append(
            ToolResult(
                call_id=decision.call_id,
                content=f"Tool call rejected by {who}{because} Do not retry it unchanged.",
                is_error=True,
            )
        )
