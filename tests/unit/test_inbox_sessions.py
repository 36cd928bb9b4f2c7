"""Inbox sessions (client/inbox_sessions.py): a signed cookie opens its caller's
session until it expires or is signed out, on any gateway with the same key (and after
a restart); forged, tampered, expired and signed-out cookies find nothing, nor does a
caller no longer configured; the CSRF token is the session's own."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from durable_agents.client.gateway_auth import Caller
from durable_agents.client.inbox_sessions import (
    SessionConfigError,
    Sessions,
    _b64,
    _unb64,
    configured,
    csrf_matches,
)

DESK = Caller(name="desk", scopes=frozenset({"read", "decide"}), agents=None)
KEY = b"k" * 32


def known(name: str) -> Caller | None:
    return DESK if name == "desk" else None


def test_a_session_lasts_its_lifetime_and_no_longer():
    now = [100.0]
    sessions = Sessions(lifetime=timedelta(minutes=10), clock=lambda: now[0], callers=known)
    cookie, session = sessions.open(DESK)
    assert sessions.find(cookie) == session and session.caller == DESK
    now[0] += 599
    assert sessions.seconds_left(session) == 1 and sessions.find(cookie) is not None
    now[0] += 1
    assert sessions.find(cookie) is None


def test_forged_tampered_closed_and_missing_cookies_find_no_session():
    sessions = Sessions(callers=known)
    cookie, _ = sessions.open(DESK)
    other, _ = sessions.open(DESK)
    assert cookie != other
    assert sessions.find(None) is None and sessions.find("") is None
    assert sessions.find(cookie + "x") is None
    assert sessions.find("v1." + "A" * 2000) is None
    version, body, mac = cookie.split(".")
    fields = json.loads(_unb64(body))
    longer = _b64(json.dumps(fields | {"e": fields["e"] + 10**6}).encode())
    assert sessions.find(f"{version}.{longer}.{mac}") is None  # a longer life: not signed
    boss = _b64(json.dumps(fields | {"c": "boss"}).encode())
    assert sessions.find(f"{version}.{boss}.{mac}") is None
    assert Sessions(callers=known).find(cookie) is None  # another process's random key
    sessions.close(cookie)
    assert sessions.find(cookie) is None and sessions.find(other) is not None


def test_a_caller_no_longer_configured_loses_its_session():
    sessions = Sessions(callers=lambda name: None)
    cookie, _ = sessions.open(DESK)
    assert sessions.find(cookie) is None


def test_a_shared_key_carries_sessions_across_gateways_and_restarts(tmp_path: Path):
    file = tmp_path / "revoked.jsonl"
    first = Sessions(key=KEY, revocations=file, callers=known)
    second = Sessions(key=KEY, revocations=file, callers=known)
    cookie, session = first.open(DESK)
    assert second.find(cookie) == session  # the other gateway, or this one restarted
    other, _ = second.open(DESK)
    second.close(cookie)  # signed out on the second gateway ...
    assert first.find(cookie) is None  # ... refused by the first at once
    assert Sessions(key=KEY, revocations=file, callers=known).find(cookie) is None  # restart
    assert first.find(other) is not None
    with file.open("a") as f:  # a line that is not ours, and one half written
        f.write("not json\n")
        f.write('{"n": "x"')
    assert first.find(other) is not None
    assert Sessions(key=b"o" * 32, revocations=file, callers=known).find(other) is None


def test_the_csrf_token_is_the_sessions_own():
    sessions = Sessions(callers=known)
    _, first = sessions.open(DESK)
    _, second = sessions.open(DESK)
    assert csrf_matches(first, first.csrf)
    assert not csrf_matches(first, second.csrf)
    assert not csrf_matches(first, None) and not csrf_matches(first, "")


def test_the_configuration_is_checked(tmp_path: Path):
    assert not configured({}).shared
    file = str(tmp_path / "revoked.jsonl")
    env = {"AGENT_INBOX_SESSION_KEY": "s" * 32, "AGENT_INBOX_REVOCATIONS": file}
    assert configured(env).shared
    with pytest.raises(SessionConfigError, match="needs AGENT_INBOX_REVOCATIONS"):
        configured({"AGENT_INBOX_SESSION_KEY": "s" * 32})
    with pytest.raises(SessionConfigError, match="shorter than 32"):
        configured(env | {"AGENT_INBOX_SESSION_KEY": "short"})
    with pytest.raises(SessionConfigError, match="goes with AGENT_INBOX_SESSION_KEY"):
        configured({"AGENT_INBOX_REVOCATIONS": file})
    with pytest.raises(SessionConfigError, match="does not exist"):
        configured(env | {"AGENT_INBOX_REVOCATIONS": str(tmp_path / "no" / "file")})
