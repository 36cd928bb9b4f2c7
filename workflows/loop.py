"""The agent loop as pure functions of RunState.

No Temporal, no I/O, no clock: the caller passes `now`. `next_step` looks at
the state and says what must happen next; the `record_*` functions fold the
outcome of a step back into the state (decisions: `workflows.decisions`). The workflow only
performs the steps, so this module can be tested and replayed on its own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from workflows import decisions
from workflows.approval_policy import requires_decision
from workflows.payloads import (
    AgentInput,
    ModelReply,
    ModelRequest,
    ModelToolCall,
    StatusView,
    ToolOutcome,
    ToolSchema,
)
from workflows.state import (
    AgentSpec,
    AssistantMessage,
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
    if reply is not None and not reply.tool_calls and not isinstance(state.items[-1], UserMessage):
        return Finish(RunStatus.COMPLETED)
    open_calls = _unresolved_calls(state, reply)
    if not open_calls:
        if state.turn >= state.max_turns:
            return Finish(RunStatus.MAX_TURNS_EXCEEDED)
        return CallModel(model_request(state))
    decided = decisions.decided(state)
    runnable = tuple(
        c.model_copy(update={"arguments": decisions.arguments_for(c, decided.get(c.call_id))})
        for c in open_calls
        if not c.needs_approval or c.call_id in decided
    )
    if runnable:
        return RunTools(runnable)
    return AwaitDecisions(tuple(c.call_id for c in open_calls))


def awaiting_model(state: RunState) -> bool:
    """True while the next step is a model call (its reply may propose new calls)."""
    return isinstance(next_step(state), CallModel)


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
    """Append the model's reply: answer calls that cannot run, decide calls covered
    by an `always` rule, and apply decision signals that were waiting for them."""
    state.turn += 1
    state.usage = state.usage.plus(reply.usage)
    calls = [_proposed_call(state.agent, c) for c in reply.tool_calls]
    state.items.append(
        AssistantMessage(turn=state.turn, content=reply.content, tool_calls=calls, at=now)
    )
    for call in calls:
        problem = malformed_call_problem(state.agent, call)
        if problem is not None:
            state.items.append(ToolResult(call_id=call.call_id, content=problem, is_error=True))
        elif call.needs_approval:
            rule = decisions.standing_rule(state, call.tool)
            if rule is not None:
                decisions.record(state, decisions.rule_decision(rule, call.call_id, now=now))
    decisions.release_held(state, now=now)
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


def finish(state: RunState, status: RunStatus, *, now: datetime) -> None:
    """Mark the run as ended."""
    state.status = status
    state.updated_at = now


def fail(state: RunState, error: ErrorInfo, *, now: datetime) -> None:
    """Mark the run as failed, keeping why."""
    state.error = error
    finish(state, RunStatus.FAILED, now=now)


# --- reading -----------------------------------------------------------------------


def status_view(state: RunState) -> StatusView:
    """The short status of a run."""
    return StatusView(
        status=state.status,
        agent=state.agent.name,
        turn=state.turn,
        pending_approvals=len(decisions.pending_calls(state)),
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


def _proposed_call(spec: AgentSpec, call: ModelToolCall) -> ToolCall:
    """The model's call, with whether the tool's approval policy asks for a decision."""
    tool = spec.tool(call.tool)
    needs = False
    if tool is not None and tool.needs_approval:
        try:
            arguments = json.loads(call.arguments or "{}")
        except json.JSONDecodeError:
            arguments = None
        needs = not isinstance(arguments, dict) or requires_decision(tool.approval, arguments)
    return ToolCall(
        call_id=call.call_id, tool=call.tool, arguments=call.arguments, needs_approval=needs
    )


def _unresolved_calls(state: RunState, reply: AssistantMessage | None) -> list[ToolCall]:
    if reply is None:
        return []
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    return [c for c in reply.tool_calls if c.call_id not in answered]
