"""The agent loop as pure functions of RunState.

No Temporal, no I/O, no clock: the caller passes `now`. `next_step` looks at
the state and says what must happen next (a step: `workflows.steps`, re-exported
here); the `record_*` functions fold the
outcome of a step back into the state (decisions: `workflows.decisions`). The workflow only
performs the steps, so this module can be tested and replayed on its own.
"""

from __future__ import annotations

from datetime import datetime

from durable_agents.workflows import (
    at_most_once,
    budget,
    context,
    context_updates,
    decisions,
    definitions,
    guardrails,
    handoffs,
    input_items,
    instructions,
    interrupts,
    mcp_tools,
    output,
    settings,
    short_ids,
    tree_approvals,
)
from durable_agents.workflows.agent_spec import AgentSpec, ModelPrice
from durable_agents.workflows.audit import PAUSES_KEPT, PauseEvent
from durable_agents.workflows.input_items import InputMessage
from durable_agents.workflows.payloads import (
    AgentInput,
    ModelReply,
    ModelRequest,
    OutputRef,
    RuleScope,
    StatusView,
    ToolOutcome,
    ToolRequest,
    ToolSchema,
)
from durable_agents.workflows.proposed_calls import (
    malformed_problem,
    proposed_call,
    unique_call_ids,
)
from durable_agents.workflows.run_items import (
    AssistantMessage,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from durable_agents.workflows.state import ErrorInfo, Pause, RunOrigin, RunState, RunStatus
from durable_agents.workflows.steps import AskBudget as AskBudget
from durable_agents.workflows.steps import AwaitChildren as AwaitChildren
from durable_agents.workflows.steps import AwaitDecisions as AwaitDecisions
from durable_agents.workflows.steps import AwaitInput as AwaitInput
from durable_agents.workflows.steps import AwaitResume as AwaitResume
from durable_agents.workflows.steps import CallModel as CallModel
from durable_agents.workflows.steps import CheckGuardrails as CheckGuardrails
from durable_agents.workflows.steps import Compact as Compact
from durable_agents.workflows.steps import Finish as Finish
from durable_agents.workflows.steps import ListTools as ListTools
from durable_agents.workflows.steps import Redefine as Redefine
from durable_agents.workflows.steps import RunTools as RunTools
from durable_agents.workflows.steps import Step as Step
from durable_agents.workflows.steps import Summarize as Summarize
from durable_agents.workflows.steps import may_continue_as_new as may_continue_as_new
from durable_agents.workflows.steps import status_for as status_for

# --- starting ----------------------------------------------------------------


def new_state(
    spec: AgentSpec,
    agent_input: AgentInput,
    *,
    run_id: str,
    now: datetime,
) -> RunState:
    """The state of a fresh run: the user's input is the first item. The input's
    `max_turns` can lower the agent's limit, not lift it; its model settings go over the
    agent's (ValueError if they may not: `workflows.settings`), and its `stream`."""
    wanted = agent_input.max_turns or spec.max_turns
    if agent_input.stream is not None:  # this run's choice over the agent's
        spec = spec.model_copy(update={"stream": agent_input.stream})
    return RunState(
        model_settings=(chosen := settings.for_run(spec, agent_input.model_settings)),
        token_budget=budget.for_run(spec, agent_input.token_budget, chosen),
        cost_budget=budget.cost_for_run(spec, agent_input.cost_budget, chosen),
        run_id=run_id,
        agent=spec,
        max_turns=min(wanted, spec.max_turns),
        context=agent_input.context,
        session=agent_input.session,
        depth=agent_input.depth or 0,
        background=agent_input.background,
        items=list(input_items.user_messages(agent_input.input)),
        created_at=now,
        updated_at=now,
    )


def resume(
    snapshot: RunState,
    *,
    run_id: str,
    workflow_run: str,
    now: datetime,
    continue_as_new: bool = False,
) -> RunState:
    """The state of workflow run `workflow_run` of run `run_id`, continuing `snapshot`.

    With `continue_as_new` (see `is_continue_as_new`) the snapshot is what the
    previous workflow run of this same run carried over: the state goes on
    unchanged. Otherwise it is a resume or fork, under another run id or the
    snapshot's own (e.g. on another server, or after the source ended): the new
    run records its origin (keeping the one `workflows.snapshot.fork` set for
    this snapshot), a failed or cancelled run resumes as running, since resuming
    is how it is retried (an `output_invalid` one asks the model once more, with a
    fresh budget of retries), the calls still open keep their idempotency key, those of
    at-most-once tools it started are answered as interrupted (`workflows.at_most_once`),
    and a request to list the MCP tools again is dropped (the new run lists them as it
    starts).
    """
    state = snapshot.model_copy(deep=True)
    if not continue_as_new:
        if not _is_fresh_fork(snapshot):
            state.origin = RunOrigin(run_id=snapshot.run_id, turn=snapshot.turn, mode="resume")
        if state.status in (RunStatus.FAILED, RunStatus.CANCELLED):
            state.status = RunStatus.RUNNING
            state.error = None
        elif state.status is RunStatus.OUTPUT_INVALID:
            output.reopen(state)
        state.context_overflow = None  # a resumed call gets its second attempt again
        state.definition_checked = None  # the resumer takes the definition afresh
        state.first_agent = None  # a snapshot cannot say which agent a run started as
        state.sub_approvals = []  # the snapshot's children are not this run's
        state.tools_refresh = None  # a resumed run's tools are listed as it starts
        state.notices = None  # its events are its own: a waiting call is new here
        state.webhook_deliveries = []  # and its deliveries, with or without `notices`
        at_most_once.interrupt_started(state)  # started there: never started again here
        for call in _unresolved_calls(state, last_reply(state)):
            if call.idempotency_key is None:
                call.idempotency_key = idempotency_key(snapshot, call.call_id)
        state.run_id = run_id
        state.workflow_runs = []
    state.workflow_runs.append(workflow_run)
    state.updated_at = now
    return state


def is_continue_as_new(snapshot: RunState, *, run_id: str, continued_run_id: str | None) -> bool:
    """Whether a workflow run of `run_id` that got `snapshot` as input continues
    this same run as new, rather than resuming a snapshot.

    `continued_run_id` is the Temporal run this workflow run continues (None for
    a run started by a client): a continuation carries the state that run
    handed over, whose last recorded workflow run is that run. A snapshot
    resumed under its own run id (say on another server) is no continuation.
    """
    return (
        continued_run_id is not None
        and snapshot.run_id == run_id
        and snapshot.workflow_runs[-1:] == [continued_run_id]
    )


def _is_fresh_fork(snapshot: RunState) -> bool:
    """Made by `workflows.snapshot.fork` and not run since: its origin is kept."""
    origin = snapshot.origin
    return (
        origin is not None
        and origin.mode == "fork"
        and (origin.run_id, origin.turn) == (snapshot.run_id, snapshot.turn)
    )


# --- deciding what comes next -----------------------------------------------------

_HALTED = {False: RunStatus.INTERRUPTED, True: RunStatus.COMPLETED}
"""How a run stopped by the `interrupt` update ends: `interrupted`, or completed if it
was a session ended since."""


def next_step(state: RunState, *, honour_pause: bool = True) -> Step:
    """What the run must do next, given only its state (`honour_pause=False`: what it
    will do once resumed)."""
    if state.status.is_final:
        return Finish(state.status)
    if state.paused is not None and honour_pause:  # nothing new starts meanwhile
        return AwaitResume()
    if interrupts.halted(state):  # stopped by the `interrupt` update: a message goes on
        ended = state.end_reason is not None and not state.session
        return AwaitInput() if state.session else Finish(_HALTED[ended])
    redefine = definitions.due(state)
    if redefine is not None and not guardrails.output_due(state):
        return Redefine(redefine)
    check = guardrails.due(state)
    if check is not None:
        return CheckGuardrails(*check)
    reply = last_reply(state)
    if reply is not None and not reply.tool_calls and not _spoken_to_since(state, reply):
        if state.session:
            return AwaitInput()
        # its agents in the background still run: their ends come as messages
        return AwaitChildren() if _children_running(state) else Finish(RunStatus.COMPLETED)
    open_calls = _unresolved_calls(state, reply)
    if not open_calls:
        if turns_since_user_message(state) >= state.max_turns:
            return Finish(RunStatus.MAX_TURNS_EXCEEDED)
        listing = mcp_tools.listing_due(state)
        if listing is not None:
            return ListTools(listing)
        request = model_request(state)
        compaction = context.due(state, request)
        if compaction is not None and compaction.strategy == "stub_tool_outputs":
            return Compact(compaction)
        step: CallModel | Summarize = CallModel(request)
        if compaction is not None:  # the notes are a model call: held to the budgets too
            step = Summarize(compaction, context.summary_request(state, compaction, request))
        over = budget.exceeded(state, step.request)
        if over is None:
            return step
        if state.agent.on_budget == "ask" and not budget.refused(state):
            asked = budget.open_request(state)
            if asked is not None:
                return AwaitDecisions((asked.call_id,))
            extension = budget.extension(state, over)
            if extension is not None:  # else no approval within the limits could help
                return AskBudget(extension)
        return Finish(RunStatus.BUDGET_EXCEEDED)
    runnable = runnable_calls(state, open_calls)
    if runnable:
        return RunTools(runnable)
    return AwaitDecisions(tuple(c.call_id for c in open_calls))


def runnable_calls(state: RunState, open_calls: list[ToolCall]) -> tuple[ToolCall, ...]:
    """Of `open_calls`, those that may run now (no decision needed, or approved), each
    with the arguments its decision gives."""
    decided = decisions.decided(state)
    return tuple(
        c.model_copy(update={"arguments": decisions.arguments_for(c, decided.get(c.call_id))})
        for c in open_calls
        if not c.needs_approval or decisions.approves(decided.get(c.call_id), c)
    )


def unanswered_calls(state: RunState) -> list[ToolCall]:
    """The calls of the model's latest reply that have no result yet."""
    return _unresolved_calls(state, last_reply(state))


def awaiting_model(state: RunState) -> bool:
    """True while the next step is a model call (its reply may propose new calls), paused
    or not: a decision for a call not proposed yet is held either way."""
    step = next_step(state, honour_pause=False)
    return isinstance(step, CallModel | Compact | Summarize | ListTools | Redefine)


def priced(usage: Usage, price: ModelPrice) -> Usage:
    """`usage` with what it costs at `price`."""
    return usage.model_copy(update={"cost": price.cost(usage)})


def model_request(state: RunState) -> ModelRequest:
    """The request for the model's next turn."""
    spec = state.agent
    return ModelRequest(
        model=spec.model,
        instructions=instructions.last_known(state),
        instructions_from=instructions.scope(state),
        items=context.view(state),
        tools=[
            ToolSchema(name=t.name, description=t.description, parameters=t.parameters)
            for t in spec.tools
        ],
        turn=state.turn + 1,
        tool_output_limit=spec.tool_output_limit,
        settings=settings.for_turn(state.model_settings, tools_called=_tools_called(state)),
        output=OutputRef(name=spec.output.name, sha256=spec.output.sha256) if spec.output else None,
        api=spec.model_api,
        approval_rules=_rule_scope(state),
    )


def _rule_scope(state: RunState) -> RuleScope | None:
    """What `call_model` needs to ask the tools' code rules about the reply's calls."""
    ruled = [t for t in state.agent.tools if t.needs_approval and t.approval.rule]
    if not ruled:
        return None
    return RuleScope(
        agent=state.agent.name,
        run_id=state.run_id,
        tools=[t.name for t in ruled],
        context=state.context,
        mcp={t.name: t.mcp_server for t in ruled if t.mcp_server is not None},
    )


def tool_request(state: RunState, call: ToolCall) -> ToolRequest:
    """The `run_tool` input for one call of the latest reply; its idempotency key is
    the one the call carries from the run that proposed it (see `resume`), else
    `idempotency_key`."""
    return ToolRequest(
        run_id=state.run_id,
        agent=state.agent.name,
        tool=call.tool,
        call_id=call.call_id,
        arguments=call.arguments,
        idempotency_key=call.idempotency_key or idempotency_key(state, call.call_id),
        context=state.context,
        approval_keys=decisions.signed_approval_keys(state, call.call_id),
        usage=state.usage,
        conversation=handoffs.filtered_from(state, call),
    )


def idempotency_key(state: RunState, call_id: str) -> str:
    """Run id + tool call id: the same on every retry and after continue-as-new (a call
    a resumed snapshot holds keeps its source run's key: `resume` stamps it on the call)."""
    return f"{state.run_id}:{call_id}"


# --- folding outcomes back in ------------------------------------------------------


MAX_CALLS_PER_REPLY = 64
"""The most tool calls of one reply that run (or wait for a decision); the rest are
answered as errors. Temporal holds at most 2,000 activities open per workflow, and a
reply's calls are scheduled in one workflow task."""


def record_model_reply(
    state: RunState,
    reply: ModelReply,
    *,
    now: datetime,
) -> None:
    """Append the model's reply: answer calls that cannot run, decide calls covered
    by an `always` rule, and apply decision signals that were waiting for them.

    A call whose id is empty or already used in the run gets a new one
    (`workflows.proposed_calls.unique_call_ids`); the model sees the new id with the
    call and its result, so the conversation stays consistent. Rules cover only the
    calls `decisions.covers` says. A final reply of an agent with an output type is
    its output only if `call_model` found it valid (`output.settle`). Calls past
    `MAX_CALLS_PER_REPLY` and arguments holding a lone surrogate are answered as errors.
    """
    state.turn += 1
    if state.agent.price is not None:  # priced here, from the recorded tokens
        reply = reply.model_copy(update={"usage": priced(reply.usage, state.agent.price)})
    state.usage = state.usage.plus(reply.usage)
    instructions.record(state, reply)
    calls = [proposed_call(state.agent, c) for c in unique_call_ids(state, reply)]
    short_ids.assign(state, calls)
    state.items.append(
        AssistantMessage(
            turn=state.turn,
            content=reply.content,
            tool_calls=calls,
            at=now,
            usage=reply.usage,
            reasoning=reply.reasoning,
        )
    )
    for index, call in enumerate(calls):
        problem = malformed_problem(state.agent, call)
        if index >= MAX_CALLS_PER_REPLY:
            problem = (
                f"Error: a reply may make at most {MAX_CALLS_PER_REPLY} tool calls; this "
                f"one (call {index + 1} of {len(calls)}) was not run. Make fewer at once."
            )
        if problem is not None:
            state.items.append(ToolResult(call_id=call.call_id, content=problem, is_error=True))
        elif call.needs_approval:
            rule = decisions.standing_rule(state, call, now=now)
            if rule is not None:
                decisions.record(state, decisions.rule_decision(rule, call, now=now))
    decisions.release_held(state, now=now)
    if not calls:
        if state.agent.output is not None:
            output.settle(state, reply.output_check, now=now)
        else:
            state.final_output = reply.content or ""
    state.updated_at = now


def record_tool_outcomes(state: RunState, outcomes: list[ToolOutcome], *, now: datetime) -> None:
    """Append the results of executed tool calls, in the order given, taking each one's
    change to the context (`workflows.context_updates`); then switch to the agent of a
    handoff taken (`workflows.handoffs`)."""
    for outcome in outcomes:
        result = ToolResult(
            call_id=outcome.call_id,
            content=outcome.content,
            is_error=outcome.is_error,
            attachments=outcome.attachments,
            interrupted=outcome.interrupted,
        )
        state.items.append(context_updates.apply(state, result, outcome.context_update))
    reply = last_reply(state)
    for outcome in outcomes:
        if outcome.handoff_to is not None and reply is not None:
            call = next(c for c in reply.tool_calls if c.call_id == outcome.call_id)
            handoffs.take(state, call, outcome.handoff_to, now=now, left_out=outcome.left_out)
    state.updated_at = now


def receive_message(state: RunState, content: str | list[InputMessage], *, now: datetime) -> None:
    """Queue the user's next message (the messages of an input list); it is delivered
    by `deliver_messages`."""
    if isinstance(content, str):
        state.queued_messages.append(content)
    else:
        state.queued_messages.extend(input_items.user_messages(content))
    state.updated_at = now


def deliver_messages(state: RunState, *, now: datetime) -> None:
    """Move queued messages into the conversation once no tool call awaits its
    result (a user message may not come between a call and its result) and the
    final output has been through its output guardrails."""
    if not state.queued_messages or _unresolved_calls(state, last_reply(state)):
        return
    if guardrails.output_due(state):  # the answer is checked before the next message
        return
    state.items.extend(
        UserMessage(content=c) if isinstance(c, str) else c for c in state.queued_messages
    )
    state.queued_messages = []
    state.updated_at = now


def pause_problem(state: RunState, *, pausing: bool) -> str | None:
    """Why the run cannot be paused (`pausing`) or resumed now, or None."""
    if state.status.is_final:
        return f"run {state.run_id} has ended ({state.status.value})"
    if pausing and state.paused is not None:
        who = f" by {state.paused.by}" if state.paused.by else ""
        return f"run {state.run_id} is paused already{who}"
    if not pausing and state.paused is None:
        return f"run {state.run_id} is not paused"
    return None


def pause(state: RunState, *, by: str | None, reason: str | None, now: datetime) -> str | None:
    """Pause the run: no new model, tool or guardrail call starts until `unpause`.
    Returns why it cannot (`pause_problem`), else None."""
    problem = pause_problem(state, pausing=True)
    if problem is None:
        state.paused = Pause(by=by, reason=reason, at=now)
        _log_pause(state, PauseEvent(action="pause", by=by, reason=reason, at=now))
    return problem


def unpause(state: RunState, *, by: str | None = None, now: datetime) -> str | None:
    """Let a paused run go on. Returns why it cannot (`pause_problem`), else None."""
    problem = pause_problem(state, pausing=False)
    if problem is None:
        state.paused = None
        _log_pause(state, PauseEvent(action="resume", by=by, at=now))
    return problem


def _log_pause(state: RunState, event: PauseEvent) -> None:
    state.pause_log = [*state.pause_log, event][-PAUSES_KEPT:]
    state.updated_at = event.at


def end_session(state: RunState, *, reason: str, now: datetime) -> None:
    """Stop waiting for messages: the run completes after its current exchange."""
    state.session = False
    state.end_reason = reason
    state.updated_at = now


def finish(state: RunState, status: RunStatus, *, now: datetime) -> None:
    """Mark the run as ended (with why, for a budget it would have passed)."""
    if status is RunStatus.BUDGET_EXCEEDED and state.error is None:
        state.error = budget.exceeded(state, model_request(state))
    state.status = status
    state.updated_at = now


def model_failed(state: RunState, error: ErrorInfo, *, now: datetime) -> bool:
    """A model call failed for good: True if the run compacts and calls once more (the
    provider found it longer than its window: `context.overflowed`), else it fails."""
    if context.overflowed(state, error, model_request(state)):
        state.updated_at = now
        return True
    fail(state, error, now=now)
    return False


def fail(state: RunState, error: ErrorInfo, *, now: datetime) -> None:
    """Mark the run as failed, keeping why."""
    state.error = error
    finish(state, RunStatus.FAILED, now=now)


# --- reading -----------------------------------------------------------------------


def status_view(state: RunState) -> StatusView:
    """The short status of a run."""
    paused = state.paused is not None and not state.status.is_final
    waiting = state.status in (RunStatus.AWAITING_APPROVAL, RunStatus.AWAITING_INPUT)
    return StatusView(
        status=RunStatus.PAUSED if paused and waiting else tree_approvals.shown_status(state),
        agent=handoffs.first_agent(state),
        turn=state.turn,
        pending_approvals=tree_approvals.pending_count(state),
        usage=state.usage,
        currency=state.agent.price.currency if state.agent.price is not None else None,
        paused=paused,
        current_agent=state.agent.name,
        context_tokens=(
            context.estimate(state, model_request(state))
            if state.agent.context_policy is not None
            else None
        ),
        compactions=len(context.compactions(state)),
        webhooks=[
            d for d in state.webhook_deliveries if d.status in ("failing", "refused", "gave_up")
        ],
        definition=definitions.digest(state.agent),
    )


def turns_since_user_message(state: RunState) -> int:
    """Model calls since the latest user message (what `max_turns` limits)."""
    count = 0
    for item in reversed(state.items):
        if isinstance(item, UserMessage) and not item.feedback:
            break
        count += isinstance(item, AssistantMessage)
    return count


def _spoken_to_since(state: RunState, reply: AssistantMessage) -> bool:
    """A message (the user's, or feedback) came after `reply`: the model must answer."""
    for item in reversed(state.items):
        if item is reply:
            return False
        if isinstance(item, UserMessage):
            return True
    return False


def _tools_called(state: RunState) -> bool:
    """The model has called a tool since the user's latest message."""
    for item in reversed(state.items):
        if isinstance(item, UserMessage) and not item.feedback:
            return False
        if isinstance(item, AssistantMessage) and item.tool_calls:
            return True
    return False


def last_reply(state: RunState) -> AssistantMessage | None:
    """The model's latest reply, if any."""
    return next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)


# --- helpers -------------------------------------------------------------------------


def _unresolved_calls(state: RunState, reply: AssistantMessage | None) -> list[ToolCall]:
    if reply is None:
        return []
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    return [c for c in reply.tool_calls if c.call_id not in answered]


def _children_running(state: RunState) -> bool:
    """Agents the run started in the background still run (`workflows.background`)."""
    return any(b.running for b in state.background_runs)
