"""Snapshots that must not load, each with its message; the integrity (signing key) policy."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest
from durable_agents.workflows.snapshot import SnapshotError, dumps, loads, validate
from durable_agents.workflows.state import SCHEMA_VERSION

from tests.support.snapshot_golden import (
    KEY,
    case,
    drop_at,
    edited,
    golden_state,
    golden_text,
    set_at,
    sign,
)

# --- refusals -------------------------------------------------------------------------


_MAJOR, _MINOR = SCHEMA_VERSION.split(".")
NEXT_MINOR = f"{_MAJOR}.{int(_MINOR) + 1}"

_HUGE_NUMBER = "9" * 100_000 + ".0"
_HUGE_TEXT = "2.0 " * 250_000

REFUSALS = [
    case(
        lambda: edited(set_at("schema_version", "9.0")),
        "snapshot schema 9.0 is newer than this reader (2.x); upgrade",
        "newer-major",
    ),
    case(
        lambda: edited(set_at("schema_version", NEXT_MINOR)),
        f"snapshot schema {NEXT_MINOR} is newer than this reader ({SCHEMA_VERSION}); upgrade",
        "newer-minor",
    ),
    case(
        lambda: edited(drop_at("schema_version")),
        "invalid snapshot at $: schema_version is missing",
        "missing-version",
    ),
    *(
        case(
            lambda v=v: edited(set_at("schema_version", v)),
            "invalid snapshot at $.schema_version: expected "
            f'"MAJOR.MINOR" such as "{SCHEMA_VERSION}", got ' + json.dumps(v),
            f"malformed-version-{v}",
        )
        for v in ["1", "2.0.0", "v2.0", "02.0", "2.x", "", " 2.0", "2.0\n", 2.0, 2, None, True]
    ),
    case(
        lambda: edited(set_at("schema_version", ["2.0"])),
        'invalid snapshot at $.schema_version: expected "MAJOR.MINOR" such as '
        f'"{SCHEMA_VERSION}", got ["2.0"]',
        "malformed-version-list",
    ),
    case(
        lambda: edited(set_at("schema_version", {"major": 2, "minor": 0})),
        'invalid snapshot at $.schema_version: expected "MAJOR.MINOR" such as '
        f'"{SCHEMA_VERSION}", got {{"major": 2, "minor": 0}}',
        "malformed-version-object",
    ),
    case(
        lambda: edited(set_at("schema_version", _HUGE_NUMBER)),
        'invalid snapshot at $.schema_version: expected "MAJOR.MINOR" such as '
        f'"{SCHEMA_VERSION}", got "{"9" * 39}... (100004 characters)',
        "huge-version-number",
    ),
    case(
        lambda: edited(set_at("schema_version", _HUGE_TEXT)),
        'invalid snapshot at $.schema_version: expected "MAJOR.MINOR" such as '
        f'"{SCHEMA_VERSION}", got "{_HUGE_TEXT[:39]}... (1000002 characters)',
        "huge-version-text",
    ),
    *(
        case(
            lambda v=v: edited(set_at("schema_version", v)),
            f"snapshot schema {v} was written by a pre-release build; "
            f"this build reads {SCHEMA_VERSION}",
            f"pre-release-{v}",
        )
        for v in ["1.31", "1.0", "0.9", "1.999999"]
    ),
    case(
        lambda: '{\n  "schema_version": "2.0",\n}',
        "snapshot is not valid JSON: "
        "Expecting property name enclosed in double quotes at line 3, column 1",
        "invalid-json",
    ),
    case(
        lambda: "[1]",
        "invalid snapshot at $: a snapshot is a JSON object, not an array",
        "not-an-object",
    ),
    case(
        lambda: '{"schema_version": "2.0", "schema_version": "2.0"}',
        "snapshot is not valid JSON: duplicate key 'schema_version'",
        "duplicate-key",
    ),
    case(
        lambda: '{"schema_version": "2.0", "turn": NaN}',
        "snapshot is not valid JSON: NaN is not a JSON number",
        "nan",
    ),
    case(
        lambda: b'{"schema_version": "2.0\xff"}',
        "snapshot is not UTF-8 text (byte 23)",
        "not-utf8",
    ),
    case(
        lambda: edited(set_at("turn", "3")),
        "invalid snapshot at $.turn: Input should be a valid integer",
        "string-for-int",
    ),
    case(
        lambda: edited(set_at("items.1.tool_calls.0.needs_approval", 1)),
        "invalid snapshot at $.items[1].tool_calls[0].needs_approval: "
        "Input should be a valid boolean",
        "int-for-bool",
    ),
    case(
        lambda: edited(drop_at("items.2.call_id")),
        "invalid snapshot at $.items[2].call_id: required field is missing",
        "missing-field",
    ),
    case(
        lambda: edited(set_at("items.0.sender", "eve")),
        f"invalid snapshot at $.items[0].sender: unknown field (not in schema {SCHEMA_VERSION})",
        "unknown-field",
    ),
    case(
        lambda: edited(set_at("context.weird key", float("nan")), resign=False),
        "snapshot is not valid JSON: NaN is not a JSON number",
        "nan-in-context",
    ),
    case(
        lambda: edited(set_at("items.2.type", "teleport")),
        "invalid snapshot at $.items[2]: unknown item type 'teleport' "
        "(expected 'user_message', 'assistant_message', 'tool_result', 'decision', "
        "'guardrail_check', 'budget_request', 'compaction', 'handoff')",
        "unknown-item-type",
    ),
    case(
        lambda: edited(drop_at("items.2.type")),
        "invalid snapshot at $.items[2]: item has no type",
        "item-without-type",
    ),
    case(
        lambda: edited(set_at("items.3.decision", "maybe")),
        "invalid snapshot at $.items[3].decision: Input should be 'approve', 'reject' or 'answer'",
        "decision-maybe",
    ),
    case(
        lambda: edited(set_at("items.3.always", "yes")),
        "invalid snapshot at $.items[3].always: Input should be a valid boolean",
        "always-yes",
    ),
    case(
        lambda: edited(set_at("items.3.approver", 7)),
        "invalid snapshot at $.items[3].approver: Input should be a valid string",
        "approver-number",
    ),
    case(
        lambda: edited(set_at("items.3.via", "email")),
        "invalid snapshot at $.items[3].via: "
        "Input should be 'signal', 'update', 'rule', 'timeout' or 'evaluator'",
        "via-unknown",
    ),
    case(
        lambda: edited(drop_at("items.6.via")),
        "invalid snapshot at $.items[6].via: required field is missing",
        "via-missing",
    ),
    case(
        lambda: edited(set_at("items.3.arguments", '{"amount": 1}')),
        "invalid snapshot at $.items[3].arguments: Input should be an object",
        "edited-arguments-as-text",
    ),
    case(
        lambda: edited(set_at("refused_decisions.0.always", 0)),
        "invalid snapshot at $.refused_decisions[0].always: Input should be a valid boolean",
        "refused-attempt-int-for-bool",
    ),
    case(
        lambda: edited(set_at("items.3.arguments.amount", 15.0), resign=False),
        "snapshot was modified after export (digest mismatch)",
        "edited-approved-arguments",
    ),
    case(
        lambda: edited(set_at("items.3.decision", "reject"), resign=False),
        "snapshot was modified after export (digest mismatch)",
        "edited-decision",
    ),
    case(
        lambda: edited(set_at("context.customer.tier", "platinum"), resign=False),
        "snapshot was modified after export (digest mismatch)",
        "edited-context",
    ),
    case(
        lambda: edited(set_at("integrity", {"algorithm": "md5", "digest": "0" * 32}), resign=False),
        'invalid snapshot at $.integrity: expected {"algorithm": "sha256" or "hmac-sha256", '
        '"digest": 64 lowercase hex digits}',
        "malformed-integrity",
    ),
    case(
        lambda: edited(drop_at("integrity"), resign=False),
        "invalid snapshot at $: integrity is missing (the snapshot was not made by export)",
        "missing-integrity",
    ),
]


@pytest.mark.parametrize(("make", "message"), REFUSALS)
def test_refused_snapshots_say_what_is_wrong(make: Callable[[], str | bytes], message: str):
    text = make()
    with pytest.raises(SnapshotError) as raised:
        loads(text)
    assert str(raised.value) == message
    with pytest.raises(SnapshotError, match=f"^{re.escape(message)}$"):
        validate(text)


def test_snapshot_error_carries_path_and_problem():
    with pytest.raises(SnapshotError) as raised:
        loads(edited(set_at("items.3.decision", "maybe")))
    assert raised.value.path == "$.items[3].decision"
    assert raised.value.problem == "Input should be 'approve', 'reject' or 'answer'"


def test_odd_keys_in_a_path_are_quoted():
    with pytest.raises(SnapshotError) as raised:
        loads(edited(set_at("agent.tools.0.odd key", 1)))
    assert raised.value.path == "$.agent.tools[0]['odd key']"


# --- integrity policy -----------------------------------------------------------------


def test_signed_snapshot_loads_with_its_key():
    text = dumps(golden_state(), key=KEY)
    assert json.loads(text)["integrity"]["algorithm"] == "hmac-sha256"
    assert loads(text, key=KEY) == golden_state()
    assert dumps(loads(text, key=KEY), key=KEY) == text


@pytest.mark.parametrize(
    ("make", "key", "message"),
    [
        pytest.param(
            golden_text,
            KEY,
            "unsigned snapshot refused: a signing key is configured",
            id="unsigned-with-key",
        ),
        pytest.param(
            lambda: edited(drop_at("integrity"), resign=False),
            KEY,
            "unsigned snapshot refused: a signing key is configured",
            id="no-integrity-with-key",
        ),
        pytest.param(
            lambda: dumps(golden_state(), key=b"another key"),
            KEY,
            "snapshot was modified after export or signed with another key (digest mismatch)",
            id="wrong-key",
        ),
        pytest.param(
            lambda: json.dumps(sign(json.loads(golden_text()) | {"turn": 1}, KEY)),
            b"another key",
            "snapshot was modified after export or signed with another key (digest mismatch)",
            id="edited-and-signed-with-another-key",
        ),
        pytest.param(
            lambda: dumps(golden_state(), key=KEY),
            None,
            "signed snapshot (hmac-sha256) cannot be verified: no signing key is configured",
            id="hmac-without-key",
        ),
    ],
)
def test_signing_key_policy(make: Callable[[], str], key: bytes | None, message: str):
    with pytest.raises(SnapshotError, match=f"^{re.escape(message)}$"):
        loads(make(), key=key)


def test_snapshot_without_integrity_loads_only_when_explicitly_allowed():
    text = edited(drop_at("integrity"), resign=False)
    assert loads(text, allow_unverified=True) == golden_state()
    assert validate(text, allow_unverified=True).endswith("(unverified: no integrity block)")
    with pytest.raises(SnapshotError, match="a signing key is configured"):
        loads(text, key=KEY, allow_unverified=True)


def test_empty_signing_key_is_a_configuration_error():
    with pytest.raises(ValueError, match="non-empty bytes"):
        dumps(golden_state(), key=b"")
