"""Webhook endpoints of a worker (`AGENT_WEBHOOKS=FILE`, `AGENT_WEBHOOK_ALLOW`) and the
`deliver_webhook` activity that posts one run event to one of them, signed the
Standard Webhooks way with the `standardwebhooks` library.

The file (pinned in DESIGN.md) is a JSON list of
`{"name", "url", "events": [...], "secret_env"}`; more optional fields:
`give_up_after` (seconds a delivery is retried, default 6 hours) and
`first_retry` (seconds before the second attempt, default 5; each later wait
doubles, at most 10 minutes; a `Retry-After` answer is honoured up to an hour).
The secret (`whsec_...`; several separated by spaces while one is rotated: every
delivery is signed with each) is read from the environment variable `secret_env`
names, or from the file `<secret_env>_FILE` names (a mounted secret), on the worker
only: runs know endpoints by name, never their URL or secret.

Where a URL may point: a host name or address `AGENT_WEBHOOK_ALLOW` lists (names,
or CIDR ranges), or, when that is unset, any public address; loopback, private,
link-local and reserved addresses only when listed. Checked when the worker starts
(a URL that may not be used refuses the start) and again, with the addresses the
name resolves to, before every attempt; the attempt connects to those addresses, never
looking the name up again (a name that answers a public address to the check and a
private one to the connection, DNS rebinding, reaches only the address checked), and
still names the host to the server (`Host`, TLS SNI and the certificate's check).
Redirects are not followed; at most
`MAX_RESPONSE_BYTES` of an answer are read, and only its status, `Retry-After` and
a short excerpt are kept; nothing of it reaches a model.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import socket
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2 as httpx  # the HTTP client of `openai` and `mcp` (httpx's successor)
from standardwebhooks import Webhook
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_agents.config_file import json_file
from durable_agents.dataplane.secret_env import SecretEnvError, secret_from_env
from durable_agents.workflows.agent_spec import EVENT_TYPES
from durable_agents.workflows.contract import ACTIVITY_DELIVER_WEBHOOK
from durable_agents.workflows.webhook_payloads import DeliveryRequest, DeliveryResult

ENV = "AGENT_WEBHOOKS"
ALLOW_ENV = "AGENT_WEBHOOK_ALLOW"
UI_ENV = "AGENT_UI_URL"
"""The Temporal UI's address (e.g. `http://localhost:8233`): events link to the run there."""
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
GIVE_UP_AFTER = timedelta(hours=6)
FIRST_RETRY = timedelta(seconds=5)
LONGEST_WAIT = timedelta(minutes=10)
LONGEST_RETRY_AFTER = timedelta(hours=1)
HTTP_TIMEOUT = 10.0
MAX_RESPONSE_BYTES = 64 * 1024
EXCERPT_CHARS = 200


class WebhookConfigError(Exception):
    """An AGENT_WEBHOOKS file (or allow-list) the worker cannot use; the message says why."""


@dataclass(frozen=True)
class Endpoint:
    name: str
    url: str
    events: tuple[str, ...]
    secrets: tuple[str, ...]
    give_up_after: timedelta = GIVE_UP_AFTER
    first_retry: timedelta = FIRST_RETRY

    def __repr__(self) -> str:  # never the secrets
        return f"Endpoint({self.name!r}, {self.url!r}, events={list(self.events)})"


@dataclass(frozen=True)
class AllowList:
    hosts: frozenset[str]
    networks: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    listed: bool
    """AGENT_WEBHOOK_ALLOW is set: only what it lists."""

    @classmethod
    def parse(cls, text: str | None) -> AllowList:
        hosts, networks = set(), []
        for item in (text or "").split(","):
            item = item.strip().lower()
            if not item:
                continue
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                hosts.add(item.rstrip("."))
        return cls(frozenset(hosts), tuple(networks), bool(text and text.strip()))

    def problem(self, host: str, addresses: list[str]) -> str | None:
        """Why `host` (resolving to `addresses`) may not be posted to, or None."""
        if host.lower().rstrip(".") in self.hosts:
            return None
        for text in addresses:
            address = ipaddress.ip_address(text.split("%")[0])
            if any(address in n for n in self.networks):
                continue
            if self.listed:
                return f"{host} ({address}) is not in {ALLOW_ENV}"
            if not address.is_global or any(address in n for n in _TRANSLATED):
                return (
                    f"{host} is a loopback, private or reserved address ({address}); "
                    f"list it in {ALLOW_ENV} to allow it"
                )
        return None


