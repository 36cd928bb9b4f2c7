"""The approval inbox of `agentctl serve`: a web page where the people who decide see
every call waiting for them, across runs, and approve or reject it (signed in the
browser when their policy wants a signature).

Routes (all under `/inbox`; the page's assets ship in this package, `inbox_assets/`):

- `GET /inbox`, `/inbox/inbox.js`, `/inbox/inbox.css`: the page (no inline script,
  no CDN; a strict Content-Security-Policy, no framing: `_HEADERS`).
- `POST /inbox/session` `{"token"}` (or `{"proxy": true}`: the identity a trusted proxy
  vouches for, `client.proxy_identity`): sign in as a gateway caller; sets the
  session cookie (`client.inbox_sessions`) and answers the CSRF token.
  `GET /inbox/session`: who is signed in, and the CSRF token. `POST
  /inbox/session/end`: sign out.
- `GET /inbox/context/{run_id}` (scope read, on the run): on demand, the run's summary,
  status, conversation and Temporal UI link (`client.inbox_context`).
- `GET /inbox/calls` (scope read): every waiting call the caller may see
  (`client.inbox_feed`); `GET /inbox/feed`: the same as server-sent events, an event
  `calls` each time it changes (`signed_out` when the session ends).

A decision is the gateway's own `POST /runs/{id}/decisions` (the `decide` update),
made with the session cookie and the CSRF token instead of a bearer token.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib import resources
from typing import Any

from durable_agents.client.gateway_auth import ANONYMOUS, Caller, Callers, Scope
from durable_agents.client.inbox_context import run_context
from durable_agents.client.inbox_feed import InboxFeed, InboxView
from durable_agents.client.inbox_openapi import InboxCalls, InboxSession
from durable_agents.client.inbox_sessions import (
    COOKIE,
    CSRF_HEADER,
    SAFE_METHODS,
    Sessions,
    csrf_matches,
)
from durable_agents.client.proxy_identity import ProxyIdentity
from sse_starlette.sse import EventSourceResponse
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as Scope_

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'; "
    "require-trusted-types-for 'script'; trusted-types 'none'"
)
"""Only this origin's own script and style; no inline script, no framing; and no
string may ever reach an HTML sink (Trusted Types: `innerHTML` throws), so nothing a
run says can become markup."""
_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
]
ASSETS = {
    "inbox.html": "text/html; charset=utf-8",
    "inbox.js": "text/javascript; charset=utf-8",
    "inbox.css": "text/css; charset=utf-8",
}
SESSION_CHECK = 15.0
"""Seconds between two checks that a feed's session is still open (it ends then)."""
MAX_SIGN_IN_BODY = 4096

Allowed = Callable[[Request, Scope], Awaitable[Caller]]


def assets() -> dict[str, bytes]:
    """The page's files, as shipped in the package."""
    folder = resources.files("durable_agents.client").joinpath("inbox_assets")
    return {name: folder.joinpath(name).read_bytes() for name in ASSETS}


def session_caller(request: Request, sessions: Sessions) -> Caller | None:
    """The caller of the request's inbox session, or None when it carries no session
    cookie; 401 for an ended or unknown one, 403 for a change without the CSRF token."""
    cookie = request.cookies.get(COOKIE)
    if cookie is None:
        return None
    session = sessions.find(cookie)
    if session is None:
        raise HTTPException(401, "the inbox session has ended or is not known: sign in again")
    if request.method not in SAFE_METHODS and not csrf_matches(
        session, request.headers.get(CSRF_HEADER)
    ):
        raise HTTPException(403, "a change made with an inbox session needs its X-CSRF-Token")
    return session.caller


