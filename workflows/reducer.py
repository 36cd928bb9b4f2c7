"""The loop as a reducer: every event of a run is folded into its RunState (`fold`), and
the state alone says the next step (`advance`).

Events are what performing a step gave (a model reply, tool outcomes, guardrail
verdicts, a listing, a definition), how a wait ended (a deadline, an idle session)
and what came from outside (a decision, a message, a pause, an interrupt, a cancel).
`workflows.driver` performs the steps and folds what they gave; AgentWorkflow's
handlers fold what they take. Pure: no Temporal, no I/O; time is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from durable_agents.workflows import (
    budget,
    context,
    decisions,
    definitions,
    guardrails,
    interrupts,
    loop,
    mcp_tools,
)
from durable_agents.workflows.agent_spec import AgentSpec
from durable_agents.workflows.check_payloads import GuardrailVerdict
from durable_agents.workflows.input_items import InputMessage
from durable_agents.workflows.payloads import DecideInput, ModelReply, ToolOutcome
from durable_agents.workflows.run_items import BudgetRequest, Compaction
from durable_agents.workflows.state import ErrorInfo, RunState, RunStatus, ToolsRefresh


@dataclass(frozen=True)
class Replied:
    """The model replied (`loop.record_model_reply`)."""

    reply: ModelReply


@dataclass(frozen=True)
class ModelFailed:
    """The model call failed for good: the run compacts and calls again if the provider
    found the request longer than its window, else it fails (`loop.model_failed`)."""

    error: ErrorInfo


@dataclass(frozen=True)
class ModelCut:
    """An interrupt stopped the model call: the interruption applied next says so."""


@dataclass(frozen=True)
class Compacted:
    """The older conversation was compacted; `summary`: the model's notes of it."""

    compaction: Compaction
    summary: ModelReply | None = None


@dataclass(frozen=True)
class ToolsRan:
    """The calls of a `RunTools` step gave these outcomes, in their order."""

    outcomes: tuple[ToolOutcome, ...]


@dataclass(frozen=True)
class GuardrailsChecked:
    """The agent's guardrails of `kind` gave these verdicts on the item at `item`."""

    kind: guardrails.Kind
    verdicts: tuple[GuardrailVerdict, ...]
    item: int | None = None


@dataclass(frozen=True)
class ToolsListed:
    """The MCP tools listed again (a str: why they could not be); `asked`: the request
    to list them that was open when the listing started."""

    listed: AgentSpec | str
    reason: Literal["session_message", "requested"]
    asked: ToolsRefresh | None


@dataclass(frozen=True)
class Redefined:
    """The agent's definition as a worker serves it now (a str: why none could be had),
    asked by workflow run `workflow_run`."""

    found: AgentSpec | str
    reason: definitions.Reason
    workflow_run: str


@dataclass(frozen=True)
class BudgetAsked:
    """The agent asks to extend a budget: the request waits for its decision."""

    request: BudgetRequest


@dataclass(frozen=True)
class DeadlinePassed:
    """The earliest approval deadline passed: each overdue call gets its policy's
    outcome, and a policy that says `fail` fails the run."""


@dataclass(frozen=True)
class SessionIdle:
    """The session waited `idle` for a message: it ends after its current exchange."""

    idle: timedelta | None


@dataclass(frozen=True)
class Decided:
    """A decision (`decide` update or decision signal) for a pending call; one the run
    cannot take raises `DecisionRefused` and changes nothing."""

    request: DecideInput
    via: Literal["signal", "update"]


@dataclass(frozen=True)
class MessageArrived:
    """The user's next message (or messages of an input list), queued until it may
    join the conversation."""

    content: str | list[InputMessage]


@dataclass(frozen=True)
class PauseAsked:
    """An operator paused the run (one that cannot be paused is left as it is)."""

    by: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class ResumeAsked:
    """An operator let the paused run go on (one not paused is left as it is)."""

    by: str | None = None


@dataclass(frozen=True)
class InterruptAsked:
    """Someone asked the run to stop its current turn (`workflows.interrupts`)."""

    via: Literal["message", "update"]
    by: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Failed:
    """The run fails with `error` (a tool or child that failed it, say)."""

    error: ErrorInfo


@dataclass(frozen=True)
class Cancelled:
    """The run was cancelled."""


Event = (
    Replied
    | ModelFailed
    | ModelCut
    | Compacted
    | ToolsRan
    | GuardrailsChecked
    | ToolsListed
    | Redefined
    | BudgetAsked
    | DeadlinePassed
    | SessionIdle
    | Decided
    | MessageArrived
    | PauseAsked
    | ResumeAsked
    | InterruptAsked
    | Failed
    | Cancelled
)


def fold(state: RunState, event: Event, *, now: datetime) -> None:
    """Apply `event` to `state`, at `now`."""
    match event:
        case Replied(reply):
            loop.record_model_reply(state, reply, now=now)
        case ModelFailed(error):
            loop.model_failed(state, error, now=now)
        case ModelCut():
            if state.interrupt is not None:
                state.interrupt.model_call = True
        case Compacted(compaction, summary):
            context.record(state, compaction, now=now, summary=summary)
        case ToolsRan(outcomes):
            loop.record_tool_outcomes(state, list(outcomes), now=now)
        case GuardrailsChecked(kind, verdicts, item):
            guardrails.record(state, kind, list(verdicts), now=now, item=item)
        case ToolsListed(listed, reason, asked):
            mcp_tools.record_listing(state, listed, reason, asked=asked, now=now)
        case Redefined(found, reason, workflow_run):
            definitions.take(state, found, reason, workflow_run=workflow_run, now=now)
        case BudgetAsked(request):
            budget.ask(state, request, now=now)
        case DeadlinePassed():
            failure = decisions.expire(state, now=now)
            if failure is not None:
                loop.fail(state, failure, now=now)
        case SessionIdle(idle):
            loop.end_session(state, reason=f"idle for {idle}", now=now)
        case Decided(request, via):
            decisions.apply(state, request, via=via, now=now)
        case MessageArrived(content):
            loop.receive_message(state, content, now=now)
        case PauseAsked(by, reason):
            loop.pause(state, by=by, reason=reason, now=now)
        case ResumeAsked(by):
            loop.unpause(state, by=by, now=now)
        case InterruptAsked(via, by, reason):
            interrupts.ask(state, via=via, by=by, reason=reason, now=now)
        case Failed(error):
            loop.fail(state, error, now=now)
        case Cancelled():
            loop.finish(state, RunStatus.CANCELLED, now=now)


def advance(state: RunState, *, now: datetime) -> loop.Step:
    """The run's next step, with what it implies folded in first: queued messages join
    the conversation once they may, and the status says the step. (An interrupt asked
    is applied before, by `interrupts.settle`: what it answers is said on its own.)"""
    loop.deliver_messages(state, now=now)
    step = loop.next_step(state)
    state.status = loop.status_for(step)
    return step
