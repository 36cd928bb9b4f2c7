"""Inbox sessions (client/inbox_sessions.py): a cookie opens its caller's session until
it expires or is closed; forged cookies and wrong CSRF tokens find nothing."""

from __future__ import annotations

from datetime import timedelta

from durable_agents.client.gateway_auth import Caller
from durable_agents.client.inbox_sessions import Sessions, csrf_matches

DESK = Caller(name="desk", scopes=frozenset({"read", "decide"}), agents=None)


def test_a_session_lasts_its_lifetime_and_no_longer():
    now = [100.0]
    sessions = Sessions(lifetime=timedelta(minutes=10), clock=lambda: now[0])
    cookie, session = sessions.open(DESK)
    assert sessions.find(cookie) == session and session.caller == DESK
    now[0] += 599
    assert sessions.seconds_left(session) == 1 and sessions.find(cookie) is not None
    now[0] += 1
    assert sessions.find(cookie) is None
    now[0] -= 10  # ended for good, even if the clock were read differently
    assert sessions.find(cookie) is None


def test_forged_closed_and_missing_cookies_find_no_session():
    sessions = Sessions()
    cookie, _ = sessions.open(DESK)
    other, _ = sessions.open(DESK)
    assert cookie != other
    assert sessions.find(None) is None and sessions.find("") is None
    assert sessions.find(cookie + "x") is None
    sessions.close(cookie)
    assert sessions.find(cookie) is None and sessions.find(other) is not None


def test_the_csrf_token_is_the_sessions_own():
    sessions = Sessions()
    _, first = sessions.open(DESK)
    _, second = sessions.open(DESK)
    assert csrf_matches(first, first.csrf)
    assert not csrf_matches(first, second.csrf)
    assert not csrf_matches(first, None) and not csrf_matches(first, "")
