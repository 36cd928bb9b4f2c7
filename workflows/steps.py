"""What the loop can decide a run does next (`loop.next_step`): the steps, plain
frozen data the workflow performs, and what each means for the run's status and for
continuing as new. Pure: no Temporal, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from durable_agents.workflows.payloads import ModelRequest
from durable_agents.workflows.run_items import BudgetRequest, Compaction, ToolCall
from durable_agents.workflows.state import RunStatus
from pydantic import JsonValue


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
class AskBudget:
    """The next model call could pass a budget and the agent asks to extend it: record
    the request (`budget.ask`), then wait for its decision."""

    request: BudgetRequest


@dataclass(frozen=True)
class Compact:
    """Record a compaction that needs no model call (`context.record`)."""

    compaction: Compaction


@dataclass(frozen=True)
class Summarize:
    """Have the model summarize the older conversation (`request`), then record the
    compaction with it."""

    compaction: Compaction
    request: ModelRequest


@dataclass(frozen=True)
class ListTools:
    """List the run's MCP tools again before the next model call: a session message
    arrived since they were listed, or someone asked (`workflows.mcp_tools`)."""

    reason: Literal["session_message", "requested"]


@dataclass(frozen=True)
class Redefine:
    """Ask a worker for the agent's definition before going on, and take it if it
    changed (the agent declares when: `workflows.definitions`)."""

    reason: Literal["session_message", "continue_as_new"]


@dataclass(frozen=True)
class AwaitResume:
    """An operator paused the run: wait until it is resumed (or ended)."""


@dataclass(frozen=True)
class AwaitInput:
    """A session waits for the user's next message."""


@dataclass(frozen=True)
class AwaitChildren:
    """A single run has answered while agents it started in the background still run:
    wait for their ends (each comes as a message the model answers), then finish."""


@dataclass(frozen=True)
class Finish:
    """The run is over, with this status."""

    status: RunStatus


@dataclass(frozen=True)
class CheckGuardrails:
    """Run the agent's guardrails of `kind` on `value` (`workflows.guardrails`)."""

    kind: Literal["input", "output"]
    value: JsonValue
    item: int | None = None
    """Index in `items` of what is checked."""


Step = (
    CallModel
    | RunTools
    | AwaitDecisions
    | AwaitInput
    | AwaitChildren
    | Finish
    | CheckGuardrails
    | AskBudget
    | AwaitResume
    | Compact
    | Summarize
    | ListTools
    | Redefine
)


def status_for(step: Step) -> RunStatus:
    """The status a run has while it performs `step`."""
    if isinstance(step, Finish):
        return step.status
    if isinstance(step, AwaitDecisions):
        return RunStatus.AWAITING_APPROVAL
    if isinstance(step, AwaitInput):
        return RunStatus.AWAITING_INPUT
    if isinstance(step, AwaitResume):
        return RunStatus.PAUSED
    return RunStatus.RUNNING


def may_continue_as_new(step: Step) -> bool:
    """Whether the run may switch to a new workflow run before performing `step`:
    never while a reply's tool calls are to be executed or once it has ended."""
    return isinstance(
        step, CallModel | AwaitDecisions | AwaitInput | AwaitResume | Summarize | AwaitChildren
    )
