"""How `agentctl watch` prints an answer's `approval_decided` and an interruption whose
call finished anyway, and how `agentctl state` prints that call: escaped, one line."""

from __future__ import annotations

from datetime import UTC, datetime

from durable_agents.client.render import interruption
from durable_agents.client.render_events import line
from durable_agents.workflows.interrupt_models import InterruptedCall, Interruption

AT = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_an_answer_prints_as_answered_with_its_result_escaped():
    event = {
        "type": "approval_decided",
        "seq": 7,
        "at": "2026-01-01T12:00:07Z",
        "call_id": "q1",
        "tool": "ask_refund",
        "decision": "answer",
        "approver": "ann",
        "via": "update",
        "result": {"account": "DE-1\x1b[2J", "amount": 12.5},
    }
    shown = line(event)
    assert "\x1b" not in shown and "\n" not in shown
    assert shown.startswith("12:00:07 #7 answered ask_refund [q1] by ann with {")
    assert '"amount": 12.5' in shown
    assert (
        line({**event, "decision": "reject", "result": None})
        .split(" #7 ")[1]
        .startswith("rejected ask_refund [q1] by ann")
    )
    by_evaluator = {**event, "decision": "approve", "approver": "evaluator:screen"}
    assert "approved ask_refund [q1] by evaluator:screen" in line(by_evaluator)


def test_a_call_that_finished_anyway_prints_so_in_watch_and_state():
    event = {
        "type": "interrupted",
        "seq": 5,
        "at": "2026-01-01T12:00:05Z",
        "via": "message",
        "calls": [{"call_id": "s1", "was": "finished"}, {"call_id": "h1", "was": "running"}],
    }
    assert line(event).endswith("s1 finished anyway, h1 stopped")
    record = Interruption(
        via="message",
        at=AT,
        applied_at=AT,
        turn=1,
        item=3,
        calls=[InterruptedCall(call_id="s1", tool="stubborn", was="finished", note="kept")],
    )
    assert "s1 finished anyway (keeps its result)" in interruption(record)
