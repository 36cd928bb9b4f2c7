"""Who may call the HTTP gateway (`client.gateway`), and for what.

`AGENT_GATEWAY_TOKENS=FILE` names a JSON list of callers:
`{"name": str, "token_env": str, "scopes": ["read" | "decide" | "start"], "agents"?: [str],
"approve_as"?: [str]}`.
Each caller's bearer token is read from the environment variable `token_env` names
(or the file `<token_env>_FILE` names: a mounted secret), never from the file; several
callers may share a scope. `read`: status, state, pending approvals, events; `decide`:
approve and reject; `start`: start runs and send session messages. `agents`: only runs
of these agents (default: any). `approve_as`: the approver names the caller may decide
as in an unsigned decision (default: its own name; a signed decision is its key
owner's). Tokens are compared in constant time; the caller's name (never its token)
is what the audit log and a decision's `sender` carry.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from durable_agents.config_file import json_file
from durable_agents.dataplane.secret_env import SecretEnvError, secret_from_env

TOKENS_ENV = "AGENT_GATEWAY_TOKENS"
Scope = Literal["read", "decide", "start"]
SCOPES: tuple[Scope, ...] = ("read", "decide", "start")
MIN_TOKEN_CHARS = 16


class GatewayConfigError(ValueError):
    """The gateway's callers cannot be read: the message names the variable and entry."""


@dataclass(frozen=True)
class Caller:
    """Who called, and what they may do."""

    name: str
    scopes: frozenset[str]
    agents: frozenset[str] | None
    """The agents whose runs the caller may touch; None: any."""
    approve_as: frozenset[str] = frozenset()
    """The approver names of its unsigned decisions (empty: only its own name)."""

    def may_approve_as(self, approver: str) -> bool:
        return approver == self.name or approver in self.approve_as

    def may(self, scope: Scope, agent: str | None = None) -> bool:
        """Whether the caller has `scope` (for a run of `agent`, when given)."""
        if scope not in self.scopes:
            return False
        return agent is None or self.agents is None or agent in self.agents


class _Anyone(Caller):
    def may_approve_as(self, approver: str) -> bool:
        return True


ANONYMOUS = _Anyone(name="anonymous", scopes=frozenset(SCOPES), agents=None)
"""The caller of a gateway run with `--allow-unauthenticated` (loopback only); it
decides as whoever it names (`may_approve_as`), as the approve signal itself would."""
"""The caller of a gateway run with `--allow-unauthenticated` (loopback only)."""


class Callers:
    """The configured callers, by the SHA-256 of their tokens."""

    def __init__(self, by_digest: Mapping[bytes, Caller]) -> None:
        self._by_digest = dict(by_digest)

    def __len__(self) -> int:
        return len(self._by_digest)

    def named(self, name: str) -> Caller | None:
        """The caller called `name` (an inbox session names its caller), or None."""
        return next((c for c in self._by_digest.values() if c.name == name), None)

    def find(self, authorization: str | None) -> Caller | None:
        """The caller an `Authorization: Bearer TOKEN` header names, or None."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        digest = hashlib.sha256(token.strip().encode()).digest()
        found = None
        for known, caller in self._by_digest.items():  # every one: constant time
            if hmac.compare_digest(known, digest):
                found = caller
        return found


def load_callers(env: Mapping[str, str] | None = None) -> Callers:
    """The callers `AGENT_GATEWAY_TOKENS` configures (none when it is unset)."""
    env = os.environ if env is None else env
    try:
        document = json_file(env, TOKENS_ENV)
    except ValueError as err:
        raise GatewayConfigError(str(err)) from None
    if document is None:
        return Callers({})
    if not isinstance(document, list):
        raise GatewayConfigError(f"{TOKENS_ENV}: a JSON list of callers is expected")
    by_digest: dict[bytes, Caller] = {}
    names: set[str] = set()
    for index, entry in enumerate(document):
        caller, token = _caller(entry, f"{TOKENS_ENV}[{index}]", env)
        if caller.name in names:
            raise GatewayConfigError(f"{TOKENS_ENV}[{index}]: caller {caller.name!r} twice")
        digest = hashlib.sha256(token.encode()).digest()
        if digest in by_digest:
            raise GatewayConfigError(f"{TOKENS_ENV}[{index}]: the same token as another caller")
        names.add(caller.name)
        by_digest[digest] = caller
    return Callers(by_digest)


def _caller(entry: object, where: str, env: Mapping[str, str]) -> tuple[Caller, str]:
    if not isinstance(entry, dict):
        raise GatewayConfigError(f"{where}: an object is expected")
    unknown = set(entry) - {"name", "token_env", "scopes", "agents", "approve_as"}
    if unknown:
        raise GatewayConfigError(f"{where}: unknown fields {sorted(unknown)}")
    name, variable = entry.get("name"), entry.get("token_env")
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise GatewayConfigError(f'{where}: "name" (1 to 100 characters) is required')
    if not isinstance(variable, str) or not variable:
        raise GatewayConfigError(f'{where}: "token_env" names the variable of its token')
    scopes = entry.get("scopes")
    if not isinstance(scopes, list) or not scopes or not set(scopes) <= set(SCOPES):
        raise GatewayConfigError(f'{where}: "scopes" is a non-empty list of {list(SCOPES)}')
    agents = entry.get("agents")
    if agents is not None and (
        not isinstance(agents, list) or not all(isinstance(a, str) and a for a in agents)
    ):
        raise GatewayConfigError(f'{where}: "agents" is a list of agent names')
    approve_as = entry.get("approve_as", [])
    if not isinstance(approve_as, list) or not all(isinstance(a, str) and a for a in approve_as):
        raise GatewayConfigError(f'{where}: "approve_as" is a list of approver names')
    try:
        secret = secret_from_env(variable, env=env)
    except SecretEnvError as err:
        raise GatewayConfigError(f"{where}: {err}") from None
    if secret is None:
        raise GatewayConfigError(
            f"{where}: ${variable} (its token) is not set, nor ${variable}_FILE"
        )
    if len(secret.value.strip()) < MIN_TOKEN_CHARS:
        raise GatewayConfigError(
            f"{where}: the token in {secret.source} is shorter than {MIN_TOKEN_CHARS} characters"
        )
    caller = Caller(
        name=name.strip(),
        scopes=frozenset(scopes),
        agents=frozenset(agents) if agents is not None else None,
        approve_as=frozenset(approve_as),
    )
    return caller, secret.value.strip()