_TEST_ID = re.compile(r"test-[0-9a-f]{12}")
"""The `webhook-id` of a test delivery (`agentctl webhooks test`)."""
_TRANSLATED = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("2002::/16"))
"""NAT64 and 6to4: public in form, they reach IPv4 addresses that may be private."""


def from_env(env: Mapping[str, str] | None = None) -> dict[str, Endpoint]:
    """The endpoints of `AGENT_WEBHOOKS` (none when it is unset), checked."""
    env = os.environ if env is None else env
    try:
        document = json_file(env, ENV)
    except ValueError as err:
        raise WebhookConfigError(str(err)) from None
    return {} if document is None else parse(document, env)


def parse(document: object, env: Mapping[str, str]) -> dict[str, Endpoint]:
    """The endpoints of an AGENT_WEBHOOKS document; WebhookConfigError if it is unusable
    (including a URL the allow-list refuses, resolved now)."""
    if not isinstance(document, list):
        raise WebhookConfigError(f"{ENV}: a JSON list of endpoints, not {type(document).__name__}")
    allow = AllowList.parse(env.get(ALLOW_ENV))
    found: dict[str, Endpoint] = {}
    for entry in document:
        endpoint = _endpoint(entry, env)
        if endpoint.name in found:
            raise WebhookConfigError(f"{ENV}: endpoint {endpoint.name!r} is listed twice")
        host = urllib.parse.urlsplit(endpoint.url).hostname or ""
        why = allow.problem(host, _addresses(host))
        if why is not None:
            raise WebhookConfigError(f"{ENV}: endpoint {endpoint.name!r}: {why}")
        found[endpoint.name] = endpoint
    return found


def _endpoint(entry: object, env: Mapping[str, str]) -> Endpoint:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise WebhookConfigError(f'{ENV}: each endpoint is an object with a "name"')
    name = entry["name"]
    where = f"{ENV}: endpoint {name!r}"
    if not NAME.match(name):
        raise WebhookConfigError(f"{where}: a name is letters, digits, '_', '.' or '-'")
    unknown = set(entry) - {"name", "url", "events", "secret_env", "give_up_after", "first_retry"}
    if unknown:
        raise WebhookConfigError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    url = entry.get("url")
    parts = urllib.parse.urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookConfigError(f'{where}: "url" is an http(s) URL')
    if parts.username or parts.password:
        raise WebhookConfigError(f'{where}: "url" may not carry credentials')
    events = entry.get("events")
    if not isinstance(events, list) or not events or not all(e in EVENT_TYPES for e in events):
        raise WebhookConfigError(f'{where}: "events" is a list of {", ".join(EVENT_TYPES)}')
    variable = entry.get("secret_env")
    if not isinstance(variable, str) or not variable:
        raise WebhookConfigError(f'{where}: "secret_env" names the variable of its secret')
    try:
        found = secret_from_env(variable, env=env)
    except SecretEnvError as err:
        raise WebhookConfigError(f"{where}: {err}") from None
    secrets = tuple(found.value.split()) if found is not None else ()
    if not secrets:
        raise WebhookConfigError(
            f"{where}: ${variable} (its secret) is not set, nor ${variable}_FILE"
        )
    for secret in secrets:
        try:
            Webhook(secret)
        except Exception:
            raise WebhookConfigError(f"{where}: ${variable} is not a whsec_ secret") from None
        if not secret.startswith("whsec_"):
            raise WebhookConfigError(f"{where}: ${variable} is not a whsec_ secret")
    return Endpoint(
        name=name,
        url=url,  # type: ignore[arg-type]
        events=tuple(events),
        secrets=secrets,
        give_up_after=_seconds(entry, "give_up_after", GIVE_UP_AFTER, where),
        first_retry=_seconds(entry, "first_retry", FIRST_RETRY, where),
    )


def _seconds(entry: dict[str, Any], field: str, default: timedelta, where: str) -> timedelta:
    value = entry.get(field)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 7 * 86400:
        raise WebhookConfigError(f'{where}: "{field}" is seconds, above 0 and at most a week')
    return timedelta(seconds=value)


