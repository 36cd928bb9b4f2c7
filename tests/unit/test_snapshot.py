"""Snapshots without Temporal: round trip, canonical JSON, writing, the verdict."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from durable_agents.workflows.agent_spec import (
    AgentSpec,
    ApprovalCondition,
    ApprovalPolicy,
    ToolSpec,
)
from durable_agents.workflows.audit import DecisionAttempt
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.decisions import rule_decision
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from durable_agents.workflows.snapshot import SnapshotError, dumps, loads, validate
from durable_agents.workflows.state import SCHEMA_VERSION, ErrorInfo, RunOrigin, RunState, RunStatus
from durable_agents.workflows.state_checks import _ALL_ANSWERED
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.snapshot_golden import (
    KEY,
    golden_state,
    golden_text,
)

# --- round trip ---------------------------------------------------------------------

TEXT = st.text(max_size=12)
NAME = st.text(min_size=1, max_size=8)
TIMES = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]),
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**53, max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)
DECISIONS = st.sampled_from(["approve", "reject"])
ARGUMENTS = st.none() | st.dictionaries(TEXT, JSON, max_size=3)
TOOL_NAMES = ["lookup", "refund"]
CALLS = st.builds(
    ToolCall,
    call_id=st.just("-"),  # numbered per turn in `conversations`: ids are unique in a run
    tool=st.sampled_from(TOOL_NAMES),
    arguments=TEXT,
    needs_approval=st.booleans(),
    idempotency_key=st.none() | NAME,
)


@st.composite
def conversations(draw) -> tuple[list[Any], int]:
    """Items as a run records them (decisions follow their call, rules follow an
    `always` decision, results answer proposed calls), and the turn they reach."""
    items: list[Any] = [UserMessage(content=draw(TEXT))]
    rules: dict[str, Decision] = {}
    turns = draw(st.integers(0, 3))
    for turn in range(1, turns + 1):
        calls = [
            c.model_copy(update={"call_id": f"c{turn}.{n}"})
            for n, c in enumerate(draw(st.lists(CALLS, max_size=3)))
        ]
        reply = AssistantMessage(
            turn=turn, content=draw(st.none() | TEXT), tool_calls=calls, at=draw(TIMES)
        )
        items.append(reply)
        for call in calls:
            if call.needs_approval and draw(st.booleans()):
                items.append(draw(_decisions(call, rules.get(call.tool))))
                if items[-1].always:
                    rules[call.tool] = items[-1]
            if draw(st.booleans()):
                items.append(
                    ToolResult(
                        call_id=call.call_id, content=draw(TEXT), is_error=draw(st.booleans())
                    )
                )
        if draw(st.booleans()):
            items.append(UserMessage(content=draw(TEXT)))
    return items, turns


def _decisions(call: ToolCall, rule: Decision | None) -> st.SearchStrategy[Decision]:
    made = st.builds(
        Decision,
        call_id=st.just(call.call_id),
        decision=DECISIONS,
        approver=NAME,
        reason=st.none() | TEXT,
        always=st.booleans(),
        via=st.sampled_from(["signal", "update"]),
        arguments=ARGUMENTS,
        at=TIMES,
    )
    timeout = st.builds(
        Decision,
        call_id=st.just(call.call_id),
        decision=st.just("reject"),
        approver=st.just("system"),
        via=st.just("timeout"),
        at=TIMES,
    )
    if rule is None:
        return made | timeout
    by_rule = st.builds(lambda at: rule_decision(rule, call, now=at), TIMES)
    return made | timeout | by_rule


ATTEMPTS = st.builds(
    DecisionAttempt,
    call_id=TEXT,
    decision=DECISIONS,
    approver=TEXT,
    reason=st.none() | TEXT,
    always=st.booleans(),
    arguments=ARGUMENTS,
    at=TIMES,
    refused_because=st.none() | TEXT,
)
DURATIONS = st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=400))
POLICIES = st.builds(
    ApprovalPolicy,
    when=st.lists(
        st.builds(
            ApprovalCondition,
            field=NAME,
            op=st.sampled_from(["==", "!=", ">", ">=", "<", "<=", "in", "not_in"]),
            value=JSON,
        ),
        max_size=2,
    ),
    approvers=st.none() | st.lists(NAME, max_size=3),
    timeout=st.none() | DURATIONS,
    on_timeout=st.sampled_from(["reject", "fail"]),
)
TOOLS = st.builds(
    ToolSpec,
    name=NAME,
    description=TEXT,
    parameters=st.dictionaries(TEXT, JSON, max_size=3),
    needs_approval=st.booleans(),
    approval=POLICIES,
)


def _state(conversation: tuple[list[Any], int], **fields: Any) -> RunState:
    items, turn = conversation
    answered = {i.call_id for i in items if isinstance(i, ToolResult)}
    replies = [i for i in items if isinstance(i, AssistantMessage)]
    open_calls = replies and any(c.call_id not in answered for c in replies[-1].tool_calls)
    if open_calls and fields["status"].value in _ALL_ANSWERED:
        fields["status"] = RunStatus.CANCELLED  # a state the loop can reach with open calls
    return RunState(items=items, turn=turn, **fields)


STATES = st.builds(
    _state,
    conversations(),
    run_id=NAME,
    agent=st.builds(
        AgentSpec,
        name=NAME,
        instructions=TEXT,
        model=NAME,
        tools=st.lists(TOOLS, max_size=2),
        session_idle_timeout=st.none() | DURATIONS,
    ),
    status=st.sampled_from(RunStatus),
    max_turns=st.integers(1, 500),
    context=JSON,
    final_output=st.none() | TEXT,
    error=st.none()
    | st.builds(
        ErrorInfo, type=NAME, message=TEXT, details=st.dictionaries(TEXT, JSON, max_size=2)
    ),
    usage=st.builds(
        Usage,
        model_calls=st.integers(0, 10**6),
        input_tokens=st.integers(0, 10**9),
        output_tokens=st.integers(0, 10**9),
        total_tokens=st.integers(0, 10**9),
    ),
    origin=st.none()
    | st.builds(
        RunOrigin, run_id=NAME, turn=st.integers(0, 99), mode=st.sampled_from(["resume", "fork"])
    ),
    session=st.booleans(),
    queued_messages=st.lists(TEXT, max_size=2),
    end_reason=st.none() | TEXT,
    workflow_runs=st.lists(NAME, max_size=2),
    held_decisions=st.lists(ATTEMPTS, max_size=2),
    refused_decisions=st.lists(ATTEMPTS, max_size=2),
    created_at=TIMES,
    updated_at=TIMES,
)


@settings(max_examples=150, deadline=None)
@given(state=STATES, key=st.sampled_from([None, KEY]))
def test_export_import_export_is_identical(state: RunState, key: bytes | None):
    text = dumps(state, key=key)
    loaded = loads(text, key=key)
    assert loaded == state
    assert dumps(loaded, key=key) == text


def test_schema_version_comes_first_and_integrity_last():
    doc = json.loads(dumps(golden_state()))
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == SCHEMA_VERSION
    assert list(doc)[-1] == "integrity"


def test_reformatting_and_reordering_keys_keeps_the_digest_valid():
    doc = json.loads(golden_text())
    reordered = dict(reversed(list(doc.items())))
    assert loads(json.dumps(reordered, separators=(",", ":"))) == golden_state()


@pytest.mark.parametrize(
    ("value", "canonical"),
    [
        # RFC 8785, section 3.2.2 / appendix examples.
        (
            {
                "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
                "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
                "literals": [None, True, False],
            },
            '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
            '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
        ),
        ({"\U0001f600": 1, "\ufb33": 2, "a": 3}, '{"a":3,"😀":1,"דּ":2}'),  # UTF-16 order
        (
            [60.0, -0.0, 1e21, 1e20, 1e-7, 1e-6, -1.5],
            "[60,0,1e+21,100000000000000000000,1e-7,0.000001,-1.5]",
        ),
        (2**80, "1208925819614629174706176"),
    ],
)
def test_canonical_json_follows_rfc_8785(value: Any, canonical: str):
    assert canonical_json(value) == canonical.encode("utf-8")


# --- writing --------------------------------------------------------------------------


def test_an_invalid_state_is_refused_on_write():
    state = golden_state()
    index = next(i for i, item in enumerate(state.items) if item.type == "decision")
    state.items[index].decision = "maybe"  # type: ignore[union-attr]  # no validation on assignment
    with pytest.raises(SnapshotError) as raised:
        dumps(state)
    assert str(raised.value) == (
        f"invalid snapshot at $.items[{index}].decision: "
        "Input should be 'approve', 'reject' or 'answer'"
    )


def test_non_json_context_is_refused_on_write():
    state = golden_state().model_copy(update={"context": {"x": float("inf")}})
    with pytest.raises(SnapshotError, match="state is not JSON"):
        dumps(state)


# --- validate -------------------------------------------------------------------------


def test_validate_gives_a_one_line_verdict():
    assert validate(golden_text("single")) == (
        f"valid, schema {SCHEMA_VERSION}, run support-7, 20 items, status output_invalid"
    )
    newest = validate(dumps(golden_state(), key=KEY), key=KEY)
    assert newest.startswith(f"valid, schema {SCHEMA_VERSION}, run support-7, ")
