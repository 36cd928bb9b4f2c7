"""Browser sessions of the approval inbox (`agentctl serve`, `GET /inbox`).

A person signs in with their gateway caller's token once (`POST /inbox/session`); the
browser then holds only a session cookie (HttpOnly, SameSite=Strict, expiring). The
cookie is **signed**, not stored: `v1.<payload>.<HMAC-SHA256>`, the payload naming the
caller, a random nonce and the end of the session. Any gateway holding the same key
(`AGENT_INBOX_SESSION_KEY`) accepts it, so sessions survive a restart and work across
gateways behind one load balancer. The caller is looked up by name on every request:
a caller removed from `AGENT_GATEWAY_TOKENS`, or whose scopes shrank, loses them at
once. Without a configured key each process makes a random one: a restart signs
everyone out, as one process's sessions should.

Sign-out ends a session at once by **revoking its nonce** until the session would have
ended: in the gateway's memory when the key is its own (random: nothing outlives the
process anyway), and in a revocation file every gateway reads
(`AGENT_INBOX_REVOCATIONS`, one line per sign-out, appended) when the key is
configured, so a signed-out cookie is refused after a restart and by every gateway
sharing the file. The trade-off, chosen over a session store: no database to run, a
cookie anyone copied stays valid until its end unless signed out, and the file must be
shared (a volume) by gateways that share the key; it only grows by one line per
sign-out and expired lines are skipped when it is read.

Every state-changing request made with the cookie must also carry the session's CSRF
token in `X-CSRF-Token` (an HMAC of the nonce: the page reads it from `GET
/inbox/session`, a same-origin read another site cannot make).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from durable_agents.client.gateway_auth import Caller

from durable_agents.dataplane.secret_env import SecretEnvError, secret_from_env

COOKIE = "inbox_session"
CSRF_HEADER = "x-csrf-token"
LIFETIME = timedelta(hours=8)
"""How long a session lasts from sign-in (a working day); then the person signs in again."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
KEY_ENV = "AGENT_INBOX_SESSION_KEY"
"""The key that signs session cookies (or `AGENT_INBOX_SESSION_KEY_FILE`), at least
`MIN_KEY_CHARS` characters; shared by the gateways that should accept each other's."""
REVOCATIONS_ENV = "AGENT_INBOX_REVOCATIONS"
"""The file of signed-out sessions, required with `KEY_ENV`, shared like the key."""
MIN_KEY_CHARS = 32
MAX_COOKIE = 1024
"""A longer cookie is not one of ours: refused before any decoding."""

Lookup = Callable[[str], Caller | None]


class SessionConfigError(ValueError):
    """The inbox's session settings cannot be used: the message names the variable."""


@dataclass(frozen=True)
class Session:
    """A signed-in browser: who, its CSRF token, its nonce and when it ends (`clock`
    seconds)."""

    caller: Caller
    csrf: str
    ends_at: float
    nonce: str = ""


class Sessions:
    """Opens, checks and ends signed sessions (see the module docstring)."""

    def __init__(
        self,
        *,
        key: bytes | None = None,
        revocations: Path | None = None,
        lifetime: timedelta = LIFETIME,
        clock: Callable[[], float] = time.time,
        callers: Lookup | None = None,
    ) -> None:
        if key is not None and revocations is None:
            raise SessionConfigError(
                f"a configured session key ({KEY_ENV}) needs {REVOCATIONS_ENV}=FILE, shared "
                "by every gateway with that key, so a sign-out holds across restarts"
            )
        self.lifetime = lifetime
        self.shared = key is not None
        """Whether the key is configured (sessions outlive this process)."""
        self._key = key if key is not None else secrets.token_bytes(32)
        self._clock = clock
        self._callers = callers
        self._revoked = _Revoked(revocations)

    def bind(self, callers: Lookup) -> None:
        """Look callers up with `callers` (by name), unless given when made."""
        if self._callers is None:
            self._callers = callers

    def open(self, caller: Caller) -> tuple[str, Session]:
        """A new session for `caller`: its cookie value and the session."""
        nonce = _b64(secrets.token_bytes(16))
        ends_at = int(self._clock() + self.lifetime.total_seconds())
        body = _b64(json.dumps({"c": caller.name, "n": nonce, "e": ends_at}).encode())
        cookie = f"v1.{body}.{_b64(self._mac(b'session:' + body.encode()))}"
        return cookie, Session(caller, self._csrf(nonce), float(ends_at), nonce)

    def find(self, cookie: str | None) -> Session | None:
        """The open session of a cookie; None for none, a forged, expired or signed-out
        one, or one of a caller no longer configured."""
        if not cookie or len(cookie) > MAX_COOKIE or not cookie.isascii():
            return None
        version, _, rest = cookie.partition(".")
        body, _, mac = rest.partition(".")
        expected = _b64(self._mac(b"session:" + body.encode()))
        if version != "v1" or not hmac.compare_digest(mac.encode(), expected.encode()):
            return None
        try:
            fields = json.loads(_unb64(body))
            name, nonce, ends_at = fields["c"], fields["n"], fields["e"]
        except (ValueError, KeyError, TypeError):
            return None
        if not (isinstance(name, str) and isinstance(nonce, str) and isinstance(ends_at, int)):
            return None
        if self._clock() >= ends_at or self._revoked.has(nonce, now=self._clock()):
            return None
        caller = self._callers(name) if self._callers is not None else None
        if caller is None:
            return None
        return Session(caller, self._csrf(nonce), float(ends_at), nonce)

    def close(self, cookie: str | None) -> None:
        """End a session (sign-out): its nonce is refused until it would have ended."""
        session = self.find(cookie)
        if session is not None:
            self._revoked.add(session.nonce, session.ends_at, now=self._clock())

    def seconds_left(self, session: Session) -> int:
        return max(0, int(session.ends_at - self._clock()))

    def _csrf(self, nonce: str) -> str:
        return _b64(self._mac(b"csrf:" + nonce.encode()))

    def _mac(self, data: bytes) -> bytes:
        return hmac.new(self._key, data, hashlib.sha256).digest()


