"""Browser sessions of the approval inbox (`agentctl serve`, `GET /inbox`).

A person signs in with their gateway caller's token once (`POST /inbox/session`); the
browser then holds only a session cookie (random, HttpOnly, SameSite=Strict, expiring)
and the gateway keeps the session here, in memory: a restart signs everyone out, and
sign-out ends a session at once. Every state-changing request made with the cookie
must also carry the session's CSRF token in `X-CSRF-Token` (the page reads it from
`GET /inbox/session`, a same-origin read another site cannot make).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from durable_agents.client.gateway_auth import Caller

COOKIE = "inbox_session"
CSRF_HEADER = "x-csrf-token"
LIFETIME = timedelta(hours=8)
"""How long a session lasts from sign-in (a working day); then the person signs in again."""
MAX_SESSIONS = 10_000
"""Open sessions kept at most; past it the oldest is ended (a flood of sign-ins with a
valid token cannot grow memory without bound)."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class Session:
    """A signed-in browser: who, its CSRF token, and when it ends (`clock` seconds)."""

    caller: Caller
    csrf: str
    ends_at: float


class Sessions:
    """The open sessions, by the SHA-256 of their cookie (the cookie itself is not kept)."""

    def __init__(
        self,
        *,
        lifetime: timedelta = LIFETIME,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lifetime = lifetime
        self._clock = clock
        self._open: dict[bytes, Session] = {}

    def open(self, caller: Caller) -> tuple[str, Session]:
        """A new session for `caller`: its cookie value and the session."""
        while len(self._open) >= MAX_SESSIONS:
            self._open.pop(next(iter(self._open)))
        cookie = secrets.token_urlsafe(32)
        session = Session(
            caller=caller,
            csrf=secrets.token_urlsafe(32),
            ends_at=self._clock() + self.lifetime.total_seconds(),
        )
        self._open[_digest(cookie)] = session
        return cookie, session

    def find(self, cookie: str | None) -> Session | None:
        """The open session of a cookie; None for none, an unknown (forged) one or an
        expired one (which is ended)."""
        if not cookie:
            return None
        key = _digest(cookie)
        session = self._open.get(key)
        if session is None:
            return None
        if self._clock() >= session.ends_at:
            del self._open[key]
            return None
        return session

    def close(self, cookie: str | None) -> None:
        """End a session (sign-out); nothing for an unknown cookie."""
        if cookie:
            self._open.pop(_digest(cookie), None)

    def seconds_left(self, session: Session) -> int:
        return max(0, int(session.ends_at - self._clock()))


def csrf_matches(session: Session, given: str | None) -> bool:
    """Whether `given` (the request's `X-CSRF-Token`) is the session's, in constant time."""
    return given is not None and hmac.compare_digest(session.csrf.encode(), given.encode())


def _digest(cookie: str) -> bytes:
    return hashlib.sha256(cookie.encode()).digest()
