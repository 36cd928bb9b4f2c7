"""Guardrails in the pure loop: when they run, and what their verdicts do. Pure.

Input guardrails check each message of the user the model has not answered yet
(the first, each new one of a session, every one of several delivered together)
before the model sees it; output guardrails check the final output before the run
ends, waits, or takes the next message. Their verdicts are `GuardrailCheck` items
naming what they checked (`item`), so the loop knows what has been checked, also
after a continue-as-new or a resume (a resumed snapshot that cannot be verified
keeps no check of what the model has not answered: `workflows.resume_trust`). A
tripwire ends the run `guardrail_tripped` with the guardrail's name and reason; an
output that tripped one is withheld (`final_output` cleared). A guardrail with
`on_trip="refuse"` answers with its refusal instead (an assistant message marked
`refused_by`, the final output): a session then waits for the next message. A
guardrail that fails after its retries counts as tripped: a check that cannot run
must not let anything through. What a guardrail's own model calls used is counted
in the run's usage (and so held to its budgets).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from durable_agents.workflows import handoffs
from durable_agents.workflows.agent_spec import DEFAULT_REFUSAL, GuardrailSpec
from durable_agents.workflows.check_payloads import GuardrailRequest, GuardrailVerdict
from durable_agents.workflows.contract import ERROR_GUARDRAIL_TRIPPED
from durable_agents.workflows.run_items import AssistantMessage, GuardrailCheck, UserMessage
from durable_agents.workflows.state import ErrorInfo, RunState, RunStatus
from pydantic import JsonValue

Kind = Literal["input", "output"]


def due(state: RunState) -> tuple[Kind, JsonValue, int] | None:
    """The guardrails to run next, the value they check and its index in `items`;
    None if none are due."""
    agent = state.agent
    reply = _latest_reply(state)
    if agent.input_guardrails:
        asked = _asked_before_handoff(state)
        if asked is not None:
            return "input", asked[1], asked[0]
        for index in range(reply + 1 if reply is not None else 0, len(state.items)):
            item = state.items[index]
            if isinstance(item, UserMessage) and not item.feedback:
                if not _checked(state, index, "input"):
                    return "input", item.content, index
    if output_due(state):
        assert reply is not None
        return "output", _output_value(state), reply
    return None


def _asked_before_handoff(state: RunState) -> tuple[int, str] | None:
    """After a handoff, the user's latest message before it, if the agent answering now
    has not checked it: the request the new agent acts on (its input guardrails did not
    see it, the agent that had it may have had none)."""
    since = handoffs.latest(state)
    if since is None:
        return None
    for index in range(since - 1, -1, -1):
        item = state.items[index]
        if isinstance(item, UserMessage) and not item.feedback:
            checked = any(
                isinstance(check, GuardrailCheck) and check.kind == "input" and check.item == index
                for check in state.items[since + 1 :]
            )
            return None if checked else (index, item.content)
    return None


def output_due(state: RunState) -> bool:
    """The final output waits for its output guardrails (no message may be delivered
    before they have run: `workflows.loop.deliver_messages`)."""
    if not state.agent.output_guardrails or state.final_output is None:
        return False
    reply = _latest_reply(state)
    if reply is None:
        return False
    answer = state.items[reply]
    later = state.items[reply + 1 :]
    if isinstance(answer, AssistantMessage) and answer.refused_by is not None:
        return False  # a guardrail's own answer
    final = isinstance(answer, AssistantMessage) and not answer.tool_calls
    asked_again = any(isinstance(i, UserMessage) for i in later)
    return final and not asked_again and not _checked(state, reply, "output")


def record(
    state: RunState,
    kind: Kind,
    verdicts: list[GuardrailVerdict],
    *,
    now: datetime,
    item: int | None = None,
) -> None:
    """Record the verdicts on the item at `item` and count their usage; the first
    tripwire ends the run or, for a guardrail that refuses, answers in the model's
    place."""
    for verdict in verdicts:
        if verdict.usage is not None:
            state.usage = state.usage.plus(verdict.usage)
        state.items.append(
            GuardrailCheck(
                kind=kind,
                name=verdict.name,
                tripped=verdict.tripped,
                reason=verdict.reason,
                item=item,
                at=now,
                usage=verdict.usage,
            )
        )
    tripped = next((v for v in verdicts if v.tripped), None)
    spec = _spec(state, kind, tripped.name) if tripped is not None else None
    if spec is not None and spec.on_trip == "refuse":
        _refuse(state, spec, now=now)
    elif tripped is not None:
        why = f": {tripped.reason}" if tripped.reason else ""
        state.error = ErrorInfo(
            type=ERROR_GUARDRAIL_TRIPPED,
            message=f"{kind} guardrail {tripped.name} tripped{why}",
            details={"guardrail": tripped.name, "kind": kind},
        )
        state.status = RunStatus.GUARDRAIL_TRIPPED
        if kind == "output":
            state.final_output = None
    state.updated_at = now


def _spec(state: RunState, kind: Kind, name: str) -> GuardrailSpec | None:
    return next((g for g in state.agent.guardrails(kind) if g.name == name), None)


def _refuse(state: RunState, spec: GuardrailSpec, *, now: datetime) -> None:
    """Answer with the guardrail's refusal: the run's final output, what the user reads;
    a withheld output stays in the conversation, followed by the refusal."""
    text = spec.refusal or DEFAULT_REFUSAL
    state.turn += 1  # a reply of the run's, though not the model's: it takes a turn
    state.items.append(
        AssistantMessage(turn=state.turn, content=text, at=now, refused_by=spec.name)
    )
    state.final_output = text if state.agent.output is None else None


def request(state: RunState, spec: GuardrailSpec, value: JsonValue) -> GuardrailRequest:
    """The `run_guardrail` input that checks `value` with the guardrail `spec`."""
    return GuardrailRequest(
        run_id=state.run_id,
        agent=state.agent.name,
        name=spec.name,
        kind=spec.kind,
        value=value,
        context=state.context,
    )


def failed(spec: GuardrailSpec, why: str) -> GuardrailVerdict:
    """The verdict of a guardrail that could not run: tripped (fail closed)."""
    return GuardrailVerdict(name=spec.name, tripped=True, reason=f"the guardrail failed: {why}")


def unanswered_checks(state: RunState) -> list[int]:
    """Indexes of the checks of what the model has not answered yet, or of its final
    reply: what a resumed snapshot that cannot be verified may not vouch for; also of
    the checks anywhere that name such an item, or one after themselves: a run records
    a check right after what it checked, so only a forged one does."""
    reply = _latest_reply(state)
    start = reply if reply is not None else 0
    return [
        index
        for index, item in enumerate(state.items)
        if isinstance(item, GuardrailCheck)
        and (index >= start or (item.item is not None and item.item >= min(start, index)))
    ]


def _output_value(state: RunState) -> JsonValue:
    """The final output as the output guardrails get it: the typed value's JSON for an
    agent with an output type, else the text (also a text a snapshot brought from an
    agent without one: the guardrail's own check of the type then fails, closed)."""
    text = state.final_output or ""
    if state.agent.output is None:
        return text
    try:
        value: JsonValue = json.loads(text)
    except (ValueError, RecursionError):
        return text
    return value


def _latest_reply(state: RunState) -> int | None:
    for index in range(len(state.items) - 1, -1, -1):
        if isinstance(state.items[index], AssistantMessage):
            return index
    return None


def _checked(state: RunState, index: int, kind: Kind) -> bool:
    """A check of `kind` names the item at `index` (or, recorded before checks named
    their item, comes after it)."""
    return any(
        isinstance(check, GuardrailCheck)
        and check.kind == kind
        and (check.item == index if check.item is not None else position > index)
        for position, check in enumerate(state.items)
    )
