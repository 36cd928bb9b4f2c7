"""A run's budgets, of tokens and of money: the next model call may not start if it
could pass one. Pure.

Before each model call the run takes an upper bound of what the call can use: the
previous call's input and output tokens as the provider counted them (they cover
everything up to and including that reply: instructions, tools and output schema
included), plus the UTF-8 bytes of what was added since (no token is shorter than
a byte) with a margin per message, plus the call's `max_output_tokens` (the
provider stops there); for the first call, the bytes of all it sends. If what the
run has used plus that bound passes the budget, the run ends `budget_exceeded`
instead of calling: a budget is never overspent, at the price of stopping a little
early. A cost budget takes the same bound at the run's price (`AgentSpec.price`,
every input token at the uncached price).
"""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Literal

from durable_agents.workflows.agent_spec import AgentSpec, ApprovalCondition, ModelSettings
from durable_agents.workflows.approval_policy import condition_holds
from durable_agents.workflows.contract import ERROR_BUDGET_EXCEEDED
from durable_agents.workflows.payloads import ModelRequest
from durable_agents.workflows.run_items import (
    BUDGET_TOOL,
    AssistantMessage,
    BudgetRequest,
    Decision,
    ToolCall,
    ToolResult,
    UserMessage,
)
from durable_agents.workflows.state import ErrorInfo, RunState

PER_MESSAGE = 16
"""Tokens allowed for a message's framing (role, separators) in the bound."""


def for_run(agent: AgentSpec, asked: int | None, settings: ModelSettings) -> int | None:
    """The run's budget: the agent's, or `asked` if lower; ValueError if a budget
    cannot be kept because one reply has no bound (`max_output_tokens` unset)."""
    given = [b for b in (agent.token_budget, asked) if b is not None]
    budget = min(given) if given else None
    if budget is not None and settings.max_output_tokens is None:
        raise ValueError(
            "a token budget needs model_settings.max_output_tokens: without it one reply "
            "has no bound"
        )
    return budget


def cost_for_run(agent: AgentSpec, asked: float | None, settings: ModelSettings) -> float | None:
    """The run's cost budget: the agent's, or `asked` if lower; ValueError if it cannot
    be kept (no price for the agent's model, or one reply has no bound)."""
    given = [b for b in (agent.cost_budget, asked) if b is not None]
    budget = min(given) if given else None
    if budget is None:
        return None
    if agent.price is None:
        raise ValueError(
            f"a cost budget needs a price for the model {agent.model!r}: the worker's price "
            "table (AGENT_PRICES) has none"
        )
    if settings.max_output_tokens is None:
        raise ValueError(
            "a cost budget needs model_settings.max_output_tokens: without it one reply "
            "has no bound"
        )
    return budget


def next_call_bound(state: RunState, request: ModelRequest) -> int:
    """An upper bound of the tokens the model call `request` can use."""
    sent, replied = next_call_bounds(state, request)
    return sent + replied


def next_call_bounds(state: RunState, request: ModelRequest) -> tuple[int, int]:
    """Upper bounds of the input and of the output tokens of the model call `request`."""
    output = request.settings.max_output_tokens if request.settings else None
    previous = next(
        (
            (index, item)
            for index, item in reversed(list(enumerate(state.items)))
            if isinstance(item, AssistantMessage) and item.usage is not None
        ),
        None,
    )
    if previous is None:  # the first call: everything it sends, counted in bytes
        tools = json.dumps([t.model_dump(mode="json") for t in request.tools])
        schema = state.agent.output.json_schema if state.agent.output is not None else None
        base = _bytes(request.instructions) + _bytes(tools) + _bytes(json.dumps(schema))
        base += PER_MESSAGE
        added = state.items
    else:
        index, reply = previous
        assert reply.usage is not None
        base = reply.usage.input_tokens + reply.usage.output_tokens
        added = state.items[index + 1 :]
    for item in added:
        if isinstance(item, UserMessage | ToolResult):
            base += _bytes(item.content) + PER_MESSAGE
        elif isinstance(item, AssistantMessage):
            calls = "".join(c.tool + c.arguments + c.call_id for c in item.tool_calls)
            base += _bytes(item.content or "") + _bytes(calls) + PER_MESSAGE
            for thought in item.reasoning:  # sent back encrypted: its bytes bound it
                base += _bytes(thought.encrypted_content or "") + _bytes("".join(thought.summary))
    return base, output or 0


