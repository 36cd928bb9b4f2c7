"""The agent definition a run uses, and a changed one reaching a run in flight. Pure.

A run keeps the definition of its agent it started with (instructions, model, tools
and their approval rules, settings, limits: `RunState.agent`), so a deploy that
changes an agent does not change what a run in flight was approved to do. An agent
may declare otherwise (`Agent(definition_updates=...)`, kept in the spec):

- `"never"` (the default): the run keeps it to the end;
- `"next_message"`: a session message has the run ask a worker for the agent's
  definition before the message's guardrails and the model see it;
- `"continue_as_new"`: each new workflow run of the chain asks at its first step.

It asks only at a point where no call waits (for a decision or for its result) and no
budget request is open, else at the first such point after. What a definition update
brings is the definition: instructions, model, tools and their rules, settings. The
run keeps what is not the definition's to change: its limits only go down (`max_turns`
and budgets: the lower of its own and the new definition's, since its own may be a
start input's, a caller's share or a person's extension), its model settings that
differ from the old definition's, the worker's keys and price it started with (spend
stays in one currency), its `stream` choice. No approval goes away with the MCP tools
(`mcp_tools.guarded`: a new one asks for one unless its server's configuration says
not), and an `always` rule on a tool that changed or went away no longer decides its
calls (`revoked_rules`). A definition that does not fit the run (its `tool_choice`
names a tool it no longer has, a budget with no bound on a reply) is not taken, and the
run says why in `redefinitions`, as it does when no worker serves the agent any more.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Literal, TypeVar

from durable_agents.workflows import budget, decisions, mcp_tools, settings
from durable_agents.workflows.agent_spec import AgentSpec, ModelSettings
from durable_agents.workflows.audit import REDEFINITIONS_KEPT, Redefinition
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.run_items import AssistantMessage, ToolResult
from durable_agents.workflows.state import DefinitionCheck, RunState

Reason = Literal["session_message", "continue_as_new"]
N = TypeVar("N", int, float)

FREE = {
    "approver_keys",
    "snapshot_keys",
    "refuse_unverified_snapshots",
    "price",
    "stream",
    "gate_key",
}
"""Spec fields that are the worker's configuration (keys, prices) or the run's choice
(`stream`), not the agent's definition."""


def digest(spec: AgentSpec) -> str:
    """A short digest of the agent definition `spec` holds (instructions, model, tools
    and their policies, settings, limits; not the worker's keys and prices): the same
    for the same definition on any worker."""
    data = spec.model_dump(mode="json", exclude=FREE)
    return hashlib.sha256(canonical_json(data)).hexdigest()[:12]


def start(state: RunState, *, workflow_run: str) -> None:
    """A run starting (or resumed): from here on, a changed definition reaches it as its
    agent declares (nothing to note for `"never"`)."""
    if state.agent.definition_updates == "never":
        state.definition_checked = None
        return
    state.definition_checked = DefinitionCheck(
        messages=mcp_tools.user_messages(state), workflow_run=workflow_run
    )


def due(state: RunState) -> Reason | None:
    """Why the run asks for its agent's definition before its next step; None: it does
    not (its agent says never, nothing new happened, or a call or request is open)."""
    checked = state.definition_checked
    if checked is None or _open(state):
        return None
    mode = state.agent.definition_updates
    if mode == "next_message" and mcp_tools.user_messages(state) > checked.messages:
        return "session_message"
    runs = state.workflow_runs
    if mode == "continue_as_new" and runs and runs[-1] != checked.workflow_run:
        return "continue_as_new"
    return None


def _open(state: RunState) -> bool:
    """A call of the model's latest reply has no result yet, or a budget request waits."""
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    reply = next((i for i in reversed(state.items) if isinstance(i, AssistantMessage)), None)
    calls = reply.tool_calls if reply is not None else []
    return any(c.call_id not in answered for c in calls) or budget.open_request(state) is not None


def take(
    state: RunState,
    found: AgentSpec | str,
    reason: Reason,
    *,
    workflow_run: str,
    now: datetime,
) -> None:
    """Take `found`, the agent's definition as a worker serves it now (a str: why none
    could be had), as this module says; record it if it changed or could not be had."""
    old = state.agent
    state.definition_checked = DefinitionCheck(
        messages=mcp_tools.user_messages(state), workflow_run=workflow_run
    )
    entry = Redefinition(at=now, turn=state.turn, reason=reason, before=digest(old))
    if isinstance(found, str):
        entry.error = found[:2_000]
        _record(state, entry, now)
        return
    if found.name != old.name:
        entry.error = f"the worker described agent {found.name!r}, not {old.name!r}"
        _record(state, entry, now)
        return
    # The definition, not the worker's configuration: keys and price stay the run's
    # (spend is counted in its currency), as does its `stream` choice.
    spec = mcp_tools.guarded(found, old).model_copy(update={k: getattr(old, k) for k in FREE})
    if state.depth and old.on_budget == "stop":  # a child's budget is its caller's share
        spec = spec.model_copy(update={"on_budget": "stop"})
    if spec == old:
        return  # nothing changed: nothing to record
    # Limits only go down in flight: the run's may be its start input's, its caller's
    # share or a person's extension, which the new definition cannot know.
    budgets = {
        "token_budget": _lower(state.token_budget, spec.token_budget),
        "cost_budget": _lower(state.cost_budget, spec.cost_budget),
    }
    try:
        chosen = settings.for_run(spec, _own_settings(state.model_settings, old.model_settings))
        token_budget = budget.for_run(spec.model_copy(update=budgets), None, chosen)
        cost_budget = budget.cost_for_run(spec.model_copy(update=budgets), None, chosen)
    except ValueError as err:
        entry.error = f"the new definition does not fit this run: {err}"[:2_000]
        _record(state, entry, now)
        return
    state.max_turns = min(state.max_turns, spec.max_turns)
    state.model_settings = chosen
    state.token_budget = token_budget
    state.cost_budget = cost_budget
    before, after = {t.name: t for t in old.tools}, {t.name: t for t in spec.tools}
    gone = {n for n, t in before.items() if after.get(n) != t}
    state.revoked_rules = sorted({*state.revoked_rules, *decisions.always_rules_on(state, gone)})
    if spec.mcp_servers:  # just listed with the definition
        state.tools_listed_messages = mcp_tools.user_messages(state)
    state.agent = spec
    entry.after = digest(spec)
    was = old.model_dump(mode="json", exclude=FREE)
    now_is = spec.model_dump(mode="json", exclude=FREE)
    entry.changed = sorted(k for k in was.keys() | now_is.keys() if was.get(k) != now_is.get(k))
    _record(state, entry, now)


def _lower(run: N | None, agent: N | None) -> N | None:
    """The lower of two limits, None meaning none."""
    given = [b for b in (run, agent) if b is not None]
    return min(given) if given else None


def _own_settings(run: ModelSettings, agent: ModelSettings) -> ModelSettings:
    """The settings a run chose over its agent's: those that differ (never the agent-only
    ones, which a run cannot set)."""
    mine = settings.without_agent_only(run)
    theirs = settings.without_agent_only(agent)
    return ModelSettings(**{k: v for k, v in mine if v is not None and v != getattr(theirs, k)})


def _record(state: RunState, entry: Redefinition, now: datetime) -> None:
    state.redefinitions = [*state.redefinitions, entry][-REDEFINITIONS_KEPT:]
    state.updated_at = now
