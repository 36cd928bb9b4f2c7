"""MCP servers' tools as an agent's tools (workflows.mcp_tools) and how a worker reaches
the servers (durable_agents.mcp_connections), without a server: names, the allow-list,
the approval rule (the agent's word first, then the annotations), results as the model
reads them, and malformed AGENT_MCP_SERVERS files."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest
from durable_agents.workflows.agent_spec import AgentSpec, MCPServer, RetrySpec, ToolSpec
from durable_agents.workflows.approval_policy import arguments_problem
from durable_agents.workflows.mcp_tools import (
    outcome,
    remember_leaving,
    returning,
    stricter,
    tool_specs,
    with_mcp_tools,
)
from durable_agents.workflows.state import MCPToolsLeft, RunState

from durable_agents.mcp_connections import MCPConfigError, parse

READ_ONLY = {
    "name": "lookup",
    "inputSchema": {"type": "object"},
    "annotations": {"readOnlyHint": True},
}
DESTRUCTIVE = {
    "name": "delete",
    "description": "Delete it.",
    "annotations": {"destructiveHint": True},
}
PLAIN = {"name": "ping", "title": "Ping"}


def names_and_approval(server: MCPServer, listed=(READ_ONLY, DESTRUCTIVE, PLAIN)):
    return {t.name: t.needs_approval for t in tool_specs(server, list(listed))}


def test_annotations_decide_only_where_the_agent_says_nothing():
    assert names_and_approval(MCPServer(name="s")) == {
        "lookup": False,  # read-only
        "delete": True,  # destructive
        "ping": True,  # unannotated: the server claims nothing
    }
    assert names_and_approval(MCPServer(name="s", needs_approval=True)) == dict.fromkeys(
        ("lookup", "delete", "ping"), True
    )
    assert names_and_approval(MCPServer(name="s", needs_approval=False)) == dict.fromkeys(
        ("lookup", "delete", "ping"), False
    )
    listed = names_and_approval(MCPServer(name="s", needs_approval=["look*"]))
    assert listed == {"lookup": True, "delete": True, "ping": True}


def test_allow_list_prefix_schema_and_description():
    server = MCPServer(name="s", allow=["lookup", "pi?g"], prefix="s_")
    tools = tool_specs(server, [READ_ONLY, DESTRUCTIVE, PLAIN])
    assert [(t.name, t.mcp_server, t.mcp_tool) for t in tools] == [
        ("s_lookup", "s", "lookup"),
        ("s_ping", "s", "ping"),
    ]
    assert tools[1].parameters == {"type": "object"} and tools[1].description == "Ping"


@pytest.mark.parametrize("name", ["has space", "dot.ted", "x" * 65, "", "emoji🙂"])
def test_a_name_no_model_accepts_is_refused_with_the_way_out(name):
    with pytest.raises(ValueError, match="leave it out with allow"):
        tool_specs(MCPServer(name="s"), [{"name": name}])


def test_a_clash_with_the_agents_own_tool_is_refused():
    spec = AgentSpec(
        name="a", instructions="", model="m", mcp_servers=[MCPServer(name="s")],
        tools=[ToolSpec(name="lookup", description="", parameters={})],
    )  # fmt: skip
    with pytest.raises(ValueError, match="give the server a prefix"):
        with_mcp_tools(spec, {"s": [READ_ONLY]})
    prefixed = spec.model_copy(update={"mcp_servers": [MCPServer(name="s", prefix="s_")]})
    assert [t.name for t in with_mcp_tools(prefixed, {"s": [READ_ONLY]}).tools] == [
        "lookup",
        "s_lookup",
    ]


def test_results_as_the_model_reads_them():
    text = {"content": [{"type": "text", "text": "ok"}], "structuredContent": {"a": 1}}
    assert outcome("c", "t", text).content == "ok"  # the text, not the same data twice
    data = {"content": [], "structuredContent": {"a": 1}}
    assert outcome("c", "t", data).content == '{"a": 1}'
    image = {"content": [{"type": "image", "data": "AAAA" * 1000, "mimeType": "image/png"}]}
    assert outcome("c", "t", image).content == "[image image/png, about 3,000 bytes, not shown]"
    link = {"content": [{"type": "resource_link", "name": "r", "uri": "file:///x"}]}
    assert outcome("c", "t", link).content == "[resource r at file:///x]"
    failed = outcome("c", "t", {"content": [{"type": "text", "text": "nope"}], "isError": True})
    assert failed.is_error and failed.content == "Error: tool 't' reported an error: nope"
    odd = outcome("c", "t", {"content": [{"type": "mystery"}, "not a block"], "isError": "yes"})
    assert not odd.is_error and odd.content == "[mystery content, not shown]"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "a JSON object of server names"),
        ({"s": {}}, 'give either "command" (a list) or "url"'),
        ({"s": {"command": ["x"], "url": "http://h"}}, 'give either "command"'),
        ({"s": {"command": []}}, '"command" is a non-empty list of strings'),
        ({"s": {"command": "python server.py"}}, '"command" is a non-empty list'),
        ({"s": {"url": "file:///etc/passwd"}}, '"url" is an http(s) URL'),
        ({"s": {"url": "http://h", "headers": {"A": 1}}}, '"headers" is an object of strings'),
        (
            {"s": {"url": "http://h", "headers": {"A": "$MISSING"}}},
            "names $MISSING, which is not set",
        ),
        ({"s": {"url": "http://h", "auth": "x"}}, "unknown field 'auth'"),
    ],
)
def test_a_malformed_servers_file_is_refused_with_the_reason(document, message):
    with pytest.raises(
        MCPConfigError, match=message.replace("$", r"\$").replace("(", r"\(").replace(")", r"\)")
    ):
        parse(document, {})


def test_credentials_come_from_the_workers_environment():
    found = parse(
        {"s": {"url": "https://h/mcp", "headers": {"Authorization": "$TOKEN"}},
         "t": {"command": ["srv"], "env": {"KEY": "$KEY", "MODE": "ro"}}},
        {"TOKEN": "Bearer x", "KEY": "k"},
    )  # fmt: skip
    assert found["s"].headers == {"Authorization": "Bearer x"}
    assert found["t"].command == ("srv",) and found["t"].env == {"KEY": "k", "MODE": "ro"}


def test_only_tools_that_cannot_act_twice_are_tried_again_by_default():
    listed = tool_specs(MCPServer(name="s"), [
        READ_ONLY, DESTRUCTIVE, PLAIN, {"name": "put", "annotations": {"idempotentHint": True}},
    ])  # fmt: skip
    assert {t.name: t.mcp_repeatable for t in listed} == {
        "lookup": True, "delete": False, "ping": False, "put": True,
    }  # fmt: skip
    server = MCPServer(name="s").settings()
    tools = {t.name: server.for_tool(t.mcp_repeatable).retry.maximum_attempts for t in listed}
    assert tools == {"lookup": 3, "delete": 1, "ping": 1, "put": 3}
    chosen = MCPServer(name="s", retry=RetrySpec(maximum_attempts=5)).settings()
    assert chosen.for_tool(False).retry.maximum_attempts == 5  # the agent's word


def test_a_resume_can_add_an_approval_never_take_one_away():
    before = AgentSpec(name="a", instructions="", model="m", tools=tool_specs(
        MCPServer(name="s"), [DESTRUCTIVE, READ_ONLY]))  # fmt: skip
    flipped = {**DESTRUCTIVE, "annotations": {"readOnlyHint": True}}  # the server's new claim
    fresh = before.model_copy(
        update={"tools": tool_specs(MCPServer(name="s"), [flipped, READ_ONLY])}
    )
    assert [t.needs_approval for t in fresh.tools] == [False, False]
    assert [t.needs_approval for t in stricter(fresh, before).tools] == [True, False]


def test_the_budget_requests_name_and_too_many_tools_are_refused():
    spec = AgentSpec(name="a", instructions="", model="m", mcp_servers=[MCPServer(name="s")])
    with pytest.raises(ValueError, match="the name of a budget extension request"):
        with_mcp_tools(spec, {"s": [{"name": "extend_budget"}]})
    many = [{"name": f"t{n}"} for n in range(129)]
    with pytest.raises(ValueError, match="129 tools, more than model APIs take"):
        with_mcp_tools(spec, {"s": many})


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"x": True}},
        {"type": "object", "properties": {"x": {"minimum": "ten", "enum": "abc"}}},
        {
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/x"}},
            "$defs": {"x": {"anyOf": [{"$ref": "#/$defs/x"}]}},
        },
        {"type": "object", "properties": [], "required": "x"},
    ],
)
def test_an_odd_server_schema_never_breaks_the_check_of_edited_arguments(schema):
    tool = ToolSpec(name="t", description="", parameters=schema)
    assert arguments_problem(tool, {"x": 2}) is None  # what it cannot read, it leaves


def test_agentctl_tools_shows_each_rule_of_an_approval_policy():
    from datetime import timedelta

    from durable_agents.client.render import approval_rule, tools
    from durable_agents.workflows.agent_spec import ApprovalCondition, ApprovalPolicy

    policy = ApprovalPolicy(
        when=[ApprovalCondition(field="amount", op=">", value=100)],
        approvers=["ann", "bob"],
        require_signature=True,
        allow_always=False,
        limits=[ApprovalCondition(field="amount", op="<=", value=1000)],
        timeout=timedelta(hours=1),
    )
    assert approval_rule(policy) == (
        "approval when amount > 100 · approvers ann, bob · signed · no always"
        " · limits amount <= 1000 · 1:00:00, then reject"
    )
    assert approval_rule(ApprovalPolicy()) == "approval"
    spec = with_mcp_tools(
        AgentSpec(
            name="desk\x1b[31m",  # a terminal escape in a name is shown harmless
            instructions="",
            model="m",
            mcp_servers=[MCPServer(name="t", approval=policy)],
        ),
        {"t": [READ_ONLY, DESTRUCTIVE]},
    )
    lines = tools(spec).splitlines()
    assert "\x1b" not in tools(spec)
    assert lines[1:] == [
        "  lookup · MCP t/lookup · no approval",
        "  delete · MCP t/delete · " + approval_rule(policy),
    ]


def _session(*contents: str, listed: int | None = 1):
    from durable_agents.workflows.run_items import UserMessage
    from durable_agents.workflows.state import RunState

    from tests.support.snapshot_golden import at

    spec = with_mcp_tools(
        AgentSpec(name="a", instructions="", model="m", mcp_servers=[MCPServer(name="t")]),
        {"t": [READ_ONLY, DESTRUCTIVE]},
    )
    return RunState(
        run_id="r", agent=spec, max_turns=5, session=True, tools_listed_messages=listed,
        items=[UserMessage(content=c) for c in contents], created_at=at(0), updated_at=at(0),
    )  # fmt: skip


def test_tools_are_listed_again_for_a_message_that_came_after_the_last_listing():
    from durable_agents.workflows.audit import ToolListing
    from durable_agents.workflows.mcp_tools import listing_due
    from durable_agents.workflows.run_items import GuardrailCheck, UserMessage
    from durable_agents.workflows.state import ToolsRefresh

    from tests.support.snapshot_golden import at

    assert listing_due(_session("hi")) is None  # listed at the start
    assert listing_due(_session("hi", "again")) == "session_message"
    assert listing_due(_session("hi", "again", listed=None)) is None  # a 1.15 run: on request
    checked = _session("hi", "again")  # an input guardrail checked the message already
    checked.items.append(GuardrailCheck(kind="input", name="g", tripped=False, at=at(1)))
    assert listing_due(checked) == "session_message"
    fed_back = _session("hi")
    fed_back.items.append(UserMessage(content="not valid JSON", feedback=True))
    assert listing_due(fed_back) is None  # the run's own feedback is no new message
    asked = _session("hi", listed=None)
    asked.tools_refresh = ToolsRefresh(by="ann", at=at(1))
    assert listing_due(asked) == "requested"
    # once a turn: a request made while this turn's listing ran waits for the next turn
    asked.tool_listings = [ToolListing(at=at(1), turn=asked.turn, reason="requested")]
    assert listing_due(asked) is None
    asked.turn += 1
    assert listing_due(asked) == "requested"
    asked.agent = asked.agent.model_copy(update={"mcp_servers": []})
    assert listing_due(asked) is None  # no MCP servers, nothing to list


def test_a_listing_records_what_changed_and_never_takes_an_approval_away():
    from durable_agents.workflows.audit import LISTINGS_KEPT
    from durable_agents.workflows.mcp_tools import record_listing, without_mcp_tools
    from durable_agents.workflows.state import ToolsRefresh

    from tests.support.snapshot_golden import at

    state = _session("hi", "again")
    asked = state.tools_refresh = ToolsRefresh(by="ann", at=at(1))
    base = without_mcp_tools(state.agent)
    assert [t.name for t in state.agent.tools] == ["lookup", "delete"] and base.tools == []
    # the read-only tool now says it is destructive; `delete` is gone; `ping` is new
    lookup = {**READ_ONLY, "description": "Looks.", "annotations": {"readOnlyHint": False}}
    listed = with_mcp_tools(base, {"t": [lookup, PLAIN]})
    record_listing(state, listed, "requested", asked=asked, now=at(2))
    [done] = state.tool_listings
    assert (done.reason, done.by, done.turn) == ("requested", "ann", 0)
    assert (done.added, done.removed, done.changed) == (["ping"], ["delete"], ["lookup"])
    assert state.agent.tool("lookup").needs_approval is True
    assert state.tools_refresh is None and state.tools_listed_messages == 2
    # a tool dropped and brought back as read-only: its annotations are not trusted now
    back = {**DESTRUCTIVE, "annotations": {"readOnlyHint": True}}
    record_listing(
        state, with_mcp_tools(base, {"t": [READ_ONLY, back]}), "requested", asked=None, now=at(3)
    )
    assert state.agent.tool("delete").needs_approval is True
    assert state.agent.tool("lookup").needs_approval is True  # asked once: asks still
    # ... unless the agent's configuration says the server's tools need none
    trusted = base.model_copy(update={"mcp_servers": [MCPServer(name="t", needs_approval=False)]})
    record_listing(
        state, with_mcp_tools(trusted, {"t": [PLAIN]}), "requested", asked=None, now=at(4)
    )
    assert state.agent.tool("ping").needs_approval is False
    # a request made while a listing ran is kept for the next one
    later = state.tools_refresh = ToolsRefresh(by="bob", at=at(5))
    record_listing(state, "down", "requested", asked=asked, now=at(6))
    assert state.tools_refresh is later and state.tool_listings[-1].error == "down"
    # a server that cannot be listed: the run keeps its tools
    kept = list(state.agent.tools)
    record_listing(state, "cannot list: down", "session_message", asked=None, now=at(7))
    assert state.agent.tools == kept
    for n in range(LISTINGS_KEPT + 5):
        record_listing(state, "down", "requested", asked=None, now=at(8 + n))
    assert len(state.tool_listings) == LISTINGS_KEPT


def test_a_listing_revokes_always_rules_on_tools_that_changed_or_went_away():
    from durable_agents.workflows.mcp_tools import record_listing, without_mcp_tools
    from durable_agents.workflows.run_items import AssistantMessage, Decision, ToolCall, ToolResult

    from tests.support.snapshot_golden import at

    state = _session("hi")
    calls = [
        ToolCall(call_id="d1", tool="delete", arguments="{}", needs_approval=True),
        ToolCall(call_id="l1", tool="lookup", arguments="{}"),
    ]
    state.items += [
        AssistantMessage(turn=1, content=None, tool_calls=calls, at=at(1)),
        Decision(
            call_id="d1", decision="approve", approver="ann", always=True, via="signal", at=at(2)
        ),
        ToolResult(call_id="d1", content="ok"),
        ToolResult(call_id="l1", content="ok"),
    ]
    state.turn = 1
    changed = {**DESTRUCTIVE, "description": "Delete it, and its backups."}
    listed = with_mcp_tools(without_mcp_tools(state.agent), {"t": [READ_ONLY, changed]})
    record_listing(state, listed, "session_message", asked=None, now=at(3))
    assert state.tool_listings[-1].changed == ["delete"] and state.revoked_rules == ["d1"]


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n and the rest").decode()


def test_an_image_is_kept_only_when_asked_and_only_of_a_type_and_size_models_read():
    from durable_agents.workflows.run_items import MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS

    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    result = {"content": [{"type": "text", "text": "look"}, image]}
    described = outcome("c", "t", result)
    assert described.attachments == [] and "not shown" in described.content
    kept = outcome("c", "t", result, keep_images=True)
    assert kept.content == "look\n[image image/png, 21 bytes: image 1]"
    assert [(a.mime_type, a.data, a.size) for a in kept.attachments] == [("image/png", PNG, 21)]
    no_room = outcome("c", "t", result, keep_images=True, room=20)  # the run holds enough
    assert no_room.attachments == [] and "not shown" in no_room.content
    too_big = base64.b64encode(b"x" * (MAX_ATTACHMENT_BYTES + 1)).decode()
    hostile = [
        {"type": "image", "data": PNG, "mimeType": "image/svg+xml"},  # scripts: not kept
        {"type": "image", "data": "not base64!", "mimeType": "image/png"},
        {"type": "image", "data": too_big, "mimeType": "image/png"},
        {"type": "image", "data": 42, "mimeType": "image/png"},
        {"type": "image", "data": PNG, "mimeType": "image/jpeg"},  # a PNG called a JPEG
        {"type": "audio", "data": PNG, "mimeType": "audio/wav"},
    ]
    none_kept = outcome("c", "t", {"content": hostile}, keep_images=True)
    assert none_kept.attachments == [] and none_kept.content.count("not shown") == 6
    many = outcome("c", "t", {"content": [image] * (MAX_ATTACHMENTS + 2)}, keep_images=True)
    assert len(many.attachments) == MAX_ATTACHMENTS and many.content.count("not shown") == 2
    failed = outcome("c", "t", {"content": [image], "isError": True}, keep_images=True)
    assert failed.is_error and len(failed.attachments) == 1


def test_calls_that_ran_at_once_keep_their_images_within_the_runs_room_together(monkeypatch):
    # Each call of a batch was given the whole room when it ended: together they
    # could keep that much each.
    from datetime import UTC, datetime

    from durable_agents.workflows import loop, mcp_tools
    from durable_agents.workflows.payloads import AgentInput

    now = datetime(2026, 11, 26, tzinfo=UTC)

    image = {"type": "image", "data": PNG, "mimeType": "image/png"}
    calls = [outcome(f"c{n}", "t", {"content": [image, image]}, keep_images=True) for n in range(3)]
    spec = AgentSpec(name="a", instructions="", model="m")
    state = loop.new_state(spec, AgentInput(agent="a", input="x"), run_id="r", now=now)
    monkeypatch.setattr(mcp_tools, "MAX_RUN_IMAGE_BYTES", 100)  # room for two calls' two
    kept = mcp_tools.within_image_room(state, calls)
    assert [len(k.attachments) for k in kept] == [2, 2, 0]
    assert kept[2].content.endswith(
        "[its 2 image(s) were not kept: the run keeps at most 100 bytes of images]"
    )
    assert [k.call_id for k in kept] == ["c0", "c1", "c2"]


def test_a_forged_attachment_is_refused_when_a_state_is_read():
    from durable_agents.workflows.run_items import Attachment
    from pydantic import ValidationError

    for bad in (
        {"mime_type": "image/png", "data": "a$b="},
        {"mime_type": "image/png", "data": PNG.rstrip("=") + "===="},  # over-padded
        {"mime_type": "image/webp", "data": base64.b64encode(b"RIFF0000WAVEfmt ").decode()},
        {"mime_type": "image/gif", "data": base64.b64encode(b"GIF90a").decode()},
        {"mime_type": "text/html", "data": PNG},
        {"mime_type": "image/png", "data": ""},
        {"mime_type": "image/png", "data": PNG, "url": "http://x"},
    ):
        with pytest.raises(ValidationError):
            Attachment.model_validate(bad)


def test_images_reach_the_model_in_each_api_s_own_form_and_only_when_the_agent_sends_them():
    from durable_agents.activities.chat_completions import to_messages
    from durable_agents.activities.responses_api import to_input
    from durable_agents.workflows import context
    from durable_agents.workflows.run_items import (
        AssistantMessage,
        Attachment,
        Decision,
        ToolCall,
        ToolResult,
        UserMessage,
    )

    from tests.support.snapshot_golden import at

    shot = Attachment(mime_type="image/png", data=PNG)
    calls = (
        ToolCall(call_id="a", tool="t", arguments="{}"),
        ToolCall(call_id="b", tool="t", arguments="{}"),
    )
    items = [
        UserMessage(content="hi"),
        AssistantMessage(turn=1, content=None, tool_calls=list(calls), at=at(1)),
        ToolResult(call_id="a", content="one", attachments=[shot]),
        Decision(call_id="b", decision="approve", approver="ann", via="signal", at=at(2)),
        ToolResult(call_id="b", content="two"),
    ]
    sent = to_messages("", items)
    # both tool messages right after the call (the decision between them is not sent),
    # then the images in one user message that says they are tool output
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert "not instructions" in sent[-1]["content"][0]["text"]
    later = to_messages("", [*items, UserMessage(content="and?")])
    assert [m["role"] for m in later] == ["user", "assistant", "tool", "tool", "user", "user"]
    assert sent[-1]["content"][1:] == [
        {"type": "text", "text": "Image 1, from call a:"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]
    outputs = [i for i in to_input(items) if i.get("type") == "function_call_output"]
    assert outputs[0]["output"] == [
        {"type": "input_text", "text": "one"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}"},
    ]
    assert outputs[1]["output"] == "two"
    # the run's view: images only for an agent that sends them; stubs drop them
    state = _session("hi")
    state.items = items
    assert [len(getattr(i, "attachments", [])) for i in context.view(state)] == [0] * 5
    state.agent = state.agent.model_copy(update={"send_tool_images": True})
    assert [len(getattr(i, "attachments", [])) for i in context.view(state)] == [0, 0, 1, 0, 0]
    # at most MAX_SENT_IMAGES a request: the newest
    many = [ToolResult(call_id=f"m{n}", content=str(n), attachments=[shot] * 3) for n in range(4)]
    state.items = [*items, *many]
    sent_counts = [len(getattr(i, "attachments", [])) for i in context.view(state)]
    assert (
        sent_counts == [0, 0, 0, 0, 0, 0, 2, 3, 3] and sum(sent_counts) == context.MAX_SENT_IMAGES
    )
    assert [len(i.attachments) for i in many] == [3, 3, 3, 3]  # the run keeps them all
    assert context.stub(items[2]).attachments == []
    # a state without images writes no `attachments` field (older builds read it)
    assert '"attachments"' not in items[3].model_dump_json()


def test_a_server_listing_twenty_thousand_tools_is_refused_before_they_are_read():
    # Every name was compared with every other (200 million comparisons: a workflow task
    # past its deadline on every retry); now counted first, and refused.
    spec = AgentSpec(name="a", instructions="", model="m", mcp_servers=[MCPServer(name="evil")])
    many = [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(20_000)]
    with pytest.raises(ValueError, match="would have 20000 tools, more than model APIs take"):
        with_mcp_tools(spec, {"evil": many})
    narrowed = MCPServer(name="evil", allow=["t1", "t2?"])  # allow counts, not the listing
    kept = with_mcp_tools(spec.model_copy(update={"mcp_servers": [narrowed]}), {"evil": many})
    assert [t.name for t in kept.tools] == ["t1", *(f"t2{n}" for n in range(10))]


def test_a_name_with_a_line_break_after_it_is_not_a_whole_name():
    server = MCPServer(name="tickets")
    listed = [{"name": "delete\n", "inputSchema": {"type": "object"}}]
    with pytest.raises(ValueError, match="which a model cannot be given"):
        tool_specs(server, listed)


def _run_of(agent: AgentSpec) -> RunState:
    """A run that has `agent` now."""
    at = datetime(2026, 11, 26, tzinfo=UTC)
    return RunState(run_id="r", agent=agent, max_turns=5, created_at=at, updated_at=at)


def test_a_handoff_back_keeps_what_the_agents_mcp_tools_asked_when_it_left():
    server = MCPServer(name="tickets")
    read_only = {"readOnlyHint": True}
    first = [
        {"name": "lookup", "inputSchema": {"type": "object"}, "annotations": read_only},
        {"name": "delete", "inputSchema": {"type": "object"}},
    ]
    spec = AgentSpec(name="desk", instructions="", model="m", mcp_servers=[server])
    state = _run_of(with_mcp_tools(spec, {"tickets": first}))
    remember_leaving(state)
    # The server now says delete is read-only, and lists a new read-only tool.
    later = [{**t, "annotations": read_only} for t in first] + [
        {"name": "purge", "inputSchema": {"type": "object"}, "annotations": read_only}
    ]
    back = returning(with_mcp_tools(spec, {"tickets": later}), state)
    assert {t.name: t.needs_approval for t in back.tools} == {
        "lookup": False,  # read-only then: still runs without a person
        "delete": True,  # asked then: still asks
        "purge": True,  # new since: its annotations are not trusted mid-run
    }
    trusting = MCPServer(name="tickets", needs_approval=False)  # the agent's own rule
    relaxed = spec.model_copy(update={"mcp_servers": [trusting]})
    assert (
        not returning(with_mcp_tools(relaxed, {"tickets": later}), state)
        .tool("purge")
        .needs_approval
    )
    elsewhere = spec.model_copy(update={"name": "other"})  # never left: listed as at a start
    assert (
        returning(with_mcp_tools(elsewhere, {"tickets": later}), state)
        .tool("delete")
        .needs_approval
        is False
    )


def test_a_forged_empty_name_in_what_an_agent_left_is_refused_with_the_snapshot():
    with pytest.raises(ValueError, match="at least 1 character"):
        MCPToolsLeft.model_validate({"agent": "desk", "tools": [""]})


def test_a_handoff_of_an_agent_to_itself_keeps_what_its_tools_ask_now():
    server = MCPServer(name="tickets")
    first = [{"name": "delete", "inputSchema": {"type": "object"}}]
    spec = AgentSpec(name="desk", instructions="", model="m", mcp_servers=[server])
    state = _run_of(with_mcp_tools(spec, {"tickets": first}))
    lying = [{**first[0], "annotations": {"readOnlyHint": True}}]
    again = returning(with_mcp_tools(spec, {"tickets": lying}), state)  # nothing left yet
    assert again.tool("delete").needs_approval
