"""The HTTP gateway (`agentctl serve`): runs, approvals and live events over HTTP, for
callers that would rather speak HTTP than Temporal (a web backend, a chat bot, another
language). A Starlette app served by uvicorn; every route goes through `AgentClient`,
so what it sends a run is exactly what `agentctl` sends.

Routes (and the scope a caller needs):

- `POST /runs` (start): `{"agent", "input", "run_id"?, "request_id"?, "context"?,
  "session"?, "max_turns"?}` starts a run (201); the same `request_id` from the same
  caller answers the run it started (200, `"started": false`) instead of a second.
- `POST /runs/{id}/messages` (start): a session's next message, `{"content"}`.
- `GET /runs/{id}`, `/state`, `/pending` (read): its status, RunState, and the calls
  waiting for a decision.
- `POST /runs/{id}/decisions` (decide): `{"call_id", "decision", "arguments_sha256",
  "approver"?, "reason"?, "request_id"?, "expires_at"?, "signature"?, "metadata"?}`
  through the `decide` update; the recorded decision is the answer (refused: 409).
  `arguments_sha256` is required: the caller echoes the digest of the arguments it
  showed whoever decided, so the gateway never approves blind.
- `GET /runs/{id}/events` (read): server-sent events, one per run event (`id:` its
  `seq`, `event:` its type, `data:` the event object), from the oldest kept or after
  `Last-Event-ID` (or `?after=SEQ`), until `run_finished`.
- `GET /healthz`: `ok`.

Errors are JSON, `{"error": {"code", "message"}}`: 400 (bad JSON, a body that is not
the route's), 401 (no or unknown token), 403 (scope, or a run of an agent the
caller may not touch), 404 (unknown run or route), 409 (refused decision, run id
taken). Every request that changes something is logged as one JSON line (logger
`durable_agents.gateway.audit`): who, what, which run and call, the outcome.
Followers of one run share one subscription (`_Hub`), so a hundred browsers
watching a run cost the run what one does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal, TypeVar

from durable_agents.client import events as run_events
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import (
    AgentClientError,
    AgentNotServed,
    DecisionRefused,
    RunExists,
    RunNotFound,
)
from durable_agents.client.gateway_auth import ANONYMOUS, Caller, Callers, Scope
from durable_agents.workflows.payloads import PendingApproval
from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

audit = logging.getLogger("durable_agents.gateway.audit")
MAX_BODY = 1024 * 1024
HUB_BACKLOG = 1000
"""Events a run's shared subscription keeps for followers that fall behind."""
HUB_LINGER = 30.0
"""Seconds a shared subscription outlives its last follower (one who reconnects)."""


class StartRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=200)
    input: str
    run_id: str | None = Field(None, min_length=1, max_length=400)
    request_id: str | None = Field(None, min_length=1, max_length=200)
    context: JsonValue = None
    session: bool = False
    max_turns: int | None = Field(None, ge=1)


class MessageRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1)


class DecisionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    call_id: str = Field(min_length=1, max_length=200)
    decision: Literal["approve", "reject"]
    arguments_sha256: str = Field(pattern="^[0-9a-f]{64}$")
    """Required here: the digest of the arguments the person who decided was shown."""
    approver: str | None = Field(None, min_length=1, max_length=200)
    reason: str | None = Field(None, max_length=2000)
    request_id: str | None = Field(None, min_length=1, max_length=200)
    expires_at: str | None = None
    signature: dict[str, str] | None = None
    metadata: dict[str, JsonValue] | None = None