def inbox_routes(
    *,
    callers: Callers | None,
    sessions: Sessions,
    feed: InboxFeed,
    allowed: Allowed,
    proxy: ProxyIdentity | None = None,
) -> list[Route]:
    """The inbox's routes; `allowed` is the gateway's check of a caller and scope;
    `proxy`: the trusted proxy's identity header, to sign in with (`client.proxy_identity`)."""
    files = assets()

    def asset(name: str) -> Callable[[Request], Awaitable[Response]]:
        async def serve(_: Request) -> Response:
            headers = {"cache-control": "no-cache"}
            return Response(files[name], media_type=ASSETS[name], headers=headers)

        return serve

    async def sign_in(request: Request) -> Response:
        request.state.audit = {"action": "sign_in"}
        scheme = proxy.scheme(request) if proxy is not None else request.url.scheme
        _same_origin(request, scheme)
        body = await _sign_in_body(request)
        if body.get("proxy") is True:
            caller = _proxy_caller(request, proxy, callers)
            request.state.audit["via"] = "proxy"
        else:
            token = _token(body)
            caller = ANONYMOUS if callers is None else callers.find(f"Bearer {token}")
            if caller is None:
                raise HTTPException(401, "that is not the token of a caller of this gateway")
        request.state.caller = caller.name
        cookie, session = sessions.open(caller)
        answer = _session_answer(caller, session.csrf, sessions.seconds_left(session))
        answer.set_cookie(
            COOKIE,
            cookie,
            max_age=int(sessions.lifetime.total_seconds()),
            path="/",
            secure=scheme == "https",
            httponly=True,
            samesite="strict",
        )
        request.state.audit["outcome"] = "signed in"
        return answer

    async def who(request: Request) -> Response:
        session = sessions.find(request.cookies.get(COOKIE))
        if session is None:
            vouched = proxy is not None and proxy.identity(request) is not None
            problem = {"code": "unauthorized", "message": "not signed in"}
            return JSONResponse({"error": problem, "proxy": vouched}, status_code=401)
        return _session_answer(session.caller, session.csrf, sessions.seconds_left(session))

    async def sign_out(request: Request) -> Response:
        request.state.audit = {"action": "sign_out"}
        caller = session_caller(request, sessions)  # an open one needs its CSRF token
        if caller is not None:
            request.state.caller = caller.name
        sessions.close(request.cookies.get(COOKIE))
        answer = JSONResponse({"signed_out": True})
        answer.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict")
        return answer

    async def calls(request: Request) -> Response:
        caller = await allowed(request, "read")
        return JSONResponse(_visible(caller, await feed.current()))

    async def context(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await allowed(request, "read", run_id)
        found = await run_context(feed.agents, run_id, ui=feed.ui)
        return JSONResponse(found.model_dump(mode="json"), headers={"cache-control": "no-store"})

    async def follow(request: Request) -> Response:
        caller = await allowed(request, "read")
        cookie = request.cookies.get(COOKIE) if "authorization" not in request.headers else None
        await feed.current()

        async def changes() -> AsyncIterator[dict[str, Any]]:
            last = None
            async with feed.following():
                seen = -1
                while True:
                    if cookie is not None and sessions.find(cookie) is None:
                        yield {"event": "signed_out", "data": "{}"}
                        return
                    seen = await feed.changed_since(seen, timeout=SESSION_CHECK)
                    data = json.dumps(_visible(caller, feed.view))
                    if data != last:
                        last = data
                        yield {"event": "calls", "data": data}

        return EventSourceResponse(changes(), ping=15, headers={"cache-control": "no-store"})

    return [
        Route("/inbox", asset("inbox.html")),
        Route("/inbox/inbox.js", asset("inbox.js")),
        Route("/inbox/inbox.css", asset("inbox.css")),
        Route("/inbox/session", sign_in, methods=["POST"]),
        Route("/inbox/session", who, methods=["GET"]),
        Route("/inbox/session/end", sign_out, methods=["POST"]),
        Route("/inbox/calls", calls),
        Route("/inbox/feed", follow),
        Route("/inbox/context/{run_id:path}", context),
    ]


def _visible(caller: Caller, view: InboxView) -> dict[str, Any]:
    """What of `view` the caller may see: calls of its agents only (every agent on the
    call's path), and whether it may decide them."""
    shown = [c for c in view.calls if caller.agents is None or set(c.path) <= caller.agents]
    return InboxCalls(
        caller=caller.name,
        may_decide=caller.may("decide"),
        calls=shown,
        unanswered=view.unanswered if caller.agents is None else [],
        error=view.error,
    ).model_dump(mode="json")


def _session_answer(caller: Caller, csrf: str, seconds_left: int) -> JSONResponse:
    answer = InboxSession(
        caller=caller.name,
        scopes=sorted(caller.scopes),
        approve_as=sorted({caller.name, *caller.approve_as}),
        approve_as_anyone=caller is ANONYMOUS,
        csrf=csrf,
        seconds_left=seconds_left,
    )
    return JSONResponse(answer.model_dump(mode="json"), headers={"cache-control": "no-store"})


def _same_origin(request: Request, scheme: str) -> None:
    """Refuse a sign-in posted from another site's page (login CSRF). `scheme`: the one
    the browser used (behind a trusted proxy that ends TLS, the proxy's word for it)."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return  # not a browser's cross-site request (a browser sends Origin on POST)
    own = f"{scheme}://{request.headers.get('host', '')}"
    if origin != own:
        raise HTTPException(403, f"sign-in from another origin ({origin[:100]}) is refused")


def _proxy_caller(request: Request, proxy: ProxyIdentity | None, callers: Callers | None) -> Caller:
    """The caller the trusted proxy's identity header names (see `client.proxy_identity`)."""
    if proxy is None:
        raise HTTPException(400, "this gateway trusts no proxy's identity header")
    name = proxy.identity(request)
    if name is None:
        raise HTTPException(401, "no identity from a trusted proxy came with this request")
    caller = callers.named(name) if callers is not None else None
    if caller is None:
        raise HTTPException(401, f"{name[:60]!r} is not a caller of this gateway")
    request.state.caller = caller.name
    return caller


async def _sign_in_body(request: Request) -> dict[str, Any]:
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise HTTPException(415, "the body must be JSON (Content-Type: application/json)")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_SIGN_IN_BODY:
            raise HTTPException(413, f"the body is larger than {MAX_SIGN_IN_BODY} bytes")
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise HTTPException(400, 'the body is {"token": "..."} (or {"proxy": true})')
    return body


def _token(body: dict[str, Any]) -> str:
    token = body.get("token")
    if not isinstance(token, str) or not token.strip():
        raise HTTPException(400, 'the body is {"token": "..."} (or {"proxy": true})')
    return token.strip()


class InboxHeaders:
    """The page's security headers on every `/inbox` answer (`_HEADERS`)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope_, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/inbox"):
            await self._app(scope, receive, send)
            return

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self._app(scope, receive, sent)
