"""What a run shows in the Temporal UI (workflows/details.py), without Temporal."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from durable_agents.workflows import details, loop
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.payloads import AgentInput, ModelReply, ModelToolCall, ToolOutcome
from durable_agents.workflows.run_items import ReasoningItem, Usage
from durable_agents.workflows.state import ErrorInfo, RunState, RunStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)
OBJECT = {"type": "object"}


def new_run() -> RunState:
    spec = AgentSpec(
        name="support",
        instructions="",
        model="m",
        tools=[
            ToolSpec(name="lookup", description="", parameters=OBJECT),
            ToolSpec(name="refund", description="", parameters=OBJECT, needs_approval=True),
        ],
    )
    return loop.new_state(spec, AgentInput(agent="support", input="hi"), run_id="r", now=T0)


def reply(state: RunState, *calls: tuple[str, str, str], tokens: int = 15) -> None:
    answer = ModelReply(
        tool_calls=[ModelToolCall(call_id=c, tool=t, arguments=a) for c, t, a in calls],
        usage=Usage(model_calls=1, input_tokens=tokens, total_tokens=tokens),
    )
    loop.record_model_reply(state, answer, now=T0)


def test_render_shows_status_usage_pending_calls_and_the_last_tool_result():
    state = new_run()
    reply(state, ("l1", "lookup", '{"order": "A12"}'))
    loop.record_tool_outcomes(
        state, [ToolOutcome(call_id="l1", content="order A12:\n paid")], now=T0
    )
    reply(state, ("c1", "refund", '{"order": "A12", "amount": 40}'), ("c2", "refund", "{}"))
    state.status = RunStatus.AWAITING_APPROVAL

    assert details.render(state) == "\n".join(
        [
            "**awaiting_approval** · support · turn 2 · 30 tokens · 2 model calls",
            "",
            "**Pending approvals (2)**",
            "- `refund(order=A12, amount=40)` — call id `c1` (short id `nnx24mp5`)",
            "- `refund()` — call id `c2` (short id `x6ecnj1g`)",
            "",
            "**Last tool result** `lookup`: `order A12: paid`",
        ]
    )


def test_render_says_one_model_call_and_one_token_and_shows_the_error():
    state = new_run()
    reply(state, tokens=1)
    loop.record_tool_outcomes(state, [], now=T0)
    loop.fail(state, ErrorInfo(type="ModelUnavailable", message="HTTP 503:\nbusy"), now=T0)

    assert details.render(state) == "\n".join(
        [
            "**failed** · support · turn 1 · 1 token · 1 model call",
            "",
            "**Error** `ModelUnavailable`: `HTTP 503: busy`",
        ]
    )


def test_render_keeps_backticks_inside_code_spans_and_marks_an_error_result():
    state = new_run()
    reply(state, ("l1", "lookup", '{"q": "`rm -rf`"}'))
    loop.record_tool_outcomes(
        state, [ToolOutcome(call_id="l1", content="``bad`` input", is_error=True)], now=T0
    )
    reply(state, ("c1", "refund", '{"note": "a ``b`` c"}'))

    lines = details.render(state).splitlines()
    assert lines[3] == '- ```refund(note="a ``b`` c")``` — call id `c1` (short id `nnx24mp5`)'
    assert lines[5] == "**Last tool result** `lookup` (error): ``` ``bad`` input ```"


def test_render_cuts_a_long_result_but_shows_a_long_argument_in_full_folded():
    # What an approver reads in the UI is what runs: an amount after a long field
    # used to be cut off at 80 characters.
    state = new_run()
    reply(state, ("l1", "lookup", "{}"))
    loop.record_tool_outcomes(state, [ToolOutcome(call_id="l1", content="x" * 500)], now=T0)
    reply(state, ("c1", "refund", '{"text": "%s", "amount": 100000}' % ("y" * 250)))

    lines = details.render(state).splitlines()
    assert f"`{'x' * 79}…`" in lines[-1]
    call = lines.index(next(line for line in lines if line.startswith("- `refund(text=")))
    assert lines[call + 1 : call + 6] == [
        f"  - `text` = `{'y' * 100}`",
        f"    ↪ `{'y' * 100}`",
        f"    ↪ `{'y' * 50}`",
        "  - `amount` = `100000`",
        "",
    ]


def test_render_masks_sensitive_values_and_escapes_invisible_characters():
    state = new_run()
    state.agent.tools[1].sensitive = ["card"]
    arguments = {"card": "4111111111111111", "note": "ok\u202egnp.exe" + " " * 80}
    reply(state, ("c1", "refund", json.dumps(arguments)))

    rendered = details.render(state)
    assert "4111" not in rendered
    assert '- `refund(card="<sensitive, 16 chars>", note=' in rendered
    assert "  - `card` = `<sensitive, 16 chars>`" in rendered
    assert "\u202e" not in rendered and "\\u{202e}gnp.exe" in rendered


def test_render_shows_at_most_a_budget_of_one_calls_arguments_and_says_so():
    state = new_run()
    reply(state, ("c1", "refund", json.dumps({"blob": "z" * 50_000, "amount": 7})))

    rendered = details.render(state)
    assert len(rendered) < details.SHOWN_PER_CALL + 2_000
    assert "… (34,000 more characters: `agentctl pending` shows them)" in rendered.replace(
        "`\n    ↪ `", ""
    )
    assert "  - `amount` = `7`" in rendered  # later arguments still named


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        ('{"order": "A12", "amount": 40}', "refund(order=A12, amount=40)"),
        (
            '{"to": "ops@example.com", "cc": null, "urgent": true}',
            "refund(to=ops@example.com, cc=null, urgent=true)",
        ),
        (
            '{"note": "two words", "code": "40", "empty": ""}',
            'refund(note="two words", code="40", empty="")',
        ),
        ('{"items": [1, 2], "meta": {"a": "b"}}', 'refund(items=[1,2], meta={"a":"b"})'),
        ('{"city": "Zürich", "at": "2026-01-01"}', "refund(city=Zürich, at=2026-01-01)"),
        ("", "refund()"),
        ("{}", "refund()"),
        ("[1, 2]", "refund([1, 2])"),
        ('{"order": \n "A12"', 'refund({"order": "A12")'),
        ("not json", "refund(not json)"),
    ],
)
def test_tool_call_summary_reads_like_a_call(arguments, shown):
    assert details.tool_call_summary("refund", arguments) == shown


def test_tool_call_summary_shows_arguments_nested_past_the_stack_as_text():
    # a forged child report or a model's reply: rendering must never fail a task
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    shown = details.tool_call_summary("refund", deep)
    assert shown.startswith('refund({"a": [[[') and shown.endswith("…)")


def test_tool_call_summary_is_cut_at_the_limit_and_keeps_the_closing_parenthesis():
    long = '{"order": "A12", "note": "%s"}' % ("n" * 100)
    shown = details.tool_call_summary("refund", long)
    assert len(shown) == 60
    assert shown.startswith("refund(order=A12, note=nnn") and shown.endswith("n…)")
    assert details.tool_call_summary("refund", long, limit=20) == "refund(order=A12, …)"
    assert details.tool_call_summary("x" * 70, "{}", limit=10) == "xxxxxxxxx…"


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        ("Refund order A12", "support: Refund order A12"),
        ("Refund\n\n  order   A12\n", "support: Refund order A12"),
        (
            "Please refund order A12 for the customer who wrote twice about the broken lamp",
            "support: Please refund order A12 for the customer who wrote twice…",
        ),
        ("x" * 100, f"support: {'x' * 59}…"),
        ("", "support"),
    ],
)
def test_static_summary_is_the_agent_and_the_first_words_on_one_line(text, summary):
    assert details.static_summary("support", text) == summary
    assert len(details.static_summary("support", text)) <= len("support: ") + 60


def test_render_shows_the_latest_replys_reasoning_summary_never_its_sealed_content():
    state = new_run()
    thought = ReasoningItem(
        id="rs_1",
        summary=["**Refund** under the cap.", "Needs\u202eapproval."],
        encrypted_content="SEALED-CIPHERTEXT",
    )
    answer = ModelReply(
        tool_calls=[ModelToolCall(call_id="c1", tool="refund", arguments="{}")],
        reasoning=[thought],
    )
    loop.record_model_reply(state, answer, now=T0)
    shown = details.render(state)
    assert "**Reasoning** (turn 1): `**Refund** under the cap. Needs\\u{202e}approval.`" in shown
    assert "SEALED" not in shown
    reply(state)  # a later reply without reasoning: nothing stale is shown
    assert "Reasoning" not in details.render(state)