def exceeded(state: RunState, request: ModelRequest) -> ErrorInfo | None:
    """Why the call `request` may not start (it could pass a budget), or None."""
    return _tokens_exceeded(state, request) or _cost_exceeded(state, request)


def _cost_exceeded(state: RunState, request: ModelRequest) -> ErrorInfo | None:
    price = state.agent.price
    if state.cost_budget is None or price is None:
        return None
    sent, replied = next_call_bounds(state, request)
    bound = (sent * price.input + replied * price.output) / 1_000_000
    used = state.usage.cost
    if used + bound <= state.cost_budget:
        return None
    currency = price.currency
    return ErrorInfo(
        type=ERROR_BUDGET_EXCEEDED,
        message=f"the next model call could cost up to {bound:.6f} {currency}; the run has "
        f"spent {used:.6f} of its budget of {state.cost_budget:g} {currency}",
        details={
            "cost_budget": state.cost_budget,
            "spent": used,
            "next_call_cost_bound": bound,
            "currency": currency,
        },
    )


def tokens_used(state: RunState) -> int:
    """The tokens counted against the run's budget: its own, those of the runs it
    called as tools (`RunState.sub_run_usage`), and the shares of those still running
    in the background."""
    below = state.sub_run_usage.total_tokens if state.sub_run_usage is not None else 0
    # given to runs in the background still running: used, until they say what they used
    given = sum(b.share or 0 for b in state.background_runs if b.running)
    return state.usage.total_tokens + below + given


def _tokens_exceeded(state: RunState, request: ModelRequest) -> ErrorInfo | None:
    if state.token_budget is None:
        return None
    used = tokens_used(state)
    bound = next_call_bound(state, request)
    if used + bound <= state.token_budget:
        return None
    return ErrorInfo(
        type=ERROR_BUDGET_EXCEEDED,
        message=f"the next model call could use up to {bound:,} tokens; the run has used "
        f"{used:,} of its budget of {state.token_budget:,}",
        details={"budget": state.token_budget, "used": used, "next_call_bound": bound},
    )


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


# --- extensions (on_budget="ask") ---------------------------------------------------


def requests(state: RunState) -> list[BudgetRequest]:
    """The run's budget requests, oldest first."""
    return [i for i in state.items if isinstance(i, BudgetRequest)]


def request_for(state: RunState, call_id: str) -> BudgetRequest | None:
    """The budget request `call_id` names, or None."""
    return next((r for r in requests(state) if r.call_id == call_id), None)


def open_request(state: RunState) -> BudgetRequest | None:
    """The latest budget request while it waits for a decision, or None."""
    found = requests(state)
    if not found or state.status.is_final:
        return None
    decided = {i.call_id for i in state.items if isinstance(i, Decision)}
    return found[-1] if found[-1].call_id not in decided else None


def refused(state: RunState) -> bool:
    """Whether the latest budget request was rejected (by a person or its deadline)."""
    found = requests(state)
    if not found:
        return False
    return any(
        isinstance(i, Decision) and i.call_id == found[-1].call_id and i.decision == "reject"
        for i in state.items
    )