def gateway_app(agents: AgentClient, callers: Callers | None) -> Starlette:
    """The gateway over `agents`; `callers` None: no authentication (loopback only,
    checked by `agentctl serve`)."""
    hubs: dict[str, _Hub] = {}

    def caller_of(request: Request) -> Caller:
        if callers is None:
            return ANONYMOUS
        found = callers.find(request.headers.get("authorization"))
        if found is None:
            raise HTTPException(401, "a bearer token of a configured caller is required")
        return found

    async def allowed(request: Request, scope: Scope, run_id: str | None = None) -> Caller:
        """The caller, if it may do `scope` (on the run `run_id`: of an agent it may
        touch; an unknown run is 404 only to a caller who may read)."""
        caller = caller_of(request)
        if not caller.may(scope):
            raise HTTPException(403, f"{caller.name} may not {scope}")
        if run_id is not None and caller.agents is not None:
            agent = (await agents.status(run_id)).agent
            if not caller.may(scope, agent):
                raise HTTPException(403, f"{caller.name} may not {scope} runs of {agent!r}")
        return caller

    async def start(request: Request) -> Response:
        caller = await allowed(request, "start")
        body = await _body(request, StartRequest)
        if not caller.may("start", body.agent):
            raise HTTPException(403, f"{caller.name} may not start runs of {body.agent!r}")
        run_id = body.run_id
        if run_id is None and body.request_id is not None:  # the same request: the same run
            digest = hashlib.sha256(f"{caller.name}\n{body.request_id}".encode()).hexdigest()
            run_id = f"{body.agent}-{digest[:20]}"
        what = {"action": "start", "agent": body.agent, "request_id": body.request_id}
        try:
            started = await agents.start(
                body.agent,
                body.input,
                context=body.context,
                max_turns=body.max_turns,
                run_id=run_id,
                session=body.session,
            )
        except RunExists:
            if body.request_id is None:
                raise
            _audit(caller, what | {"run_id": run_id, "outcome": "existing"})
            return JSONResponse({"run_id": run_id, "started": False})
        _audit(caller, what | {"run_id": started.id, "outcome": "started"})
        return JSONResponse({"run_id": started.id, "started": True}, status_code=201)

    async def message(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        caller = await allowed(request, "start", run_id)
        body = await _body(request, MessageRequest)
        await agents.message(run_id, body.content)
        _audit(caller, {"action": "message", "run_id": run_id, "outcome": "sent"})
        return JSONResponse({"run_id": run_id, "sent": True}, status_code=202)

    async def status(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await allowed(request, "read", run_id)
        return _json((await agents.status(run_id)).model_dump(mode="json"))

    async def state(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await allowed(request, "read", run_id)
        return _json((await agents.state(run_id)).model_dump(mode="json"))

    async def pending(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await allowed(request, "read", run_id)
        found = await agents.pending(run_id)
        return _json(TypeAdapter(list[PendingApproval]).dump_python(found, mode="json"))

    async def decide(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        caller = await allowed(request, "decide", run_id)
        body = await _body(request, DecisionRequest)
        what = {"action": body.decision, "run_id": run_id, "call_id": body.call_id}
        binding = body.model_dump(
            include={"arguments_sha256", "expires_at", "signature", "metadata"},
            exclude_none=True,
        )
        try:
            recorded = await agents.decide(
                run_id,
                body.call_id,
                body.decision,
                approver=body.approver or caller.name,
                reason=body.reason,
                request_id=body.request_id,
                sender=f"gateway:{caller.name}",
                **binding,
            )
        except DecisionRefused as err:
            _audit(caller, what | {"outcome": "refused", "why": err.message})
            raise
        _audit(caller, what | {"outcome": "recorded", "approver": recorded.approver})
        return _json(recorded.model_dump(mode="json"))

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await allowed(request, "read", run_id)
        after = _after(request)
        await agents.status(run_id)  # an unknown run: 404 now, not inside the stream
        hub = hubs.get(run_id)
        if hub is None or hub.done:
            hub = hubs[run_id] = _Hub(agents, run_id, lambda: hubs.pop(run_id, None))
        return EventSourceResponse(hub.serve(after), ping=15)

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok")

    async def document(_: Request) -> Response:
        return JSONResponse(openapi())

    routes = [
        Route("/healthz", healthz),
        Route("/openapi.json", document),
        Route("/runs", start, methods=["POST"]),
        Route("/runs/{run_id}", status),
        Route("/runs/{run_id}/state", state),
        Route("/runs/{run_id}/pending", pending),
        Route("/runs/{run_id}/messages", message, methods=["POST"]),
        Route("/runs/{run_id}/decisions", decide, methods=["POST"]),
        Route("/runs/{run_id}/events", events),
    ]
    return Starlette(routes=routes, exception_handlers=_HANDLERS)  # type: ignore[arg-type]


def openapi() -> dict[str, Any]:
    """The gateway's OpenAPI 3.1 document (`schemas/gateway.openapi.json`); RunState and
    the run events are the published JSON Schemas beside it."""
    from durable_agents.workflows.payloads import StatusView
    from durable_agents.workflows.state import SCHEMA_VERSION, Decision
    from pydantic.json_schema import models_json_schema

    models = [StartRequest, MessageRequest, DecisionRequest, StatusView, PendingApproval, Decision]
    _, defs = models_json_schema(
        [(m, "validation") for m in models], ref_template="#/components/schemas/{model}"
    )
    schemas = defs["$defs"]
    schemas["Error"] = {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                "required": ["code", "message"],
            }
        },
        "required": ["error"],
    }

    def ref(name: str) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{name}"}

    def answer(schema: dict[str, Any], text: str, status: str = "200") -> dict[str, Any]:
        errors = {
            code: {"description": why, "content": {"application/json": {"schema": ref("Error")}}}
            for code, why in (
                ("400", "a body or parameter that is not the route's"),
                ("401", "no or unknown bearer token"),
                ("403", "the caller lacks the scope, or may not touch the run's agent"),
                ("404", "no such run"),
                ("409", "refused (a decision), or taken (a run id)"),
            )
        }
        ok = {"description": text, "content": {"application/json": {"schema": schema}}}
        return {status: ok, **errors}

    def body(name: str) -> dict[str, Any]:
        return {"required": True, "content": {"application/json": {"schema": ref(name)}}}

    run = [{"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    started = {
        "type": "object",
        "properties": {"run_id": {"type": "string"}, "started": {"type": "boolean"}},
    }
    stream = {
        "description": "server-sent events: `id` the event's seq, `event` its type, `data` "
        "the event object",
        "content": {"text/event-stream": {"schema": {"$ref": "payloads/run-event.schema.json"}}},
    }
    after = [
        {"name": "Last-Event-ID", "in": "header", "schema": {"type": "string"}},
        {"name": "after", "in": "query", "schema": {"type": "integer", "minimum": 0}},
    ]
    return {
        "openapi": "3.1.0",
        "info": {"title": "durable-agents gateway (agentctl serve)", "version": SCHEMA_VERSION},
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/runs": {
                "post": {
                    "summary": "start a run (scope start; idempotent by request_id)",
                    "requestBody": body("StartRequest"),
                    "responses": {
                        **answer(started, "an earlier request's run", "200"),
                        **answer(started, "started", "201"),
                    },
                }
            },
            "/runs/{run_id}": {
                "get": {
                    "summary": "the run's status (scope read)",
                    "parameters": run,
                    "responses": answer(ref("StatusView"), "its status"),
                }
            },
            "/runs/{run_id}/state": {
                "get": {
                    "summary": "the run's RunState (scope read)",
                    "parameters": run,
                    "responses": answer(
                        {"$ref": f"runstate-{SCHEMA_VERSION}.schema.json"}, "its state"
                    ),
                }
            },
            "/runs/{run_id}/pending": {
                "get": {
                    "summary": "the calls waiting for a decision (scope read)",
                    "parameters": run,
                    "responses": answer(
                        {"type": "array", "items": ref("PendingApproval")}, "pending calls"
                    ),
                }
            },
            "/runs/{run_id}/messages": {
                "post": {
                    "summary": "a session's next message (scope start)",
                    "parameters": run,
                    "requestBody": body("MessageRequest"),
                    "responses": answer({"type": "object"}, "sent", "202"),
                }
            },
            "/runs/{run_id}/decisions": {
                "post": {
                    "summary": "approve or reject a pending call (scope decide)",
                    "parameters": run,
                    "requestBody": body("DecisionRequest"),
                    "responses": answer(ref("Decision"), "the recorded decision"),
                }
            },
            "/runs/{run_id}/events": {
                "get": {
                    "summary": "the run's events, live (scope read)",
                    "parameters": [*run, *after],
                    "responses": {"200": stream},
                }
            },
        },
    }


class _Hub:
    """One subscription to a run's events, shared by its followers: a follower first
    reads what it missed (a query: nothing recorded), then takes events from here."""

    def __init__(self, agents: AgentClient, run_id: str, on_done: Callable[[], object]) -> None:
        self._agents = agents
        self._run_id = run_id
        self._on_done = on_done
        self._events: deque[dict[str, Any]] = deque(maxlen=HUB_BACKLOG)
        self._changed = asyncio.Condition()
        self._followers = 0
        self.done = False
        self._error: str | None = None
        self._task = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        try:
            async for event in self._agents.events(self._run_id):
                async with self._changed:
                    self._events.append(event)
                    self._changed.notify_all()
        except AgentClientError as err:
            self._error = err.message
        finally:
            self.done = True
            self._on_done()
            async with self._changed:
                self._changed.notify_all()

    async def serve(self, after: int) -> AsyncIterator[dict[str, Any]]:
        """The SSE messages of the events after `after`, until the run finishes."""
        self._followers += 1
        try:
            last = after
            async for event in self._agents.events(self._run_id, after=after, follow=False):
                last = event["seq"]
                yield _message(event)
                if event["type"] == run_events.FINAL:
                    return
            while True:
                async with self._changed:
                    await self._changed.wait_for(lambda seen=last: self._newer_than(seen))
                    newer = [e for e in self._events if e["seq"] > last]
                if newer and newer[0]["seq"] > last + 1:  # fell behind the backlog: read again
                    newer = [
                        e async for e in self._agents.events(self._run_id, after=last, follow=False)
                    ]
                for event in newer:
                    last = event["seq"]
                    yield _message(event)
                    if event["type"] == run_events.FINAL:
                        return
                if self.done and not newer:
                    if self._error is not None:
                        yield {"event": "error", "data": json.dumps({"message": self._error})}
                    return
        finally:
            self._followers -= 1
            if self._followers == 0:
                asyncio.get_running_loop().call_later(HUB_LINGER, self._stop_if_unfollowed)

    def _newer_than(self, seq: int) -> bool:
        return self.done or (bool(self._events) and self._events[-1]["seq"] > seq)

    def _stop_if_unfollowed(self) -> None:
        if self._followers == 0 and not self.done:
            self._task.cancel()


def _message(event: dict[str, Any]) -> dict[str, Any]:
    return {"id": str(event["seq"]), "event": event["type"], "data": json.dumps(event)}


def _after(request: Request) -> int:
    """The `seq` to stream after: `Last-Event-ID` (a reconnecting EventSource), else
    `?after=`, else 0."""
    given = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    if not given.isdigit() or len(given) > 18:
        raise HTTPException(400, f"Last-Event-ID / after must be an event seq, not {given[:40]!r}")
    return int(given)


_M = TypeVar("_M", bound=BaseModel)


async def _body(request: Request, model: type[_M]) -> _M:
    """The request's JSON body as `model`; 400 with what is wrong."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise HTTPException(413, f"the body is larger than {MAX_BODY} bytes")
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in err.errors()
        )
        raise HTTPException(400, f"invalid body: {problems}") from None


def _json(value: object, status_code: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status_code)


def _audit(caller: Caller, what: dict[str, Any]) -> None:
    audit.info(json.dumps({"caller": caller.name, **what}, default=str))


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


_CODES = {400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found"}


async def _http_error(_: Request, err: Exception) -> Response:
    assert isinstance(err, HTTPException)
    return _error(err.status_code, _CODES.get(err.status_code, "error"), str(err.detail))


async def _client_error(_: Request, err: Exception) -> Response:
    assert isinstance(err, AgentClientError)
    if isinstance(err, RunNotFound):
        return _error(404, "run_not_found", err.message)
    if isinstance(err, RunExists):
        return _error(409, "run_exists", err.message)
    if isinstance(err, AgentNotServed):
        return _error(400, "agent_not_served", err.message)
    return _error(502, "temporal_error", err.message)


async def _refused(_: Request, err: Exception) -> Response:
    assert isinstance(err, DecisionRefused)
    return _error(409, "decision_refused", err.message)


_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    HTTPException: _http_error,
    DecisionRefused: _refused,
    AgentClientError: _client_error,
}
