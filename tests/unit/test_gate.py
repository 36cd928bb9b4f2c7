"""The activity gate's keys and tags (durable_agents.gate): hostile configuration is
refused in one line, a tag holds only for what it was made over, rotation keeps old
tags valid while their key is listed."""

from __future__ import annotations

import base64

import pytest
from durable_agents.workflows.payloads import ToolRequest

from durable_agents import gate

FIELDS = ["activity", "default", "run-1", "rid-1", "run_tool", "d" * 64]
KEY = base64.b64encode(b"k" * 32).decode()
"""A fixed key: parameters must be the same in every pytest-xdist process."""


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "holds no keys"),
        ("g1", "each entry must be KEY_ID:BASE64_KEY"),
        ("g1:!!", "gate key 'g1' is not valid base64"),
        ("g1:AAAAAAAA", "gate key 'g1' is 6 bytes; it needs at least 32"),
        (f"g1:{KEY},g1:{KEY}", "given twice"),
        (f"bad id:{KEY}", "bad gate key id"),
    ],
    ids=["empty", "no-key", "not-base64", "short", "twice", "bad-id"],
)
def test_hostile_gate_keys_are_refused_in_one_line(text, why):
    with pytest.raises(gate.GateConfigError, match=why) as refused:
        gate.GateKeys.parse(text)
    secret = text.split(":")[-1][:20]
    assert "\n" not in str(refused.value)
    assert len(secret) < 8 or secret not in str(refused.value)  # never the key material


def test_no_keys_at_all_says_how_to_make_one():
    with pytest.raises(gate.GateConfigError, match=r"python -m durable_agents\.gate new-key"):
        gate.required_keys({})
    assert gate.required_keys({gate.ENV: "dev"}).is_development


def test_a_tag_holds_only_for_its_own_fields_and_keys():
    keys = gate.GateKeys.parse(gate.new_key_entry("g1"))
    made = gate.tag(keys, FIELDS)
    assert gate.check(keys, made, FIELDS) is None
    for n in range(len(FIELDS)):
        altered = [*FIELDS[:n], FIELDS[n] + "x", *FIELDS[n + 1 :]]
        assert gate.check(keys, made, altered) == "its gate tag does not match what it asks"
    joined = ["activity\ndefault", *FIELDS[2:]]  # fields cannot slide into each other
    assert gate.check(keys, gate.tag(keys, joined), FIELDS) is not None
    other = gate.GateKeys.parse(gate.new_key_entry("g1"))  # same id, another key
    assert gate.check(other, made, FIELDS) == "its gate tag does not match what it asks"
    assert gate.check(keys, {"k": "g9", "t": made["t"]}, FIELDS) is not None
    assert gate.check(keys, None, FIELDS) == "no gate tag"
    assert gate.check(keys, {"k": "g1", "t": 5}, FIELDS) is not None


def test_a_rotated_key_still_verifies_what_it_tagged_while_it_is_listed():
    old, new = gate.new_key_entry("g1"), gate.new_key_entry("g2")
    before = gate.GateKeys.parse(old)
    made = gate.tag(before, FIELDS)
    rotated = gate.GateKeys.parse(f"{new},{old}")
    assert rotated.current == "g2" and gate.check(rotated, made, FIELDS) is None
    assert gate.check(gate.GateKeys.parse(new), made, FIELDS) is not None  # dropped: refused


def test_a_field_at_its_default_digests_as_if_it_were_absent():
    """A worker of a build whose input model gained a defaulted field agrees with one
    of the build before (the field is not sent, and reads as its default)."""
    request = ToolRequest(agent="a", tool="t", call_id="c", arguments="{}", idempotency_key="k")
    assert gate.digest([request]) == gate.digest(
        [{"agent": "a", "tool": "t", "call_id": "c", "arguments": "{}", "idempotency_key": "k"}]
    )


def test_an_ids_secret_part_is_the_named_keys_alone_and_a_dropped_key_makes_none():
    """Ids a run starts carry `~KEY.PART` (`workflows.secret_ids`): the part depends on
    every field and on the key named, the same on every call (replay compares child ids),
    and keeps its key after a rotation; a key no longer held makes no id at all."""
    old, new = gate.new_key_entry("g1"), gate.new_key_entry("g2")
    before = gate.GateKeys.parse(old)
    fields = ["child", "default", "run-1", "run-1/c1"]
    part = gate.id_part(before, "g1", fields)
    assert len(part) == gate.ID_PART_HEX and int(part, 16) >= 0
    assert gate.id_part(before, "g1", fields) == part
    assert gate.id_part(gate.GateKeys.parse(f"{new},{old}"), "g1", fields) == part  # rotated
    assert gate.id_part(gate.GateKeys.parse(f"{new},{old}"), "g2", fields) != part
    for n in range(len(fields)):
        altered = [*fields[:n], fields[n] + "x", *fields[n + 1 :]]
        assert gate.id_part(before, "g1", altered) != part
    dev = gate.GateKeys.development()  # the published key makes other ids
    assert gate.id_part(dev, "dev", fields) != part
    with pytest.raises(gate.GateConfigError, match="'g1', which this run's workflow ids"):
        gate.id_part(gate.GateKeys.parse(new), "g1", fields)
