"""A resumed snapshot is input, not trust: what it may and may not decide. Pure.

Anyone who may start a workflow can hand `AgentWorkflow` a snapshot as
`resume_from`, edited at will: tools marked as needing no approval, decisions
nobody made, `always` rules nobody set. So a run resumed from a snapshot (not its
own continue-as-new, which Temporal vouches for) takes every security-relevant
part from the worker's registry and from nothing else:

- the agent spec (tools, `needs_approval`, policies, approvers, limits, approver
  keys) is the worker's, as `describe_agent` gives it; `max_turns` can only go down;
  model settings keep the run's sampling choices, over the worker's agent, but
  never its `extra_headers` or `extra_body` (`workflows.settings`); the token budget
  can only go down;
- each call still open is judged again by that spec: a tool the agent no longer
  has, or arguments outside its limits, are answered to the model; whether it
  needs a decision is recomputed (a code rule's verdict it carries counts only in a
  signed snapshot: otherwise the call waits for a person);
- decisions the snapshot carries for open calls, and held decisions, are dropped
  and recorded in `refused_decisions` with `via: "snapshot"`; `always` rules it
  carries are revoked (`revoked_rules`), so nothing it says can authorise a call;
- the children it names for the resumed run (`child_runs`, `renamed_children`) are
  dropped: the run records the children it starts, which clients find there.

Decisions on calls already answered stay: they are the audit of what happened.
A snapshot signed with a snapshot key the worker holds (`workflows.snapshot_signature`)
keeps its decisions, held decisions and rules where the worker's spec still asks
for a decision; `origin.verified_by` names the key.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from durable_agents.workflows import budget, decisions, guardrails, loop, settings
from durable_agents.workflows.agent_spec import AgentSpec
from durable_agents.workflows.audit import DecisionAttempt
from durable_agents.workflows.payloads import ModelToolCall
from durable_agents.workflows.proposed_calls import malformed_problem, proposed_call
from durable_agents.workflows.run_items import Decision, ToolCall, ToolResult
from durable_agents.workflows.state import RunState

UNVERIFIED = "carried in a resumed snapshot, which cannot vouch for it: decide again"
NOT_ASKED = "carried in a resumed snapshot for a call the agent's policy no longer asks about"


def reground(
    state: RunState,
    spec: AgentSpec,
    *,
    now: datetime,
    verified_by: str | None = None,
) -> RunState:
    """`state` (a resumed snapshot) on the worker's `spec`; see the module docstring.
    With `verified_by` (the snapshot verified under that snapshot key of the worker),
    its decisions, held decisions and rules are kept where the spec still asks for
    them. Returns a new, validated state (ValueError if the result is not consistent)."""
    result = state.model_copy(deep=True)
    result.agent = spec
    # Its children are the ones it starts: a snapshot's word on them counts for nothing
    result.child_runs = [c for c in result.child_runs if c.caller != result.run_id]
    result.renamed_children = [r for r in result.renamed_children if r.caller != result.run_id]
    result.max_turns = min(state.max_turns, spec.max_turns)
    result.model_settings = settings.for_run(
        spec, settings.without_agent_only(state.model_settings)
    )
    result.token_budget = budget.for_run(spec, state.token_budget, result.model_settings)
    result.cost_budget = budget.cost_for_run(spec, state.cost_budget, result.model_settings)
    # A request still open was made against the snapshot's budgets, not these: the
    # run asks again if it must (with this worker's policy and its own numbers).
    open_budget = budget.open_request(result)
    result.items = [i for i in result.items if i is not open_budget]
    if result.origin is not None:
        result.origin.verified_by = verified_by
    reply = loop.last_reply(result)
    answered = {i.call_id for i in result.items if isinstance(i, ToolResult)}
    open_calls = [c for c in reply.tool_calls if c.call_id not in answered] if reply else []
    made = reply.tool_calls if reply else []
    position = {id(c): n for n, c in enumerate(made)}
    for call in open_calls:
        carried = call.rule_verdict if verified_by is not None else None  # else unvouched
        judged = proposed_call(
            spec,
            ModelToolCall(
                call_id=call.call_id,
                tool=call.tool,
                arguments=call.arguments,
                rule_verdict=carried,
            ),
        )
        call.needs_approval = judged.needs_approval
        call.rule_verdict = judged.rule_verdict
        if _problem(spec, call, position[id(call)], len(made)) is not None:
            call.needs_approval = False
    counted = Counter(c.call_id for c in (reply.tool_calls if reply else []))
    repeated = {i for i, n in counted.items() if n > 1}  # (ids.count was 10,000² steps)
    asked = {c.call_id for c in open_calls if c.needs_approval and c.call_id not in repeated}
    open_ids = {c.call_id for c in open_calls}
    dropped = [
        i
        for i in result.items
        if isinstance(i, Decision)
        and i.call_id in open_ids
        and (verified_by is None or i.call_id not in asked)
    ]
    gone = {id(d) for d in dropped}
    result.items = [i for i in result.items if id(i) not in gone]
    why = UNVERIFIED if verified_by is None else NOT_ASKED
    for decision in dropped:
        if decision.via in ("signal", "update", "rule", "evaluator"):
            result.refused_decisions.append(
                DecisionAttempt.taken_back(decision, via="snapshot", at=now, why=why)
            )
    if verified_by is None:
        # What the model has not answered is checked again: a snapshot's word that
        # it passed its guardrails counts for nothing.
        dropped_checks = set(guardrails.unanswered_checks(result))
        result.items = [i for n, i in enumerate(result.items) if n not in dropped_checks]
        for held in result.held_decisions:
            update = {"via": "snapshot", "refused_because": UNVERIFIED, "at": now}
            result.refused_decisions.append(held.model_copy(update=update))
        result.held_decisions = []
        result.revoked_rules = sorted(
            {d.call_id for d in decisions.decided(result).values() if d.always}
            | set(result.revoked_rules)
        )
    answered_now: set[str] = set()
    for call in open_calls:
        problem = _problem(spec, call, position[id(call)], len(made))
        if call.call_id in repeated:
            problem = f"Error: the call id {call.call_id!r} names more than one call."
        if problem is not None and call.call_id not in answered_now:
            answered_now.add(call.call_id)
            result.items.append(ToolResult(call_id=call.call_id, content=problem, is_error=True))
    result.updated_at = now
    return RunState.model_validate(result.model_dump())


def _problem(spec: AgentSpec, call: ToolCall, index: int, made: int) -> str | None:
    """Why open call `index` (of `made` in its reply) of a resumed snapshot cannot run,
    as when it was proposed."""
    problem = malformed_problem(spec, call)
    if problem is None and index >= loop.MAX_CALLS_PER_REPLY:
        problem = (
            f"Error: a reply may make at most {loop.MAX_CALLS_PER_REPLY} tool calls; this "
            f"one (call {index + 1} of {made}) was not run. Make fewer at once."
        )
    return problem
