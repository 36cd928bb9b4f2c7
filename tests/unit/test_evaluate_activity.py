"""The `evaluate_call` activity's reading of what an evaluator returns (run directly,
as the activity does): a Verdict or its dict counts; anything else, or a raise,
escalates with the reason; an agent's reply must be the verdict's JSON."""

from __future__ import annotations

import asyncio
import json

import pytest
from durable_agents.activities.evaluate import Verdict, _ask_function, parse_verdict
from durable_agents.workflows.agent_spec import EvaluatorRef
from durable_agents.workflows.check_payloads import EvaluationRequest

REQUEST = EvaluationRequest(
    run_id="r",
    agent="a",
    tool="refund",
    call_id="c1",
    arguments=json.dumps({"amount": 5}),
    evaluator=EvaluatorRef(kind="function", name="screen"),
)


def asked(fn) -> tuple[str, str | None]:
    result = asyncio.run(_ask_function(fn, REQUEST))
    return result.verdict, result.reason


def test_a_verdict_or_its_dict_counts_sync_or_async():
    async def approve(arguments, context):
        assert (arguments, context.call_id, context.tool) == ({"amount": 5}, "c1", "refund")
        return Verdict(decision="approve", reason="small")

    assert asked(approve) == ("approve", "small")
    assert asked(lambda a, c: {"decision": "reject", "reason": "no"}) == ("reject", "no")


@pytest.mark.parametrize(
    ("returned", "why"),
    [
        (True, "the evaluator returned bool, not a Verdict"),
        ("approve", "the evaluator returned str, not a Verdict"),
        ({"decision": "approve", "by": "me"}, "the evaluator returned dict, not a Verdict"),
        (None, "the evaluator returned NoneType, not a Verdict"),
    ],
)
def test_anything_else_escalates(returned, why):
    """Hostile: an evaluator that returns what looks like yes is not an approval."""
    assert asked(lambda a, c: returned) == ("escalate", why)


def test_an_evaluator_that_raises_escalates_with_the_reason():
    def broken(arguments, context):
        raise KeyError("limit")

    assert asked(broken) == ("escalate", "the evaluator raised KeyError: 'limit'")


def test_an_agents_reply_is_its_verdict_only_as_json():
    assert parse_verdict('```json\n{"decision": "reject", "reason": "odd"}\n```') == Verdict(
        decision="reject", reason="odd"
    )
    for text in ["approve", '{"decision": "yes"}', '{"decision": "approve", "x": 1}', ""]:
        assert isinstance(parse_verdict(text), str), text