def configured(env: Mapping[str, str] | None = None, *, callers: Lookup | None = None) -> Sessions:
    """The sessions `AGENT_INBOX_SESSION_KEY` and `AGENT_INBOX_REVOCATIONS` configure
    (neither: a random key of this process's, revocations in memory)."""
    env = os.environ if env is None else env
    try:
        secret = secret_from_env(KEY_ENV, env=env)
    except SecretEnvError as err:
        raise SessionConfigError(str(err)) from None
    revocations = env.get(REVOCATIONS_ENV, "").strip() or None
    if secret is None:
        if revocations is not None:
            raise SessionConfigError(f"{REVOCATIONS_ENV} goes with {KEY_ENV} (not set)")
        return Sessions(callers=callers)
    if len(secret.value.strip()) < MIN_KEY_CHARS:
        raise SessionConfigError(
            f"the key in {secret.source} is shorter than {MIN_KEY_CHARS} characters"
        )
    path = Path(revocations) if revocations is not None else None
    if path is not None and not path.parent.is_dir():
        raise SessionConfigError(f"{REVOCATIONS_ENV}: the folder of {path} does not exist")
    if path is not None and path.exists() and not path.is_file():
        raise SessionConfigError(f"{REVOCATIONS_ENV}: {path} is not a file")
    return Sessions(key=secret.value.strip().encode(), revocations=path, callers=callers)


class _Revoked:
    """Signed-out nonces until their sessions' ends: in memory, and in `path` when
    given (appended one JSON line each; read again from where it was when it grew)."""

    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._until: dict[str, float] = {}
        self._read_to = 0

    def add(self, nonce: str, until: float, *, now: float) -> None:
        self._until[nonce] = until
        if self._path is not None:
            line = json.dumps({"n": nonce, "e": until}) + "\n"
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode())  # one small append: whole, even if shared
            finally:
                os.close(fd)
        self._prune(now)

    def has(self, nonce: str, *, now: float) -> bool:
        self._catch_up(now)
        until = self._until.get(nonce)
        return until is not None and until > now

    def _catch_up(self, now: float) -> None:
        if self._path is None:
            return
        try:
            size = self._path.stat().st_size
        except FileNotFoundError:
            return
        if size < self._read_to:  # replaced by a shorter file: read it all again
            self._read_to = 0
        if size == self._read_to:
            return
        with self._path.open("rb") as file:
            file.seek(self._read_to)
            data = file.read(size - self._read_to)
        whole = data[: data.rfind(b"\n") + 1]  # a line still being written: next time
        self._read_to += len(whole)
        for line in whole.splitlines():
            try:
                entry = json.loads(line)
                nonce, until = str(entry["n"]), float(entry["e"])
            except (ValueError, KeyError, TypeError):
                continue  # not a line of ours: it revokes nothing
            if until > now:  # an ended session's line: its cookie is refused anyway
                self._until[nonce] = until

    def _prune(self, now: float) -> None:
        for nonce in [n for n, until in self._until.items() if until <= now]:
            del self._until[nonce]


def csrf_matches(session: Session, given: str | None) -> bool:
    """Whether `given` (the request's `X-CSRF-Token`) is the session's, in constant time."""
    return given is not None and hmac.compare_digest(session.csrf.encode(), given.encode())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