def extension(state: RunState, error: ErrorInfo) -> BudgetRequest | None:
    """The request to extend the budget `error` says the next call could pass: by as
    much again as the budget the agent started with, at least to what the next call
    needs, within the limits of `budget_approval` (cut to them); None if even what
    the next call needs is outside them (no approval could let it run). Its time is
    set when it is recorded (`ask`)."""
    details = error.details
    kind: Literal["tokens", "cost"] = "cost" if "cost_budget" in details else "tokens"
    if kind == "cost":
        current, used = state.cost_budget, state.usage.cost
        bound, step = details["next_call_cost_bound"], state.agent.cost_budget or current
    else:
        current, used = state.token_budget, tokens_used(state)
        bound, step = details["next_call_bound"], state.agent.token_budget or current
    assert current is not None and step is not None
    assert isinstance(bound, int | float)
    needed = used + bound
    wanted = max(current + step, needed)
    if kind == "tokens":
        needed, wanted = math.ceil(needed), math.ceil(wanted)
    caps = [c.value for c in limits(state, kind) if c.op in ("<=", "==")]
    capped = min([wanted, *(c for c in caps if isinstance(c, int | float))])
    fits = [v for v in (wanted, capped, needed) if v >= needed and _within(state, kind, v)]
    if not fits:
        return None
    return BudgetRequest(
        call_id=f"budget/{len(requests(state)) + 1}",
        kind=kind,
        budget=current,
        needed=needed,
        proposed=fits[0],
        message=error.message,
        at=state.updated_at,
    )


def ask(state: RunState, request: BudgetRequest, *, now: datetime) -> None:
    """Record `request` (see `extension`), asked `now`: the run waits for its decision."""
    state.items.append(request.model_copy(update={"at": now}))
    state.updated_at = now


def limits(state: RunState, kind: str) -> list[ApprovalCondition]:
    """The limits of `budget_approval` on the budget of `kind` (the others are on the
    other budget: they do not bind this one)."""
    return [c for c in state.agent.budget_approval.limits if c.field == _FIELD[kind]]


def _within(state: RunState, kind: str, value: float) -> bool:
    arguments = {_FIELD[kind]: _amount(kind, value)}
    return all(condition_holds(c, arguments) for c in limits(state, kind))


def as_call(request: BudgetRequest) -> ToolCall:
    """The request as the pending call people see and decide (`BUDGET_TOOL`)."""
    arguments = {_FIELD[request.kind]: _amount(request.kind, request.proposed)}
    return ToolCall(
        call_id=request.call_id,
        tool=BUDGET_TOOL,
        arguments=json.dumps(arguments),
        needs_approval=True,
    )


def arguments_problem(request: BudgetRequest, arguments: dict[str, object]) -> str | None:
    """Why an approver's edit of the request cannot be the new budget, or None."""
    name = _FIELD[request.kind]
    if set(arguments) != {name}:
        return f"a budget extension takes one argument, {name}"
    value = arguments[name]
    whole = request.kind == "tokens"
    if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
        return f"{name} must be {'a whole number' if whole else 'a number'}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} must be a finite number"
    if not -MAX_BUDGET <= value <= MAX_BUDGET:  # also keeps huge ints out of float math
        return f"{name} must be at most {MAX_BUDGET:,}"
    if value < request.needed:
        needed = _amount(request.kind, request.needed)
        return f"{name} must be at least {needed} (what the next model call could need)"
    return None


def extend(state: RunState, request: BudgetRequest, decision: Decision) -> None:
    """Apply an approval of `request`: the budget it names (the approver's edit, else
    the proposed one) becomes the run's."""
    if decision.decision != "approve":
        return
    value = (decision.arguments or {}).get(_FIELD[request.kind], request.proposed)
    assert isinstance(value, int | float)
    if request.kind == "cost":
        state.cost_budget = float(value)
    else:
        state.token_budget = int(value)


_FIELD = {"tokens": "token_budget", "cost": "cost_budget"}
BUDGET_FIELDS = tuple(_FIELD.values())
"""The argument a budget extension takes, by kind: what `budget_approval.limits` name."""
MAX_BUDGET = 2**53
"""The largest budget an approver may set (exact as a float, and in any language)."""


def _amount(kind: str, value: float) -> int | float:
    return int(value) if kind == "tokens" else value
