"""A run's context changed by its tools (workflows/context_updates.py,
activities/context_change.py, `ToolContext.set_context`), and what a forged or careless
change gets (issue 46)."""

from __future__ import annotations

import datetime as dt
from datetime import UTC, datetime

import pytest
from durable_agents.activities.context_change import changed_context
from durable_agents.workflows import context_updates, loop
from durable_agents.workflows.payloads import AgentInput, ContextUpdate, ToolOutcome
from durable_agents.workflows.run_items import ToolResult
from pydantic import ValidationError

from durable_agents import ToolContext
from tests.support.native_agents import cabin

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _state(context):
    return loop.new_state(
        cabin.spec(), AgentInput(agent="cabin", input="hi", context=context), run_id="r", now=NOW
    )


def _result(call_id: str = "c1") -> ToolResult:
    return ToolResult(call_id=call_id, content="ok")


def test_an_unchanged_context_sends_nothing_and_a_change_of_type_is_a_change():
    assert changed_context({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2]}) is None
    assert changed_context(None, None) is None
    assert changed_context({"a": 1}, {"a": 1.0}) == ContextUpdate(keys={"a": 1.0})
    assert changed_context({"a": 1}, {"a": True}) == ContextUpdate(keys={"a": True})
    assert changed_context([1], [1, 2]) == ContextUpdate(value=[1, 2])
    assert changed_context({"a": 1}, "text") == ContextUpdate(value="text")
    assert changed_context({"a": 1, "b": 2}, {"b": 3, "c": 4}) == ContextUpdate(
        keys={"b": 3, "c": 4}, removed=["a"]
    )


@pytest.mark.parametrize(
    ("after", "said"),
    [
        ({"when": dt.date(2026, 1, 1)}, "the new context is not JSON: dict.when"),
        ({"pair": (1, 2)}, "the new context is not JSON: dict.pair"),
        ({1: "key"}, "the new context is not JSON: dict.1.[key]"),
        ({"big": "x" * 32_000}, "the new context is 32,010 bytes of JSON, more than 32,000"),
    ],
)
def test_a_change_that_is_not_json_or_too_large_is_refused_with_the_reason(after, said):
    update = changed_context({}, after)
    assert update.refused.startswith(said)
    assert (update.value, update.keys) == (None, None)


def test_calls_changing_different_keys_keep_both_in_call_order():
    state = _state({"passenger": "Ann"})
    seen = state.context
    first = context_updates.apply(state, _result("n1"), changed_context(seen, {**seen, "n": 1}))
    second = context_updates.apply(state, _result("c2"), changed_context(seen, {**seen, "s": 2}))
    third = context_updates.apply(state, _result("c3"), changed_context(seen, {"s": 3}))
    assert state.context == {"n": 1, "s": 3}  # c3 removed passenger and set s last
    assert first.context_changed and second.context_changed and third.context_changed


def test_a_forged_update_that_would_grow_the_context_too_far_is_refused_by_the_run():
    """Each change alone is small; the run checks what they make of its context."""
    state = _state({"a": "x" * 20_000})
    update = ContextUpdate(keys={"b": "y" * 20_000})  # as a forged run_tool result would
    marked = context_updates.apply(state, _result(), update)
    assert marked.context_refused.startswith("the new context is 40,0")
    assert not marked.context_changed and state.context == {"a": "x" * 20_000}
    refused = context_updates.apply(state, _result(), ContextUpdate(refused="not JSON: x"))
    assert refused.context_refused == "not JSON: x" and state.context == {"a": "x" * 20_000}


def test_results_are_recorded_with_what_became_of_their_changes():
    state = _state(None)
    loop.record_tool_outcomes(
        state,
        [
            ToolOutcome(call_id="a", content="1", context_update=ContextUpdate(value={"k": 1})),
            ToolOutcome(call_id="b", content="2", context_update=ContextUpdate(refused="too big")),
            ToolOutcome(call_id="c", content="3"),
        ],
        now=NOW,
    )
    a, b, c = (i for i in state.items if isinstance(i, ToolResult))
    assert (a.context_changed, a.context_refused) == (True, None)
    assert (b.content, b.context_changed, b.context_refused) == ("2", False, "too big")
    assert "context_changed" not in c.model_dump() and "context_refused" not in c.model_dump()
    assert state.context == {"k": 1}


@pytest.mark.parametrize(
    "forged",
    [
        {"refused": ""},
        {"refused": "x" * 2_001},
        {"keys": {"a": 1}, "nonsense": True},
        {"removed": "a"},
    ],
)
def test_a_malformed_update_is_refused_by_the_payload(forged):
    with pytest.raises(ValidationError):
        ToolOutcome.model_validate({"call_id": "a", "content": "", "context_update": forged})


def test_set_context_replaces_and_in_place_changes_show_in_context_after():
    ctx = ToolContext(idempotency_key="k", run_id="r", call_id="c", agent="a", context={"x": 1})
    ctx.context["y"] = 2
    assert ctx.context_after() == {"x": 1, "y": 2}
    ctx.set_context([3])
    assert ctx.context_after() == [3]
    ctx.set_context(None)
    assert ctx.context_after() is None
