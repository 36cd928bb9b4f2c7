"""The HTTP gateway (`agentctl serve`): runs, approvals and live events over HTTP, for
callers that would rather speak HTTP than Temporal (a web backend, a chat bot, another
language). A Starlette app served by uvicorn; every route goes through `AgentClient`,
so what it sends a run is exactly what `agentctl` sends.

Routes (and the scope a caller needs), as docs/how-to/gateway.md and
`schemas/gateway.openapi.json` describe them:

- `POST /runs` (start): start a run; by `request_id`, once (`gw-<digest>` ids).
- `POST /runs/{id}/messages` (start): a session's next message.
- `GET /runs/{id}`, `/state`, `/pending` (read): status, RunState, pending calls.
- `POST /runs/{id}/decisions` (decide): the `decide` update's payload, with
  `arguments_sha256` required (nobody approves blind); unsigned, the gateway names
  the sender and checks the approver (`Caller.approve_as`); signed, it is sent as
  it came.
- `GET /runs/{id}/events` (read): server-sent events (`id:` the `seq`), after
  `Last-Event-ID`; 204 for an ended run with nothing newer.
- `GET /healthz`, `GET /openapi.json`: open.
- `/inbox`: the approval inbox, a web page (`client.inbox`); a browser signed in there
  sends decisions here with its session cookie and CSRF token instead of a token.

Errors are JSON, `{"error": {"code", "message"}}`. Every POST, refused ones too, is
logged as one JSON line (logger `durable_agents.gateway.audit`, `_Audited`).
Followers of one run share one subscription (`_Hub`), so a hundred browsers
watching a run cost the run what one does.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

from durable_agents.client import events as run_events
from durable_agents.client.agent_client import AgentClient
from durable_agents.client.errors import (
    AgentClientError,
    AgentNotServed,
    ConnectError,
    DecisionRefused,
    InterruptRefused,
    MessageRefused,
    RunEnded,
    RunExists,
    RunNotFound,
    TemporalUnavailable,
)
from durable_agents.client.gateway_auth import ANONYMOUS, Caller, Callers, Scope
from durable_agents.client.inbox import InboxHeaders, inbox_routes, session_caller
from durable_agents.client.inbox_feed import InboxFeed
from durable_agents.client.inbox_sessions import Sessions
from durable_agents.client.proxy_identity import ProxyIdentity
from durable_agents.workflows import contract
from durable_agents.workflows import search_attributes as sa
from durable_agents.workflows.input_items import TextOrItems
from durable_agents.workflows.payloads import (
    AgentInput,
    DecideInput,
    InterruptResult,
    PendingApproval,
)
from durable_agents.workflows.state import RunState
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    TypeAdapter,
    ValidationError,
    field_validator,
)
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as Scope_
from temporalio.client import WorkflowExecutionStatus

audit = logging.getLogger("durable_agents.gateway.audit")
MAX_BODY = 1024 * 1024
HUB_BACKLOG = 1000
"""Events a run's shared subscription keeps for followers that fall behind."""
HUB_LINGER = 30.0
"""Seconds a shared subscription outlives its last follower (one who reconnects)."""


RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$"
"""A run id the gateway starts or addresses: no `/`, spaces or control characters."""
OWN_IDS = "gw-"
"""The prefix of the ids the gateway makes from a caller's `request_id` (no caller may
name one itself)."""
DELIVERY_IDS = re.compile(r"evt_[0-9a-f-]{32,36}_[0-9]+_")
"""The ids of the runs' webhook deliveries (`evt_<execution>_<seq>_<endpoint>`): a run
a caller started under one first would keep that delivery from ever starting."""


def reserved(run_id: str) -> str | None:
    """Why no caller may give a run `run_id`, or None."""
    if run_id.startswith(OWN_IDS):
        return f"run ids starting {OWN_IDS!r} are the gateway's own"
    if DELIVERY_IDS.match(run_id):
        return "run ids shaped evt_<execution>_<seq>_ are the webhook deliveries'"
    return None


class StartRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=200)
    input: TextOrItems
    """A text, or an input list (user messages with text and image parts)."""
    run_id: str | None = Field(None, pattern=RUN_ID)
    request_id: str | None = Field(None, min_length=1, max_length=200)
    context: JsonValue = None
    session: bool = False
    max_turns: int | None = Field(None, ge=1)
    stream: bool | None = None


async def _not_as_asked(agents: AgentClient, run_id: str, body: StartRequest) -> str | None:
    """Why the run under `run_id` (a `request_id`'s id, which anyone can compute) is not
    the run this request started, or None when it is: an AgentWorkflow on this task
    queue whose first start input is the one this request sends. A run started with
    that very input is the run asked for, whoever started it; any other is refused."""
    handle = agents.client.get_workflow_handle(run_id)
    held = f"run id {run_id} is held by a run this request did not start"
    try:
        described = await handle.describe()
        info = described.raw_description.workflow_execution_info
        first = agents.client.get_workflow_handle(run_id, run_id=info.first_run_id or None)
        async for event in first.fetch_history_events():
            attributes = event.workflow_execution_started_event_attributes
            payloads = list(attributes.input.payloads)
            break
        else:
            return held
        [given] = await agents.client.data_converter.decode(payloads, [AgentInput])
    except Exception as err:  # not readable as our start: not ours
        return f"{held} ({type(err).__name__})"
    if described.workflow_type != contract.WORKFLOW_TYPE or info.task_queue != agents.task_queue:
        return f"{held} (a {described.workflow_type} on task queue {info.task_queue!r})"
    asked = {
        "agent": body.agent,
        "input": body.model_dump(mode="json")["input"],
        "context": body.context,
        "max_turns": body.max_turns,
        "session": body.session,
        "stream": body.stream,
    }
    found = given.model_dump(mode="json")
    extra = {k for k, v in found.items() if k not in asked and v not in (None, False)}
    if any(found.get(k) != v for k, v in asked.items()) or extra:
        return f"{held} (started with another input)"
    return None


class MessageRequest(BaseModel):
    """A session's next message; with `agent`, the first one of a session that does
    not exist yet, which it starts under the path's run id (signal-with-start)."""

    model_config = ConfigDict(extra="forbid")

    content: TextOrItems
    """A text (not empty), or an input list (user messages with text and image parts)."""
    agent: str | None = Field(None, min_length=1, max_length=200)
    context: JsonValue = None
    stream: bool | None = None
    while_busy: Literal["queue", "interrupt", "reject"] | None = None
    """If the run is working on a turn: queue the message, interrupt the turn and answer
    it, or refuse it (409 `message_refused`); None: the agent's default."""

    @field_validator("content")
    @classmethod
    def _said(cls, content: Any) -> Any:
        if content == "":
            raise ValueError("a message is not empty")
        return content


def _content(body: MessageRequest) -> str | list[dict[str, Any]]:
    content: str | list[dict[str, Any]] = body.model_dump(mode="json")["content"]
    return content


class InterruptRequest(BaseModel):
    """Stop a run's current turn (the `interrupt` update); `by` defaults to the caller."""

    model_config = ConfigDict(extra="forbid", strict=True)

    by: str | None = Field(None, min_length=1, max_length=200)
    reason: str | None = Field(None, max_length=2_000)


class DecisionRequest(DecideInput):
    """The `decide` update's payload, with `arguments_sha256` required (the digest of the
    arguments the person who decided was shown) and `approver` optional (default: the
    caller). A signed one (`signature`) is sent exactly as it came."""

    approver: str = Field("", max_length=200)  # type: ignore[assignment]
    arguments_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")  # type: ignore[assignment]


class AnswerRequest(DecisionRequest):
    """The answer to a call of an external tool: a `DecisionRequest` whose `decision` is
    `answer` (it may be left out unless signed) and whose `result` is required (JSON,
    checked by the run against the tool's answer schema)."""

    decision: Literal["answer"] = "answer"  # type: ignore[assignment]
    result: JsonValue = Field(...)


