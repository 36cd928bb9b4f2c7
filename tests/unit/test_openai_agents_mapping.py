"""The mapping between OpenAI Agents SDK run states and ours (client/openai_agents_*.py),
on run states the real `openai-agents` package wrote (tests/support/openai_agents_states.py),
and the package itself reading what export writes. No Temporal, no network."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from agents import RunState as SDKRunState
from durable_agents.client import render
from durable_agents.client.openai_agents_export import NotExportable, export_state
from durable_agents.client.openai_agents_import import (
    SUPPORTED_SCHEMA_VERSIONS,
    ImportRefused,
    import_state,
    read_document,
)
from durable_agents.workflows import loop
from durable_agents.workflows.agent_spec import ModelPrice
from durable_agents.workflows.input_items import InputList
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Decision,
    ToolCall,
    ToolResult,
    UserMessage,
)
from durable_agents.workflows.state import RunState, RunStatus
from pydantic import TypeAdapter

from durable_agents.testing import ScriptedModelServer
from tests.support import agents
from tests.support.openai_agents_states import SCENARIOS, fixture, fixture_json, sdk_agent

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
SPEC = agents.assistant.spec()


def imported(document: dict[str, Any] | str, *, lossy: bool = False, spec=SPEC) -> RunState:
    text = document if isinstance(document, str) else json.dumps(document)
    return import_state(
        read_document(text),
        spec,
        run_id="imported-1",
        now=NOW,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        lossy=lossy,
    )


def refusal(document: dict[str, Any] | str, **options) -> str:
    with pytest.raises(ImportRefused) as refused:
        imported(document, **options)
    return str(refused.value)


def conversation(state: RunState) -> list[tuple]:
    """What the model is told, without what a conversion makes up (times, usage, ids)."""
    found: list[tuple] = []
    for item in state.items:
        if isinstance(item, UserMessage):
            found.append(("user", item.content))
        elif isinstance(item, AssistantMessage):
            calls = [(c.call_id, c.tool, json.loads(c.arguments)) for c in item.tool_calls]
            summaries = [r.summary for r in item.reasoning]
            found.append(("assistant", item.content, calls, summaries))
        elif isinstance(item, ToolResult):
            found.append(("result", item.call_id, item.content))
    return found


def waiting(state: RunState) -> list[tuple[str, str, str]]:
    answered = {i.call_id for i in state.items if isinstance(i, ToolResult)}
    last = [i for i in state.items if isinstance(i, AssistantMessage)][-1]
    return [
        (c.call_id, c.tool, c.arguments)
        for c in last.tool_calls
        if c.needs_approval and c.call_id not in answered
    ]


# --- import -----------------------------------------------------------------------


def test_an_interrupted_sdk_run_becomes_a_run_waiting_for_the_same_call():
    state = imported(fixture("interrupted-chat"))  # the file's text, as read
    assert state.status is RunStatus.AWAITING_APPROVAL and state.turn == 1
    assert conversation(state) == [
        ("user", "Add 2 and 3, then email a@b.c"),
        (
            "assistant",
            "On it.",
            [
                ("call_add", "add", {"a": 2, "b": 3}),
                ("call_mail", "send_email", {"to": "a@b.c", "body": "hello"}),
            ],
            [],
        ),
        ("result", "call_add", "5"),
    ]
    assert waiting(state) == [("call_mail", "send_email", '{"to": "a@b.c", "body": "hello"}')]
    assert state.agent == SPEC  # the worker's agent, not anything of the file's
    assert (state.usage.model_calls, state.usage.input_tokens, state.usage.output_tokens) == (
        1,
        40,
        12,
    )
    record = state.imported
    assert record is not None and (record.schema_version, record.agent, record.turn) == (
        "1.21",
        "assistant",
        1,
    )
    assert record.sha256 == hashlib.sha256(fixture("interrupted-chat").encode()).hexdigest()
    assert record.decisions == [] and record.dropped == []


def test_the_responses_api_state_keeps_its_reasoning():
    state = imported(fixture_json("interrupted-responses"))
    [reply] = [i for i in state.items if isinstance(i, AssistantMessage)]
    assert [r.summary for r in reply.reasoning] == [["add first, then the email"]]
    assert reply.reasoning[0].id.startswith("rs_") and reply.reasoning[0].encrypted_content
    assert state.usage.reasoning_tokens == 5
    assert (
        conversation(state)[1][1:3]
        == conversation(imported(fixture_json("interrupted-chat")))[1][1:3]
    )


def test_an_earlier_exchange_in_the_input_list_is_part_of_the_conversation():
    state = imported(fixture_json("second-message"))
    assert conversation(state) == [
        ("user", "hi"),
        ("assistant", "Hello! How can I help?", [], []),
        ("user", "Email b@c.d"),
        ("assistant", None, [("call_b", "send_email", {"to": "b@c.d", "body": "hi"})], []),
    ]
    assert state.turn == 2 and waiting(state)[0][0] == "call_b"


def test_decisions_in_the_file_are_recorded_never_applied():
    state = imported(fixture_json("decided"))
    assert [(d.call_id, d.decision, d.message) for d in state.imported.decisions] == [
        ("call_m1", "approve", None),
        ("call_m2", "reject", "not to that address"),
    ]
    assert not any(isinstance(i, Decision) for i in state.items)
    assert [w[0] for w in waiting(state)] == ["call_m1", "call_m2"]  # both ask again


def test_an_sdk_always_is_recorded_as_a_rule_and_grants_nothing():
    document = fixture_json("interrupted-chat")
    scope = "9e" * 32
    document["context"]["function_tool_approvals"] = [
        {
            "agent": {"name": "assistant"},
            "tool_key": "send_email",
            "decision": {"approved": True, "rejected": [], "sticky_scope": scope},
        }
    ]
    state = imported(document)
    assert [(d.call_id, d.tool, d.decision) for d in state.imported.decisions] == [
        (None, "send_email", "approve")
    ]
    assert waiting(state)[0][0] == "call_mail"


def test_a_call_the_sdk_did_not_ask_about_still_waits_if_our_agent_says_so():
    document = fixture_json("interrupted-chat")
    document["current_step"]["data"]["interruptions"] = []  # forged: "nothing to approve"
    state = imported(document)
    assert state.status is RunStatus.AWAITING_APPROVAL and waiting(state)[0][0] == "call_mail"


def test_what_only_the_sdk_runs_is_refused_with_its_path_or_dropped_and_recorded():
    why = refusal(fixture_json("hosted-tool"))
    assert "$.original_input[1]: web_search_call" in why and "--lossy" in why
    state = imported(fixture_json("hosted-tool"), lossy=True)
    assert [(d.where, d.what.split(":")[0]) for d in state.imported.dropped] == [
        ("$.original_input[1]", "web_search_call")
    ]
    assert waiting(state)[0][0] == "call_w"


def test_a_handoff_is_refused_until_runs_have_several_agents():
    why = refusal(fixture_json("handoff"))
    assert "$.generated_items[0]: handoff_call_item" in why
    state = imported(fixture_json("handoff"), lossy=True)
    assert len(state.imported.dropped) == 2 and waiting(state)[0][0] == "call_hm"
    assert state.imported.agent == "assistant"  # the agent the SDK had handed over to


def test_a_call_of_a_tool_our_agent_lacks_is_refused():
    tally = agents.tally.spec()  # tools: add only
    why = refusal(fixture_json("interrupted-chat"), spec=tally)
    assert "a call of tool 'send_email', which agent 'tally' here does not have" in why
    state = imported(fixture_json("interrupted-chat"), spec=tally, lossy=True)
    assert [
        c.tool for i in state.items if isinstance(i, AssistantMessage) for c in i.tool_calls
    ] == ["add"]
    assert state.status is RunStatus.RUNNING  # nothing waits: the model is asked next


def test_a_finished_sdk_run_is_refused_there_is_nothing_to_go_on_with():
    assert "the SDK run has ended" in refusal(fixture_json("finished"))


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("1.22", "version '1.22' is unknown: this build reads 1.0 to 1.21"),
        ("2.0", "version '2.0' is unknown"),
        (1.21, "missing: not an SDK run state"),
        (None, "missing: not an SDK run state"),
    ],
)
def test_an_unknown_schema_version_is_refused(version, expected):
    document = fixture_json("interrupted-chat")
    document["$schemaVersion"] = version
    assert expected in refusal(document)


def test_every_version_the_sdk_reads_is_read():
    assert SUPPORTED_SCHEMA_VERSIONS == tuple(sorted(_sdk_versions(), key=_minor))
    for version in ("1.0", "1.9", "1.14", "1.20"):
        document = fixture_json("interrupted-chat")
        document["$schemaVersion"] = version
        assert imported(document).imported.schema_version == version


def _sdk_versions() -> set[str]:
    from agents import run_state

    return set(run_state.SUPPORTED_SCHEMA_VERSIONS)


def _minor(version: str) -> int:
    return int(version.split(".")[1])


@pytest.mark.parametrize(
    "text",
    ["", "{", "[]", '"a string"', "null", "\udcff", '{"$schemaVersion": "1.21"'],
)
def test_text_that_is_not_a_run_state_is_refused(text):
    assert "cannot import" in refusal(text) or "not JSON" in refusal(text)


HOSTILE: list[tuple[str, Any, str]] = [
    ("current_turn", -1, "$.current_turn"),
    ("current_turn", True, "$.current_turn"),
    ("max_turns", 0, "$.max_turns"),
    ("current_agent", 7, "$.current_agent"),
    ("original_input", {"role": "user"}, "$.original_input"),
    ("original_input", [None], "$.original_input[0]"),
    ("original_input", [{"role": "user", "content": 5}], "$.original_input[0].content"),
    ("original_input", [{"role": "pirate", "content": "arr"}], "unknown role"),
    ("generated_items", "x", "$.generated_items"),
    ("generated_items", [{"type": "tool_call_item"}], "$.generated_items[0]"),
    ("context", [], "$.context"),
    ("current_step", "boom", "$.current_step"),
    ("pending_input", {}, "$.pending_input"),
]


@pytest.mark.parametrize(("key", "value", "where"), HOSTILE)
def test_hostile_fields_are_refused_with_their_path(key, value, where):
    document = fixture_json("interrupted-chat")
    document[key] = value
    assert where in refusal(document, lossy=True)


def test_an_interruption_for_a_call_no_reply_made_is_refused():
    document = fixture_json("interrupted-chat")
    forged = copy.deepcopy(document["current_step"]["data"]["interruptions"][0])
    forged["raw_item"]["call_id"] = "call_nobody_made"
    document["current_step"]["data"]["interruptions"].append(forged)
    assert "waits for call 'call_nobody_made', not a call of the last reply" in refusal(document)


def test_an_output_for_a_call_no_item_made_is_refused():
    document = fixture_json("interrupted-chat")
    document["pending_input"] = [
        {"type": "function_call_output", "call_id": "call_ghost", "output": "x"}
    ]
    assert "an output for call 'call_ghost', which no item made" in refusal(document)


def test_a_second_output_for_one_call_is_refused():
    document = fixture_json("interrupted-chat")
    [output] = [i for i in document["generated_items"] if i["type"] == "tool_call_output_item"]
    document["generated_items"].append(copy.deepcopy(output))
    assert "a second output for call 'call_add'" in refusal(document)


def test_a_user_message_after_a_call_without_output_is_refused():
    document = fixture_json("interrupted-chat")
    said = {"type": "input_item", "raw_item": {"role": "user", "content": "and also"}}
    document["generated_items"].append({**said, "agent": {"name": "assistant"}})
    assert "comes after call 'call_mail' (send_email), which has no output" in refusal(document)


def test_input_queued_after_the_interruption_waits_for_the_calls():
    document = fixture_json("interrupted-chat")
    document["pending_input"] = [{"role": "user", "content": "and also b@c.d"}]
    state = imported(document)
    assert state.queued_messages == ["and also b@c.d"]
    assert waiting(state)[0][0] == "call_mail"
    back = imported(export_state(state))
    assert back.queued_messages == ["and also b@c.d"]


def test_a_flood_of_recorded_decisions_is_counted_not_kept():
    document = fixture_json("interrupted-chat")
    ids = [f"call_{n}" for n in range(250)]
    document["context"]["function_tool_approvals"] = [
        {"agent": {"name": "assistant"}, "tool_key": "send_email", "decision": {"approved": ids}}
    ]
    record = imported(document).imported
    assert len(record.decisions) == 200 and record.decisions_omitted == 50


def test_usage_no_run_reaches_is_refused():
    document = fixture_json("interrupted-chat")
    document["context"]["usage"]["total_tokens"] = 2**63
    assert "$.usage.total_tokens" in refusal(document)


def test_a_duplicate_call_id_cannot_hide_an_output_even_when_lossy():
    document = fixture_json("interrupted-chat")
    [output] = [i for i in document["generated_items"] if i["type"] == "tool_call_output_item"]
    twin = {"type": "function_call", "call_id": "call_add", "name": "nope", "arguments": "{}"}
    at = document["generated_items"].index(output)
    document["generated_items"].insert(at, {"type": "tool_call_item", "raw_item": twin})
    assert "a second call with id 'call_add'" in refusal(document, lossy=True)


def test_deep_nesting_is_refused_not_crashed_on():
    document = fixture_json("interrupted-chat")
    deep: Any = {}
    for _ in range(100):
        deep = {"a": deep}
    document["context"]["context"] = deep
    assert "nested deeper than 64 levels" in refusal(document)
    assert "nested too deeply to read" in refusal("[" * 100_000 + "]" * 100_000)


def test_refusals_show_no_terminal_escapes_and_stay_short():
    document = fixture_json("interrupted-chat")
    document["original_input"] = [
        {"role": "user", "content": [{"type": "\x1b]0;PWNED\x07\x1b[2J"}]},
        {"role": "user", "content": "x"},
    ]
    document["context"]["approvals"] = {"\x1b[31m" + "t" * 100_000: {"approved": "x"}}
    why = refusal(document)
    assert "\x1b" not in why and "\\u{1b}" in why
    assert max(len(line) for line in why.splitlines()) < 500


def test_an_sdk_run_that_ended_on_a_tool_output_is_refused():
    document = fixture_json("interrupted-chat")
    document["current_step"] = None
    document["generated_items"] = [
        i for i in document["generated_items"] if i["raw_item"].get("call_id") != "call_mail"
    ]
    assert "the SDK run has ended" in refusal(document)


def test_an_interruption_for_a_call_that_has_its_output_is_named_so():
    document = fixture_json("interrupted-chat")
    waiting_item = document["current_step"]["data"]["interruptions"][0]
    waiting_item["raw_item"]["call_id"] = "call_add"
    assert "waits for call 'call_add', which already has an output" in refusal(document)


@pytest.mark.parametrize("context", [[1, 2], "text", 5, True])
def test_a_tool_context_that_is_not_an_object_is_refused(context):
    document = fixture_json("interrupted-chat")
    document["context"]["context"] = context
    assert "$.context.context: not an object or null" in refusal(document)


def test_nan_is_not_json():
    text = fixture("interrupted-chat").replace('"context": null', '"context": {"x": NaN}', 1)
    assert "NaN is not a JSON value" in refusal(text)


def test_an_imported_run_costs_its_tokens_at_the_workers_price():
    priced = SPEC.model_copy(update={"price": ModelPrice(input=1.0, output=2.0)})
    usage = imported(fixture_json("interrupted-chat"), spec=priced).usage
    assert usage.cost == pytest.approx((40 * 1.0 + 12 * 2.0) / 1_000_000)


def test_a_user_message_of_only_dropped_parts_is_left_out():
    document = fixture_json("interrupted-chat")
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    document["original_input"] = [
        {"role": "user", "content": [image]},
        {"role": "user", "content": "Add 2 and 3, then email a@b.c"},
    ]
    state = imported(document, lossy=True)
    assert [i.content for i in state.items if isinstance(i, UserMessage)] == [
        "Add 2 and 3, then email a@b.c"
    ]
    assert [d.where for d in state.imported.dropped] == ["$.original_input[0].content[0]"]


def test_decisions_of_the_wrong_shape_are_refused():
    document = fixture_json("interrupted-chat")
    document["context"]["function_tool_approvals"] = [
        {"tool_key": "send_email", "decision": {"approved": "yes"}},
        {"tool_key": 5, "decision": {}},
        "nope",
    ]
    why = refusal(document)
    assert "approved: neither true, false nor a list of call ids" in why
    assert "function_tool_approvals[1]: not a decision" in why
    assert "function_tool_approvals[2]: not an object" in why


# --- export -----------------------------------------------------------------------


def test_export_needs_a_run_waiting_for_approval():
    state = imported(fixture_json("interrupted-chat"))
    state.items.append(ToolResult(call_id="call_mail", content="sent"))
    state.status = RunStatus.RUNNING
    with pytest.raises(NotExportable, match="waits for no approval"):
        export_state(state)
    state.items.append(AssistantMessage(turn=2, content="done", at=NOW))
    state.status, state.turn, state.final_output = RunStatus.COMPLETED, 2, "done"
    with pytest.raises(NotExportable, match=r"has ended \(completed\)"):
        export_state(state)


@pytest.mark.parametrize("name", ["interrupted-chat", "interrupted-responses", "second-message"])
async def test_the_sdk_loads_what_export_writes_with_the_same_waiting_calls(name):
    state = imported(fixture_json(name))
    text = json.dumps(export_state(state))
    with ScriptedModelServer() as server:  # never called: loading is offline
        loaded = await SDKRunState.from_string(sdk_agent(server), text)
    assert [(i.call_id, i.name, i.arguments) for i in loaded.get_interruptions()] == waiting(state)
    assert server.requests == []


def test_round_trip_keeps_conversation_waiting_calls_and_decisions():
    state = imported(fixture_json("second-message"))
    # a decision made here on a call that then ran, and one rejected
    state.items[-1].tool_calls.append(
        ToolCall(call_id="call_c", tool="send_email", arguments="{}", needs_approval=True)
    )
    rejected = Decision(
        call_id="call_c", decision="reject", approver="ops", reason="no", via="signal", at=NOW
    )
    state.items += [
        rejected,
        ToolResult(call_id="call_c", content="Tool call rejected by ops: no.", is_error=True),
    ]
    state = RunState.model_validate(state.model_dump(mode="json"))
    back = imported(export_state(state))
    assert conversation(back) == conversation(state)
    assert waiting(back) == waiting(state)
    assert [(d.call_id, d.decision, d.message) for d in back.imported.decisions] == [
        ("call_c", "reject", "no")
    ]
    assert back.context == state.context and back.usage.input_tokens == state.usage.input_tokens


@pytest.mark.parametrize("name", [n for n in SCENARIOS if n not in ("finished",)])
def test_every_fixture_the_sdk_wrote_imports_with_lossy(name):
    assert imported(fixture_json(name), lossy=True).status is RunStatus.AWAITING_APPROVAL


# --- hostile files (an audit's repros) ------------------------------------------------


def _calls(count: int, tool: str = "send_email") -> list[dict[str, Any]]:
    raw = {"type": "function_call", "name": tool, "arguments": "{}"}
    return [
        {"type": "tool_call_item", "raw_item": {**raw, "call_id": f"c{n}"}} for n in range(count)
    ]


def test_a_reply_of_more_calls_than_a_run_makes_is_refused():
    # 5,000 calls in one reply made a run whose first task outran its deadline for good.
    document = fixture_json("interrupted-chat")
    document["generated_items"] = _calls(loop.MAX_CALLS_PER_REPLY + 1)
    document["current_step"] = {"type": "next_step_run_again"}
    assert "$.generated_items[64].raw_item: a reply's call past the 64th" in refusal(document)
    document["generated_items"] = _calls(loop.MAX_CALLS_PER_REPLY)
    assert len(waiting(imported(document))) == loop.MAX_CALLS_PER_REPLY


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda d: d["generated_items"][0].update(type=["x"]), None),  # an unknown wrapper
        (
            lambda d: d["current_step"]["data"]["interruptions"][0]["raw_item"].update(
                call_id=["call_mail"]
            ),
            "waits for a call whose id is not text",
        ),
    ],
)
def test_values_of_the_wrong_type_are_refused_not_raised(edit, expected):
    document = fixture_json("interrupted-chat")
    edit(document)
    if expected is None:
        assert waiting(imported(document))  # read as its raw item says
    else:
        assert expected in refusal(document)


def test_a_lone_surrogate_is_carried_escaped_or_refused_as_what_it_is():
    document = fixture_json("interrupted-chat")
    document["current_agent"] = {"name": "\ud800"}
    assert imported(document).imported.agent == "\\ud800"
    document = fixture_json("interrupted-chat")
    document["original_input"] = [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}, {"type": "\ud800img"}]}
    ]
    [dropped] = imported(document, lossy=True).imported.dropped
    assert dropped.what == "a '\\ud800img' part (only text is carried over)"
    document = fixture_json("interrupted-chat")
    document["original_input"] = "hi \ud800"
    assert "holds text JSON cannot carry (a lone surrogate" in refusal(document)


def test_a_dropped_output_ends_its_reply_as_a_kept_one_does():
    document = fixture_json("interrupted-chat")
    said = lambda text: {  # noqa: E731
        "type": "message_output_item",
        "raw_item": {"role": "assistant", "content": [{"type": "output_text", "text": text}]},
    }
    gone = {"type": "function_call", "name": "web_lookup", "arguments": "{}", "call_id": "x1"}
    output = {"type": "function_call_output", "call_id": "x1", "output": "r"}
    document["generated_items"] = [
        said("Turn one."),
        {"type": "tool_call_item", "raw_item": gone},
        {"type": "tool_call_output_item", "raw_item": output},
        said("Turn two."),
        *_calls(1),
    ]
    document["current_step"] = {"type": "next_step_run_again"}
    state = imported(document, lossy=True)
    replies = [i for i in state.items if isinstance(i, AssistantMessage)]
    assert [(r.turn, r.content) for r in replies] == [(1, "Turn one."), (2, "Turn two.")]
    assert state.turn == 2


def test_what_was_dropped_past_the_kept_entries_is_counted_where_people_read_it():
    document = fixture_json("interrupted-chat")
    web = {"type": "tool_call_item", "raw_item": {"type": "web_search_call", "id": "w"}}
    document["generated_items"] = [web] * 250 + document["generated_items"]
    record = imported(document, lossy=True).imported
    assert (len(record.dropped), record.dropped_omitted) == (200, 50)
    line = render._imported(imported(document, lossy=True))[0]
    assert line.endswith("250 items dropped")


@pytest.mark.parametrize("key", ["current_turn", "max_turns"])
def test_a_count_no_reader_can_hold_is_refused(key):
    document = fixture_json("interrupted-chat")
    document[key] = 10**200
    assert f"$.{key}" in refusal(document)


async def test_a_message_given_as_parts_is_exported_with_its_parts():
    """A user message with an image, and one queued, reach the SDK's RunState as
    Responses input parts (the SDK loads the file)."""
    state = imported(fixture_json("interrupted-chat"))
    parts = [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "and this"},
                {"type": "input_image", "image_url": "https://example.com/a.png"},
            ],
        }
    ]
    given = TypeAdapter(InputList).validate_python(parts)
    state.items[0] = loop.input_items.user_messages(given)[0]
    loop.receive_message(state, given, now=NOW)
    document = export_state(state)
    expected = [
        {"type": "input_text", "text": "and this"},
        {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
    ]
    assert document["original_input"][0]["content"] == expected
    assert document["pending_input"] == [{"role": "user", "content": expected}]
    with ScriptedModelServer() as server:  # never called: loading is offline
        loaded = await SDKRunState.from_string(sdk_agent(server), json.dumps(document))
    assert loaded._original_input[0]["content"] == expected
