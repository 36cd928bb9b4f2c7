"""`get_state` answers of bounded size (workflows.state_pages) and the client that puts
them together (client.state_reader), without Temporal: the reader is given the
workflow's own answer function as its query."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from durable_agents.client.state_reader import StateReadError, read_state
from durable_agents.workflows import loop, state_pages
from durable_agents.workflows.agent_spec import AgentSpec, ToolSpec
from durable_agents.workflows.audit import DecisionAttempt
from durable_agents.workflows.payloads import AgentInput, ModelReply, ModelToolCall, ToolOutcome
from durable_agents.workflows.state import RunState
from durable_agents.workflows.state_pages import StateQueryError, answer, parse_query
from pydantic_core import to_json

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def run(outputs: list[str], *, queued: list[str] = ()) -> RunState:
    spec = AgentSpec(
        name="a",
        instructions="be brief",
        model="m",
        tools=[ToolSpec(name="read", description="", parameters={"type": "object"})],
    )
    state = loop.new_state(spec, AgentInput(agent="a", input="start"), run_id="r", now=T0)
    for n, output in enumerate(outputs):
        call = ModelToolCall(call_id=f"c{n}", tool="read", arguments="{}")
        loop.record_model_reply(state, ModelReply(tool_calls=[call]), now=T0)
        loop.record_tool_outcomes(state, [ToolOutcome(call_id=f"c{n}", content=output)], now=T0)
    state.queued_messages = list(queued)
    return state


class Queries:
    """The workflow's answers to the reader's queries, counted and recorded."""

    def __init__(self, state: RunState) -> None:
        self.state, self.asked, self.sizes = state, [], []

    async def __call__(self, argument: dict[str, Any] | None) -> dict[str, Any]:
        self.asked.append(argument)
        reply = answer(self.state, parse_query(argument))
        self.sizes.append(len(to_json(reply)))
        return to_json_roundtrip(reply)


def to_json_roundtrip(value: Any) -> Any:
    import json

    return json.loads(to_json(value))


def read(queries: Queries) -> RunState:
    return asyncio.run(read_state(queries))


def test_a_small_state_is_answered_whole_as_before_pages():
    state = run(["short"] * 3)
    reply = answer(state, parse_query(None))
    assert reply == state.model_dump(mode="json")
    assert "page" not in reply
    queries = Queries(state)
    assert read(queries) == state
    assert queries.asked == [None]


def test_a_five_megabyte_output_comes_as_a_preview_and_is_read_back_in_chunks():
    state = run(["B" * 5_000_000, "after"])
    reply = answer(state, parse_query(None))
    assert len(to_json(reply)) <= state_pages.DEFAULT_PAGE_BYTES
    page = reply["page"]
    assert page["next_item"] is None and page["total_items"] == len(state.items)
    [cut] = page["cut"]
    index = next(
        n for n, i in enumerate(state.items) if getattr(i, "content", "") == "B" * 5_000_000
    )
    assert cut["pointer"] == f"/items/{index}/content" and cut["chars"] == 5_000_000
    assert reply["items"][index]["content"] == "B" * state_pages.PREVIEW_CHARS
    queries = Queries(state)
    assert read(queries) == state
    assert len(queries.asked) == 1 + 6  # the first answer, then chunks of ~997,000 characters
    assert max(queries.sizes[1:]) <= state_pages.MAX_PAGE_BYTES


def test_many_items_come_in_pages_each_within_the_bound():
    state = run([f"output {n} " + "x" * 400 for n in range(300)])
    first = answer(state, parse_query(None))
    assert first["page"]["next_item"] < len(state.items) and first["page"]["cut"] == []
    seen, start = list(first["items"]), first["page"]["next_item"]
    while start is not None:
        reply = answer(state, parse_query({"from_item": start, "max_bytes": 5_000}))
        assert len(to_json(reply)) <= 5_000
        assert set(reply) == {"items", "page"} and reply["page"]["cut"] == []  # no header
        seen += reply["items"]
        start = reply["page"]["next_item"]
    assert seen == state.model_dump(mode="json")["items"]
    assert read(Queries(state)) == state


def test_only_a_pages_first_item_is_cut_the_others_wait_whole():
    state = run(["y" * 3_000 for _ in range(60)])
    queries = Queries(state)
    assert asyncio.run(read_state(queries, page_bytes=14_000)) == state
    assert not [a for a in queries.asked if a and "text" in a]  # nothing needed cutting
    assert max(queries.sizes) <= 14_000


def test_many_short_strings_in_the_header_are_cut_as_a_list():
    state = run(["ok"])
    attempt = DecisionAttempt(
        call_id="c", decision="approve", approver="mallory", reason="r" * 150,
        refused_because="no such call", at=T0,
    )  # fmt: skip
    state.refused_decisions = [attempt.model_copy(update={"call_id": f"c{n}"}) for n in range(50)]
    reply = answer(state, parse_query(None))
    assert len(to_json(reply)) <= state_pages.DEFAULT_PAGE_BYTES
    [cut] = reply["page"]["cut"]
    assert (cut["pointer"], cut["kind"], reply["refused_decisions"]) == (
        "/refused_decisions",
        "json",
        [],
    )
    assert read(Queries(state)) == state


def test_cutting_a_string_that_saves_less_than_its_entry_costs_is_not_done():
    state = run(["ok"], queued=["q" * 230] * 55)  # 15 KB: over the bound, by short strings
    assert len(state.model_dump_json()) > state_pages.DEFAULT_PAGE_BYTES
    reply = answer(state, parse_query(None))
    assert len(to_json(reply)) <= state_pages.DEFAULT_PAGE_BYTES
    assert [c["pointer"] for c in reply["page"]["cut"]] == ["/queued_messages"]
    assert read(Queries(state)) == state


def test_a_large_header_is_cut_too():
    state = run(["ok"], queued=["q" * 30_000] * 3)
    reply = answer(state, parse_query(None))
    assert len(to_json(reply)) <= state_pages.DEFAULT_PAGE_BYTES
    assert [c["pointer"] for c in reply["page"]["cut"]] == ["/queued_messages"]  # the list
    assert read(Queries(state)) == state


def test_text_in_many_scripts_is_cut_and_read_back_exactly():
    text = "é漢🙂/~" * 100_000
    state = run([text])
    queries = Queries(state)
    assert read(queries) == state
    chunks = [a for a in queries.asked if a and "text" in a]
    assert chunks and all(a["text"].startswith("/items/") for a in chunks)
    small = answer(state, parse_query({"text": chunks[0]["text"], "max_bytes": 4_000}))
    assert len(to_json(small)) <= 4_000
    assert text.startswith(small["page"]["text"]["text"])


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ({"from_item": -1}, "from_item: Input should be greater than or equal to 0"),
        ({"from_item": "3"}, "from_item: Input should be a valid integer"),
        ({"max_bytes": 10}, "max_bytes: Input should be greater than or equal to 4000"),
        ({"max_bytes": 10**12}, "max_bytes: Input should be less than or equal to 1000000"),
        ({"from_item": 0, "callId": 1}, "callId: Extra inputs are not permitted"),
        ([1, 2], "(argument): Input should be a valid dictionary"),
        ("items", "(argument): Input should be a valid dictionary"),
        ({"text": ""}, "text: String should have at least 1 character"),
        ({"text": "/" + "a" * 2_000}, "text: String should have at most 1000 characters"),
        ({"from_item": 99}, "from_item 99 is past the run's 3 items"),
        ({"text": "items/0/content"}, "text must be a JSON pointer"),
        ({"text": "/items/77/content"}, "names nothing in the run's state"),
        ({"text": "/items/0/secret"}, "names nothing in the run's state"),
        ({"text": "/turn"}, "names a int, not a string or a list"),
        ({"text": "/items/01/content"}, "names nothing in the run's state"),
        ({"text": "/items/\u00b2/content"}, "names nothing in the run's state"),
        ({"text": "/items/\u0661/content"}, "names nothing in the run's state"),
        ({"state_sha256": "abc"}, "state_sha256: String should match pattern"),
        ({"text": "/items/-1"}, "names nothing in the run's state"),
        ({"text": "/items/0/content", "offset": 10**9}, "offset 1000000000 is past the value"),
    ],
)
def test_hostile_arguments_are_refused_with_the_reason(argument, message):
    state = run(["x"])
    with pytest.raises(StateQueryError) as caught:
        answer(state, parse_query(argument))
    assert message in str(caught.value)


def test_a_run_that_moves_on_is_read_again_and_a_restless_one_refused():
    state = run(["B" * 50_000])
    queries = Queries(state)
    moved = {"left": 1}

    async def moving(argument):
        if argument is not None and moved["left"]:
            moved["left"] -= 1
            queries.state = run(["B" * 50_000, "new"])
        return await queries(argument)

    assert asyncio.run(read_state(moving)) == queries.state
    assert queries.asked.count(None) == 2

    async def restless(argument):
        if argument is not None:
            queries.state = run(["B" * 50_000, str(len(queries.asked))])
        return await queries(argument)

    with pytest.raises(StateReadError, match="changed while it was read, 3 times"):
        asyncio.run(read_state(restless))


def test_an_altered_chunk_is_refused():
    state = run(["B" * 50_000])
    queries = Queries(state)

    async def altering(argument):
        reply = await queries(argument)
        if argument and "text" in argument:
            reply["page"]["text"]["text"] = "C" + reply["page"]["text"]["text"][1:]
        return reply

    with pytest.raises(StateReadError, match="does not match its digest"):
        asyncio.run(read_state(altering, page_bytes=14_000))


def test_a_faulty_worker_cannot_keep_the_reader_looping():
    state = run(["B" * 50_000])
    queries = Queries(state)

    async def stuck_text(argument):
        reply = await queries(argument)
        if argument and "text" in argument:
            reply["page"]["text"]["next_offset"] = argument["offset"]  # never moves on
        return reply

    with pytest.raises(StateReadError, match="does not fit"):
        asyncio.run(read_state(stuck_text, page_bytes=14_000))
    many = run([f"{n} " + "x" * 400 for n in range(100)])
    queries = Queries(many)

    async def empty_pages(argument):
        reply = await queries(argument)
        if argument and "from_item" in argument:
            reply["items"] = []
            reply["page"]["next_item"] = argument["from_item"] + 1
        return reply

    with pytest.raises(StateReadError, match="wrong number of items"):
        asyncio.run(read_state(empty_pages))
    assert len(queries.asked) == 2


def test_a_value_gone_since_the_first_page_means_reading_again_not_failing():
    state = run(["ok"], queued=["q" * 30_000])
    queries = Queries(state)
    moved = {"left": 1}

    async def delivered(argument):
        if argument is not None and moved["left"]:
            moved["left"] -= 1
            queries.state = run(["ok", "the queued message, delivered"])
        return await queries(argument)

    assert asyncio.run(read_state(delivered)) == queries.state