def gateway_app(
    agents: AgentClient,
    callers: Callers | None,
    *,
    sessions: Sessions | None = None,
    feed: InboxFeed | None = None,
    ui: str | None = None,
    proxy: ProxyIdentity | None = None,
) -> Starlette:
    """The gateway over `agents`; `callers` None: no authentication (loopback only,
    checked by `agentctl serve`). `sessions` and `feed`: the inbox's (`client.inbox`;
    default: new ones). `ui`: the Temporal UI's address, for the inbox's links to runs
    (a `feed` given keeps its own). `proxy`: the identity header of a trusted proxy,
    which signs a browser in to the inbox (`client.proxy_identity`; never by default)."""
    hubs: dict[str, _Hub] = {}
    sessions = sessions or Sessions()
    sessions.bind(
        (lambda name: ANONYMOUS if name == ANONYMOUS.name else None)
        if callers is None
        else callers.named
    )
    feed = feed or InboxFeed(agents, ui=ui)

    def caller_of(request: Request) -> Caller:
        if callers is None:
            return ANONYMOUS
        if "authorization" not in request.headers:  # a browser signed in to the inbox?
            signed_in = session_caller(request, sessions)
            if signed_in is not None:
                return signed_in
        found = callers.find(request.headers.get("authorization"))
        if found is None:
            raise HTTPException(
                401,
                "a bearer token of a configured caller is required",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return found

    async def allowed(request: Request, scope: Scope, run_id: str | None = None) -> Caller:
        """The caller, if it may do `scope` (on the run `run_id`: of agents it may touch,
        both the one it started as, its `AgentName`, and the one answering now, which a
        handoff may have changed: `get_status`)."""
        caller = caller_of(request)
        request.state.caller = caller.name
        if not caller.may(scope):
            raise HTTPException(403, f"{caller.name} may not {scope}")
        if run_id is not None and caller.agents is not None:
            first = await _agent_of(agents, run_id)
            view = await agents.status(run_id)
            touched = {first or view.agent, view.current_agent or view.agent}
            if not touched <= set(caller.agents):
                raise HTTPException(403, f"{caller.name} may not {scope} this run")
        return caller

    async def start(request: Request) -> Response:
        caller = await allowed(request, "start")
        body = await _body(request, StartRequest)
        if not caller.may("start", body.agent):
            raise HTTPException(403, f"{caller.name} may not start runs of {body.agent!r}")
        run_id = body.run_id
        refused = reserved(run_id) if run_id is not None else None
        if refused is not None:
            raise HTTPException(400, refused)
        if run_id is None and body.request_id is not None:  # the same request: the same run
            key = json.dumps([caller.name, body.agent, body.request_id])
            run_id = f"{OWN_IDS}{hashlib.sha256(key.encode()).hexdigest()[:32]}"
        request.state.audit = {"action": "start", "agent": body.agent, "run_id": run_id}
        try:
            started = await agents.start(
                body.agent,
                body.model_dump(mode="json")["input"],
                context=body.context,
                max_turns=body.max_turns,
                run_id=run_id,
                session=body.session,
                stream=body.stream,
                new_id_only=True,  # an id is one run's, for good
            )
        except RunExists:
            if body.request_id is None or body.run_id is not None:
                raise
            assert run_id is not None
            foreign = await _not_as_asked(agents, run_id, body)
            if foreign is not None:  # someone took the id first: never handed over
                request.state.audit["outcome"] = "held by another run"
                raise HTTPException(409, foreign) from None
            request.state.audit["outcome"] = "existing"
            return JSONResponse({"run_id": run_id, "started": False})
        request.state.audit |= {"run_id": started.id, "outcome": "started"}
        return JSONResponse({"run_id": started.id, "started": True}, status_code=201)

    async def message(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        request.state.audit = {"action": "message", "run_id": run_id}
        caller = await allowed(request, "start")
        body = await _body(request, MessageRequest)
        try:
            await allowed(request, "start", run_id)  # the run's agent, if it exists
            await agents.message(run_id, _content(body), while_busy=body.while_busy)
        except RunNotFound:
            if body.agent is None:
                raise
            return await start_session(request, caller, run_id, body)
        request.state.audit["outcome"] = "sent"
        return JSONResponse({"run_id": run_id, "sent": True}, status_code=202)

    async def interrupt(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        request.state.audit = {"action": "interrupt", "run_id": run_id}
        caller = await allowed(request, "start", run_id)
        body = await _body(request, InterruptRequest)
        by = body.by or caller.name  # recorded as who interrupted: only a name it may use
        if not caller.may_approve_as(by):
            raise HTTPException(403, f"{caller.name} may not interrupt as {by[:60]!r}")
        done = await agents.interrupt(run_id, by=by, reason=body.reason)
        request.state.audit["outcome"] = "interrupted"
        return _json(done.model_dump(mode="json"))

    async def start_session(
        request: Request, caller: Caller, run_id: str, body: MessageRequest
    ) -> Response:
        """The first message of a session that does not exist: it starts it (or, when
        another request started it a moment before, is its next message)."""
        assert body.agent is not None
        if not caller.may("start", body.agent):
            raise HTTPException(403, f"{caller.name} may not start runs of {body.agent!r}")
        if not re.fullmatch(RUN_ID, run_id) or reserved(run_id) is not None:
            raise HTTPException(400, f"{run_id[:60]!r} cannot be a new run's id")
        request.state.audit["agent"] = body.agent
        try:
            await agents.start(
                body.agent,
                _content(body),
                context=body.context,
                run_id=run_id,
                session=True,
                stream=body.stream,
                new_id_only=True,
            )
        except RunExists:  # started a moment ago, maybe of another agent: checked again
            await allowed(request, "start", run_id)
            await agents.message(run_id, _content(body), while_busy=body.while_busy)
            request.state.audit["outcome"] = "sent"
            return JSONResponse({"run_id": run_id, "sent": True}, status_code=202)
        request.state.audit["outcome"] = "started"
        return JSONResponse({"run_id": run_id, "started": True}, status_code=201)

    async def status(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await allowed(request, "read", run_id)
        return _json((await agents.status(run_id)).model_dump(mode="json"))

    async def state(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        caller = await allowed(request, "read", run_id)
        found = await agents.state(run_id)
        found.sub_approvals = [s for s in found.sub_approvals if _may_see(caller, s.path)]
        found.sub_runs = [s for s in found.sub_runs if _may_see(caller, _agents_in(s.state))]
        return _json(found.model_dump(mode="json"))

    async def pending(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        caller = await allowed(request, "read", run_id)
        found = [p for p in await agents.pending(run_id) if _may_see(caller, p.path)]
        return _json(TypeAdapter(list[PendingApproval]).dump_python(found, mode="json"))

    async def decide(request: Request) -> Response:
        return await decided(request, DecisionRequest)

    async def answer(request: Request) -> Response:
        return await decided(request, AnswerRequest)

    async def decided(request: Request, model: type[DecisionRequest]) -> Response:
        run_id = request.path_params["run_id"]
        request.state.audit = {"action": "decide", "run_id": run_id}
        caller = await allowed(request, "decide", run_id)
        body = await _body(request, model)
        payload = json.loads(await request.body())  # as it came: a signature covers it
        if body.decision == "answer" and body.signature is None:  # (/answers) may omit it
            payload["decision"] = "answer"
        request.state.audit |= {"action": body.decision, "call_id": body.call_id}
        holder = await _holder(agents, run_id, body.call_id, body.run_id)
        if holder != run_id:  # a call of a run below: the caller must may touch it too
            request.state.audit["holder"] = holder
            await allowed(request, "decide", holder)
        if body.signature is None:  # unsigned: the gateway says who sends it, and checks who
            approver = body.approver or caller.name
            if not caller.may_approve_as(approver):
                raise HTTPException(403, f"{caller.name} may not decide as {approver!r}")
            if body.sender is not None:
                raise HTTPException(400, "sender is set by the gateway (gateway:<caller>)")
            payload |= {"approver": approver, "sender": f"gateway:{caller.name}"}
            payload["run_id"] = holder
        request.state.audit["approver"] = payload.get("approver")
        idempotency = request.headers.get("idempotency-key")
        if idempotency is not None:  # one caller's key never answers another's request
            key = json.dumps([caller.name, holder, idempotency])
            idempotency = f"{OWN_IDS}{hashlib.sha256(key.encode()).hexdigest()[:32]}"
        try:
            recorded = await agents.send_decision(run_id, payload, request_id=idempotency)
        finally:  # decided or refused: every open inbox reads again now
            feed.poke()
        request.state.audit["outcome"] = "recorded"
        return _json(recorded.model_dump(mode="json"))

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        await allowed(request, "read", run_id)
        after = _after(request)
        # What it missed, read now (a query): an unknown run, or one without events, is
        # an error answer, not a broken stream; an ended run with nothing new is 204,
        # so an EventSource that reconnects after `run_finished` stops.
        backlog = [e async for e in agents.events(run_id, after=after, follow=False)]
        if not backlog and (
            await _finished_at(agents, run_id, after) or await _ended(agents, run_id)
        ):
            return Response(status_code=204)
        hub = hubs.get(run_id)
        if hub is None or hub.done:
            hub = hubs[run_id] = _Hub(agents, run_id, lambda: hubs.pop(run_id, None))
        return EventSourceResponse(hub.serve(after, backlog), ping=15)

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok")

    async def document(_: Request) -> Response:
        return JSONResponse(openapi())

    routes = [
        Route("/healthz", healthz),
        Route("/openapi.json", document),
        Route("/runs", start, methods=["POST"]),
        # `path`: a sub-run's id has a `/` (`lead-4f2a/call_1`); the bare route comes last
        Route("/runs/{run_id:path}/state", state),
        Route("/runs/{run_id:path}/pending", pending),
        Route("/runs/{run_id:path}/messages", message, methods=["POST"]),
        Route("/runs/{run_id:path}/decisions", decide, methods=["POST"]),
        Route("/runs/{run_id:path}/interrupt", interrupt, methods=["POST"]),
        Route("/runs/{run_id:path}/answers", answer, methods=["POST"]),
        Route("/runs/{run_id:path}/events", events),
        Route("/runs/{run_id:path}", status),
        *inbox_routes(callers=callers, sessions=sessions, feed=feed, allowed=allowed, proxy=proxy),
    ]
    middleware = [Middleware(_Audited), Middleware(InboxHeaders)]
    if callers is None:  # open on loopback: no other site's page may reach it by name
        hosts = ["127.0.0.1", "localhost", "[::1]", "::1"]
        middleware.insert(0, Middleware(TrustedHostMiddleware, allowed_hosts=hosts))
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers=_HANDLERS,  # type: ignore[arg-type]
    )


def openapi() -> dict[str, Any]:
    """The gateway's OpenAPI 3.1 document (`schemas/gateway.openapi.json`); RunState and
    the run events are the published JSON Schemas beside it."""
    from durable_agents.client.inbox_openapi import MODELS as INBOX_MODELS
    from durable_agents.client.inbox_openapi import inbox_paths
    from durable_agents.workflows.payloads import StatusView
    from durable_agents.workflows.run_items import Decision
    from durable_agents.workflows.state import SCHEMA_VERSION
    from pydantic.json_schema import models_json_schema

    models: list[type[BaseModel]] = [
        StartRequest,
        MessageRequest,
        InterruptRequest,
        InterruptResult,
        DecisionRequest,
        AnswerRequest,
        StatusView,
        PendingApproval,
        Decision,
        *INBOX_MODELS,
    ]
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
                ("409", "refused (a decision), taken (a run id), or the run ended"),
                ("413", "a body larger than 1 MiB"),
                ("415", "a body that is not application/json"),
                ("502", "Temporal, or the run's workers, did not answer"),
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
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "inboxSession": {"type": "apiKey", "in": "cookie", "name": "inbox_session"},
            },
        },
        "security": [{"bearer": []}, {"inboxSession": []}],
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
            "/runs/{run_id}/interrupt": {
                "post": {
                    "summary": "stop the run's current turn (scope start)",
                    "parameters": run,
                    "requestBody": body("InterruptRequest"),
                    "responses": answer(ref("InterruptResult"), "the turn has stopped"),
                }
            },
            "/runs/{run_id}/decisions": {
                "post": {
                    "summary": "approve or reject a pending call (scope decide)",
                    "parameters": [
                        *run,
                        {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}},
                    ],
                    "requestBody": body("DecisionRequest"),
                    "responses": answer(ref("Decision"), "the recorded decision"),
                }
            },
            "/runs/{run_id}/answers": {
                "post": {
                    "summary": "answer a call of an external tool (scope decide)",
                    "parameters": [
                        *run,
                        {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}},
                    ],
                    "requestBody": body("AnswerRequest"),
                    "responses": answer(ref("Decision"), "the recorded answer"),
                }
            },
            "/runs/{run_id}/events": {
                "get": {
                    "summary": "the run's events, live (scope read)",
                    "parameters": [*run, *after],
                    "responses": {
                        "200": stream,
                        "204": {"description": "the run has ended and there is nothing newer"},
                    },
                }
            },
            **inbox_paths(answer, ref),
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
        asyncio.get_running_loop().call_later(HUB_LINGER, self._stop_if_unfollowed)

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

    async def serve(
        self, after: int, backlog: list[dict[str, Any]]
    ) -> AsyncIterator[dict[str, Any]]:
        """The SSE messages of `backlog` (the events after `after`, read already), then
        of the newer ones, until the run finishes."""
        self._followers += 1
        try:
            last = after
            for event in backlog:
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
                        problem = json.dumps({"message": self._error})
                        yield {"event": "gateway_error", "data": problem}
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
    if not (given.isascii() and given.isdigit()) or len(given) > 18:
        raise HTTPException(400, f"Last-Event-ID / after must be an event seq, not {given[:40]!r}")
    return int(given)


_M = TypeVar("_M", bound=BaseModel)


async def _body(request: Request, model: type[_M]) -> _M:
    """The request's JSON body as `model`; 400 with what is wrong."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":  # also keeps other sites' plain forms out
        raise HTTPException(415, "the body must be JSON (Content-Type: application/json)")
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY:
        raise HTTPException(413, f"the body is larger than {MAX_BODY} bytes")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise HTTPException(413, f"the body is larger than {MAX_BODY} bytes")
    request._body = raw  # read again by `decide` (the payload as it came)
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}" for e in err.errors()
        )
        raise HTTPException(400, f"invalid body: {problems}") from None


def _json(value: object, status_code: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status_code)


def _agents_in(state: RunState) -> list[str]:
    """The agents of a sub-run's state and of its own sub-runs, down the tree."""
    return [state.agent.name, *(a for s in state.sub_runs for a in _agents_in(s.state))]


def _may_see(caller: Caller, path: list[str]) -> bool:
    """Whether a caller scoped to agents may see a call held by a run below (`path`: the
    agents down to it); a run's own calls were checked with the run."""
    return caller.agents is None or set(path) <= set(caller.agents)


async def _holder(agents: AgentClient, run_id: str, call_id: str, named: str | None) -> str:
    """The run that holds `call_id`: `run_id` itself, or a run below it (an agent called
    as a tool) whose pending call it is, as the body names it (`run_id`) or, when it
    names none and the run has no such call of its own, as its pending calls say."""
    if named == run_id:
        return run_id
    pending = [p for p in await agents.pending(run_id) if call_id in (p.call_id, p.short_id)]
    below = [p.run_id for p in pending if p.run_id and p.run_id != run_id]
    if named is not None:
        if named not in below:
            raise HTTPException(
                400, f"the body's run_id is not {run_id!r} nor a run below it holding the call"
            )
        return named
    if len(below) == len(pending):  # not a pending call of the run itself
        return run_id if not below else _one(below)
    return run_id


def _one(below: list[str]) -> str:
    if len(set(below)) > 1:
        raise HTTPException(409, "runs below this one hold this call id: name one (run_id)")
    return below[0]


async def _agent_of(agents: AgentClient, run_id: str) -> str | None:
    """The run's agent, from its `AgentName` search attribute (no worker needed); None
    while it starts (then its status query says)."""
    with agents.translating(run_id):
        described = await agents.client.get_workflow_handle(run_id).describe()
    return described.typed_search_attributes.get(sa.AGENT_NAME)


async def _finished_at(agents: AgentClient, run_id: str, seq: int) -> bool:
    """Whether event `seq` is the run's `run_finished`: a reconnect just after it, before
    the workflow has closed, has nothing newer to wait for either."""
    if seq < 1:
        return False
    async for event in agents.events(run_id, after=seq - 1, follow=False):
        return event.get("seq") == seq and event.get("type") == run_events.FINAL
    return False


async def _ended(agents: AgentClient, run_id: str) -> bool:
    with agents.translating(run_id):
        described = await agents.client.get_workflow_handle(run_id).describe()
    return described.status not in (None, WorkflowExecutionStatus.RUNNING)


class _Audited:
    """One JSON line per request that changes something (or tries to): when, from
    where, who, what, which run and call, the HTTP status and the outcome."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope_, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        status = 500

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, sent)
        finally:
            state = scope.get("state") or {}
            client = scope.get("client")
            line = {
                "at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
                "from": client[0] if client else None,
                "caller": state.get("caller"),
                "path": scope["path"],
                **(state.get("audit") or {}),
                "status": status,
            }
            line.setdefault("outcome", "refused" if status >= 400 else "done")
            audit.info(json.dumps(line, default=str))


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    413: "too_large",
    415: "unsupported_media_type",
}


async def _http_error(_: Request, err: Exception) -> Response:
    assert isinstance(err, HTTPException)
    answer = _error(err.status_code, _CODES.get(err.status_code, "error"), str(err.detail))
    answer.headers.update(err.headers or {})
    return answer


async def _client_error(_: Request, err: Exception) -> Response:
    assert isinstance(err, AgentClientError)
    if isinstance(err, RunNotFound):
        return _error(404, "run_not_found", err.message)
    if isinstance(err, RunExists):
        return _error(409, "run_exists", err.message)
    if isinstance(err, RunEnded):
        return _error(409, "run_ended", err.message)
    if isinstance(err, AgentNotServed):
        return _error(400, "agent_not_served", err.message)
    if isinstance(err, TemporalUnavailable | ConnectError):
        return _error(502, "temporal_unavailable", err.message)
    return _error(400, "invalid_request", err.message)  # refused before it reached a run


async def _refused(_: Request, err: Exception) -> Response:
    assert isinstance(err, DecisionRefused)
    return _error(409, "decision_refused", err.message)


async def _steering_refused(_: Request, err: Exception) -> Response:
    code = "message_refused" if isinstance(err, MessageRefused) else "interrupt_refused"
    assert isinstance(err, AgentClientError)
    return _error(409, code, err.message)


_HANDLERS: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
    HTTPException: _http_error,
    DecisionRefused: _refused,
    MessageRefused: _steering_refused,
    InterruptRefused: _steering_refused,
    AgentClientError: _client_error,
}
