def test_an_event_with_text_no_utf8_holds_is_published_with_u_fffd():
    # A model can escape a lone surrogate in a call's arguments (JSON lets it through):
    # publishing its `tool_proposed` event failed every workflow task of the run once.
    from durable_agents.workflows.event_stream import _encodable

    event = {"seq": 1, "args": {"to\ud800": ["a\udfffb", 1, None]}, "tool": "add"}
    assert _encodable(event) == {
        "seq": 1,
        "args": {"to\ufffd": ["a\ufffdb", 1, None]},
        "tool": "add",
    }