def _addresses(host: str) -> list[str]:
    """The addresses `host` resolves to (an address: itself); none if it does not."""
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    try:
        found = (str(info[4][0]) for info in socket.getaddrinfo(host, None))
        return list(dict.fromkeys(found))  # the system's order of preference, once each
    except OSError:
        return []


def sign(endpoint: Endpoint, webhook_id: str, at: datetime, body: str) -> dict[str, str]:
    """The Standard Webhooks headers of a delivery, signed with each of the endpoint's
    secrets (a receiver that knows any one of them verifies it)."""
    signatures = " ".join(Webhook(s).sign(webhook_id, at, body) for s in endpoint.secrets)
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signatures,
        "content-type": "application/json",
        "user-agent": "durable-agents-webhooks",
    }


class WebhookActivities:
    """The `deliver_webhook` activity of a worker, with its endpoints."""

    def __init__(
        self, endpoints: Mapping[str, Endpoint], *, env: Mapping[str, str] | None = None
    ) -> None:
        env = os.environ if env is None else env
        self._endpoints = dict(endpoints)
        self._allow = AllowList.parse(env.get(ALLOW_ENV))
        self._ui = env.get(UI_ENV, "").rstrip("/")

    @activity.defn(name=ACTIVITY_DELIVER_WEBHOOK)
    async def deliver_webhook(self, request: DeliveryRequest) -> DeliveryResult:
        """One attempt to post `request.event` to its endpoint. Run standalone (by
        `agentctl webhooks test`, or anyone: the activity gate lets that through), it
        posts the worker's own test event, whatever was asked: the worker signs no body
        that a run of ours did not write."""
        if not activity.info().workflow_id:
            test_id = request.webhook_id if _TEST_ID.fullmatch(request.webhook_id) else None
            request = request.model_copy(
                update={
                    "event": sample_event(request.endpoint),
                    "webhook_id": test_id or f"test-{uuid.uuid4().hex[:12]}",
                }
            )
        endpoint = self._endpoints.get(request.endpoint)
        if endpoint is None:  # a worker of another configuration: another may have it
            known = ", ".join(sorted(self._endpoints)) or "none"
            raise ApplicationError(
                f"this worker has no webhook endpoint {request.endpoint!r} ({known})",
                type="UnknownWebhookEndpoint",
            )
        return await deliver(endpoint, request, self._allow, ui=self._ui)


async def deliver(
    endpoint: Endpoint,
    request: DeliveryRequest,
    allow: AllowList,
    *,
    ui: str = "",
    resolve: Callable[[str], list[str]] = _addresses,
) -> DeliveryResult:
    """Post the event once and say what came of it. `resolve`: the addresses a host
    name stands for (the system's resolver)."""
    host = urllib.parse.urlsplit(endpoint.url).hostname or ""
    addresses = await asyncio.to_thread(resolve, host)
    why = allow.problem(host, addresses) if addresses else f"{host} does not resolve"
    if why is not None:
        return _retry_or_give_up(endpoint, request, None, why, None)
    event = dict(request.event)
    if ui:
        namespace = activity.info().workflow_namespace if activity.in_activity() else "default"
        run = urllib.parse.quote(str(event.get("run_id", "")), safe="")
        event["links"] = {"ui": f"{ui}/namespaces/{namespace}/workflows/{run}"}
    body = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    headers = sign(endpoint, request.webhook_id, datetime.now(UTC), body)
    try:
        answer, excerpt = await _post(endpoint.url, addresses, body, headers)
    except Exception as err:  # no answer (any cause): tried again
        why = f"{type(err).__name__}: {err}"
        for url in (endpoint.url, *(_pinned(endpoint.url, a) for a in addresses)):
            why = why.replace(url, _origin(endpoint.url))
        return _retry_or_give_up(endpoint, request, None, why, None)
    code = answer.status_code
    if 200 <= code < 300:
        return DeliveryResult(outcome="delivered", code=code)
    said = f"HTTP {code}" + (f": {excerpt}" if excerpt else "")
    if code in (408, 429) or code >= 500:
        wait = _retry_after(answer.headers.get("retry-after"))
        return _retry_or_give_up(endpoint, request, code, said, wait)
    if 300 <= code < 400:
        said = f"HTTP {code}: redirects are not followed (to {answer.headers.get('location')})"
    return DeliveryResult(outcome="refused", code=code, error=said[:500])


