"""The calls a model reply proposes, as the run records them: ids unique in the
run, whether the tool's approval policy asks for a decision, and whether a call
can run at all. Pure functions, used by `workflows.loop`.
"""

from __future__ import annotations

import json
import math
import re

from durable_agents.workflows.agent_spec import AgentSpec
from durable_agents.workflows.approval_policy import limits_problem, requires_decision
from durable_agents.workflows.payloads import ModelReply, ModelToolCall
from durable_agents.workflows.run_items import AssistantMessage, RuleVerdict, ToolCall
from durable_agents.workflows.state import RunState


def parse_arguments(text: str, *, finite: bool = True) -> object:
    """The JSON value of a call's arguments text; ValueError (JSONDecodeError is one)
    for text that is not JSON or nests too deeply, and, with `finite`, for NaN,
    Infinity or a number too large for a float (comparisons with NaN are all false,
    so a `when` condition would not hold and the call would skip approval)."""
    try:
        if finite:
            return json.loads(text or "{}", parse_constant=_no_constant, parse_float=_finite)
        return json.loads(text or "{}")
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]} does not fit a float")
    return value


NO_VERDICT = "no verdict came with the call (its worker did not ask the rule)"


def proposed_call(spec: AgentSpec, call: ModelToolCall) -> ToolCall:
    """The model's call, with whether the tool's approval policy asks for a decision:
    its data conditions, or its code rule's verdict (`RuleVerdict`, worked out by
    `call_model`; a call without one asks a person)."""
    tool = spec.tool(call.tool)
    needs = False
    verdict = None
    if tool is not None and tool.needs_approval:
        try:
            arguments = parse_arguments(call.arguments)
        except ValueError:
            arguments = None
        rule = tool.approval.rule
        if rule is not None:
            verdict = call.rule_verdict
            if verdict is None or verdict.rule != rule:
                verdict = RuleVerdict(rule=rule, needs_approval=True, error=NO_VERDICT)
            needs = verdict.needs_approval or not isinstance(arguments, dict)
        else:
            needs = not isinstance(arguments, dict) or requires_decision(tool.approval, arguments)
        needs = needs or tool.external  # nothing but an answer gives its result
    return ToolCall(
        call_id=call.call_id,
        tool=call.tool,
        arguments=call.arguments,
        needs_approval=needs,
        rule_verdict=verdict,
    )


def malformed_problem(spec: AgentSpec, call: ToolCall, *, unicode: bool = True) -> str | None:
    """Why a call cannot run at all (unknown tool, arguments not a JSON object, one
    that names a key twice, or, with `unicode`, holds a lone surrogate), or None.

    A repeated key is malformed because readers disagree on it: an approver shown
    `{"amount": 1, ..., "amount": 100000}` may read 1 where the tool gets 100000."""
    if spec.tool(call.tool) is None:
        known = ", ".join(t.name for t in spec.tools) or "none"
        return f"Error: unknown tool '{call.tool}'. Available tools: {known}."
    try:
        arguments = parse_arguments(call.arguments)
    except ValueError as err:
        why = err.msg if isinstance(err, json.JSONDecodeError) else str(err)
        return (
            f"Error: arguments for tool '{call.tool}' are not valid JSON ({why}). "
            "Retry with a JSON object."
        )
    if not isinstance(arguments, dict):
        return f"Error: arguments for tool '{call.tool}' must be a JSON object."
    if unicode and not _encodable(arguments):
        return (
            f"Error: arguments for tool '{call.tool}' hold an escaped lone surrogate "
            "(\\ud800-\\udfff), which is no character. Send text as it is."
        )
    repeated = repeated_key(call.arguments)
    if repeated is not None:
        return (
            f"Error: arguments for tool '{call.tool}' name the key {repeated!r} more than "
            "once. Send each argument once."
        )
    tool = spec.require_tool(call.tool)
    outside = limits_problem(tool.approval, arguments, sensitive=tool.sensitive)
    if outside is not None:
        return (
            f"Error: arguments for tool '{call.tool}' are outside what its policy allows: "
            f"{outside}. This call cannot run."
        )
    return None


def repeated_key(arguments: str) -> str | None:
    """A key that some object of the JSON text `arguments` names twice, or None."""
    found: list[str] = []

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in items]
        found.extend(k for k in keys if keys.count(k) > 1)
        return dict(items)

    try:
        json.loads(arguments or "{}", object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None
    return found[0] if found else None


SAFE_CALL_ID = re.compile(r"[A-Za-z0-9_.:-]{1,200}")
"""Call ids kept as the model wrote them; any other id (control or bidi characters
that would hide text in a terminal, spaces, over 200 characters) is renamed."""


def unique_call_ids(state: RunState, reply: ModelReply) -> list[ModelToolCall]:
    """The reply's calls, each with an id unique in the run.

    Call ids key decisions, results and idempotency keys, so they must be unique;
    models and proxies are not always careful (an empty id, an id counted from
    1 again after a restart); nor may it be an earlier call's short id. A clashing
    id becomes `<id>_t<turn>_<index>`: letters, digits, `_` and `-` only, which every
    provider accepts back in the conversation and an id outside `SAFE_CALL_ID`
    becomes `call_t<turn>_<index>`.
    """
    used = {c.call_id for i in state.items if isinstance(i, AssistantMessage) for c in i.tool_calls}
    used |= {  # nor another call's short id (`workflows.short_ids`)
        c.short_id
        for i in state.items
        if isinstance(i, AssistantMessage)
        for c in i.tool_calls
        if c.short_id is not None
    }
    calls = []
    for index, call in enumerate(reply.tool_calls, start=1):
        call_id = call.call_id
        unsafe = bool(call_id) and not SAFE_CALL_ID.fullmatch(call_id)
        if not call_id or call_id in used or unsafe:
            base = f"{'call' if unsafe or not call_id else call_id}_t{state.turn}_{index}"
            call_id, n = base, 1
            while call_id in used:
                n += 1
                call_id = f"{base}_{n}"
            call = call.model_copy(update={"call_id": call_id})
        used.add(call_id)
        calls.append(call)
    return calls


def _encodable(arguments: object) -> bool:
    """Every string in `arguments` (keys too) can be written as UTF-8: JSON lets `\\ud800`
    through, and it then fails where the call is written down (events, summaries)."""
    try:
        json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
