"""What a model reply says it used is counted by budgets and prices: a reply reporting
counts that are not counts is refused, in the activity, before the run sees it."""

from __future__ import annotations

import pytest
from durable_agents.activities.chat_completions import to_reply
from durable_agents.activities.model_errors import MAX_REPORTED_TOKENS, reported_usage
from durable_agents.activities.responses_api import to_reply as to_responses_reply
from durable_agents.workflows.contract import ERROR_MODEL_REPLY
from openai.types.chat import ChatCompletion
from openai.types.responses import Response
from temporalio.exceptions import ApplicationError


def completion(usage: object) -> ChatCompletion:
    """A reply as the `openai` client builds it from a server's JSON (unvalidated)."""
    return ChatCompletion.construct(
        id="c",
        object="chat.completion",
        created=0,
        model="m",
        choices=[
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": "hi"},
            }
        ],
        usage=usage,
    )


@pytest.mark.parametrize(
    ("usage", "problem"),
    [
        ({"prompt_tokens": -1_000_000, "completion_tokens": 5}, "reports -1000000 input tokens"),
        ({"prompt_tokens": 10**400, "completion_tokens": 5}, "input tokens: not a count"),
        ({"prompt_tokens": 1.5, "completion_tokens": 5}, "input tokens as 1.5: not a count"),
        ({"prompt_tokens": True, "completion_tokens": 5}, "input tokens as true: not a count"),
        ({"prompt_tokens": "9", "completion_tokens": 5}, 'input tokens as "9": not a count'),
        ("lots", "its usage is not an object"),
    ],
    ids=["negative", "past-2**53", "fraction", "boolean", "text", "not-an-object"],
)
def test_a_reply_whose_usage_is_not_counts_is_refused(usage, problem):
    with pytest.raises(ApplicationError) as raised:
        to_reply(completion(usage))
    assert raised.value.type == ERROR_MODEL_REPLY and raised.value.non_retryable
    assert problem in raised.value.message


def test_a_total_below_input_and_output_counts_them():
    # A total of 1 would spend (almost) no budget whatever the call used.
    usage = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 1}
    counted = to_reply(completion(usage)).usage
    assert (counted.input_tokens, counted.output_tokens, counted.total_tokens) == (300, 20, 320)
    absent = to_reply(completion(None)).usage
    assert (absent.model_calls, absent.total_tokens) == (1, 0)


def test_the_responses_api_checks_the_same():
    response = Response.construct(
        id="r",
        object="response",
        created_at=0,
        model="m",
        status="completed",
        output=[],
        usage={"input_tokens": 10, "output_tokens": -5, "total_tokens": 5},
    )
    with pytest.raises(ApplicationError, match="reports -5 output tokens"):
        to_responses_reply(response)


def test_counts_up_to_what_json_numbers_hold_are_taken():
    largest = reported_usage(
        input_tokens=MAX_REPORTED_TOKENS, output_tokens=0, total_tokens=MAX_REPORTED_TOKENS
    )
    assert largest.total_tokens == MAX_REPORTED_TOKENS
    with pytest.raises(ApplicationError, match="reports 9007199254740993 output tokens"):
        reported_usage(input_tokens=0, output_tokens=MAX_REPORTED_TOKENS + 1, total_tokens=0)


def test_a_streamed_piece_that_is_not_text_is_a_broken_stream():
    from durable_agents.activities.model_stream import Deltas
    from durable_agents.activities.responses_api import _take_event
    from openai.types.responses import ResponseOutputItemAddedEvent

    deltas = Deltas.__new__(Deltas)  # its publishing is not what is tested here
    deltas._pending = {}
    deltas.text("fine")
    with pytest.raises(TypeError, match="a streamed piece is int, not text"):
        deltas.text(5)  # type: ignore[arg-type]
    event = ResponseOutputItemAddedEvent.construct(  # as the client builds it, unvalidated
        type="response.output_item.added", item=None, output_index=0, sequence_number=1
    )
    with pytest.raises(AttributeError):  # `_streamed` answers it as an unusable reply
        _take_event(event, {}, deltas)  # type: ignore[arg-type]