async def _post(
    url: str, addresses: list[str], body: str, headers: dict[str, str]
) -> tuple[httpx.Response, str]:
    """POST `body` to `url` at the first of `addresses` (those checked) that takes the
    connection; the answer and the start of its body. No proxies or .netrc from the
    environment: the address checked is the one used."""
    parts = urllib.parse.urlsplit(url)
    ascii_host = httpx.URL(url).raw_host.decode("ascii")  # an IDN name as punycode
    named = {"host": _host_header(ascii_host, parts.port)}
    sni = {"sni_hostname": ascii_host} if parts.scheme == "https" else {}
    refused: httpx.ConnectError | httpx.ConnectTimeout | None = None
    async with httpx.AsyncClient(
        follow_redirects=False, timeout=HTTP_TIMEOUT, trust_env=False
    ) as http:
        for address in addresses:
            pinned = _pinned(url, address)
            try:
                async with http.stream(
                    "POST", pinned, content=body, headers={**headers, **named}, extensions=sni
                ) as answer:
                    return answer, await _excerpt(answer)
            except (httpx.ConnectError, httpx.ConnectTimeout) as err:  # the next address
                refused = err
    raise refused or httpx.ConnectError("no address to connect to")


def _pinned(url: str, address: str) -> str:
    """`url` with its host replaced by `address` (an IP address; IPv6 in brackets, its
    zone, if any, escaped)."""
    parts = urllib.parse.urlsplit(url)
    literal = f"[{address.replace('%', '%25')}]" if ":" in address else address
    userinfo = parts.netloc.rpartition("@")[0]
    port = f":{parts.port}" if parts.port else ""
    netloc = f"{userinfo}@{literal}{port}" if userinfo else f"{literal}{port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def _host_header(host: str, port: int | None) -> str:
    """The `Host` header of a URL's `host` (ASCII) and `port`, without credentials."""
    literal = f"[{host}]" if ":" in host else host
    return f"{literal}:{port}" if port else literal


async def _excerpt(answer: httpx.Response) -> str:
    """The start of an answer's body, read up to `MAX_RESPONSE_BYTES`, as one short line."""
    read = b""
    async for chunk in answer.aiter_bytes():
        read += chunk
        if len(read) >= MAX_RESPONSE_BYTES:
            break
    text = read[:MAX_RESPONSE_BYTES].decode("utf-8", errors="replace")
    return " ".join(text.split())[:EXCERPT_CHARS]


def _retry_or_give_up(
    endpoint: Endpoint,
    request: DeliveryRequest,
    code: int | None,
    why: str,
    retry_after: timedelta | None,
) -> DeliveryResult:
    doubled = endpoint.first_retry.total_seconds() * 2.0 ** min(request.attempt - 1, 30)
    wait = min(timedelta(seconds=doubled), LONGEST_WAIT)
    if retry_after is not None:
        wait = max(wait, min(retry_after, LONGEST_RETRY_AFTER))
    if datetime.now(UTC) + wait > request.first_try_at + endpoint.give_up_after:
        return DeliveryResult(outcome="gave_up", code=code, error=why[:500])
    return DeliveryResult(
        outcome="retry", code=code, error=why[:500], retry_in_seconds=wait.total_seconds()
    )


def _retry_after(value: str | None) -> timedelta | None:
    """A `Retry-After` header: seconds, or an HTTP date."""
    if not value:
        return None
    try:
        return timedelta(seconds=max(0.0, float(value)))
    except (ValueError, OverflowError):
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(timedelta(0), when - datetime.now(UTC))


def describe(endpoints: Mapping[str, Endpoint]) -> str:
    """The worker's startup line about its webhook endpoints (never their secrets)."""
    if not endpoints:
        return f"worker: webhooks: none ({ENV} not set)"
    shown = "; ".join(
        f"{e.name} -> {_origin(e.url)} ({', '.join(e.events)})" for e in endpoints.values()
    )
    return f"worker: webhooks: {shown}"


def _origin(url: str) -> str:
    """`https://host:port` of `url`: its path may be a credential (many chat and
    pager webhooks are), so logs and reports name only where it points."""
    parts = urllib.parse.urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def sample_event(endpoint: str) -> dict[str, Any]:
    """The event `agentctl webhooks test` sends."""
    return {
        "seq": 0,
        "type": "test",
        "at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
        "run_id": "webhook-test",
        "agent": "(none)",
        "endpoint": endpoint,
        "note": "a test delivery from agentctl webhooks test",
    }
