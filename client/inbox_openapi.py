"""The approval inbox's routes in the gateway's OpenAPI document (`client.gateway.openapi`,
`schemas/gateway.openapi.json`): the same pydantic models the routes answer with, so
the document cannot drift from them."""

from __future__ import annotations

from typing import Any

from durable_agents.client.inbox_context import RunContext
from durable_agents.client.inbox_feed import InboxCall, PolicyView
from durable_agents.client.inbox_sessions import COOKIE
from pydantic import BaseModel, Field


class SignIn(BaseModel):
    """`POST /inbox/session`: a caller's token, or `proxy` to sign in as the caller a
    trusted proxy's identity header names (`agentctl serve --proxy-identity-header`)."""

    token: str | None = Field(None, min_length=1)
    proxy: bool | None = None


class InboxSession(BaseModel):
    """Who is signed in, and the CSRF token every change made with the session carries
    (`X-CSRF-Token`)."""

    caller: str
    scopes: list[str]
    approve_as: list[str]
    """The approver names the caller may decide as (its own and its `approve_as`)."""
    approve_as_anyone: bool
    """True for an unauthenticated loopback gateway: any name."""
    csrf: str
    seconds_left: int


class InboxCalls(BaseModel):
    """`GET /inbox/calls`, and each `calls` event of `GET /inbox/feed`."""

    caller: str
    may_decide: bool
    calls: list[InboxCall]
    unanswered: list[str]
    """Runs listed as waiting that did not answer in time (their calls are missing)."""
    error: str | None
    """Why the last read failed; `calls` are then the last read's."""


MODELS: list[type[BaseModel]] = [
    SignIn,
    InboxSession,
    InboxCalls,
    InboxCall,
    PolicyView,
    RunContext,
]
"""What `client.gateway.openapi` adds to its components."""


def inbox_paths(answer: Any, ref: Any) -> dict[str, Any]:
    """The `/inbox` paths; `answer(schema, text)` and `ref(name)` are the document's."""
    session = [{"inboxSession": []}]
    csrf = {"name": "X-CSRF-Token", "in": "header", "required": True, "schema": {"type": "string"}}
    run = {"name": "run_id", "in": "path", "required": True, "schema": {"type": "string"}}

    def page(kind: str, what: str) -> dict[str, Any]:
        return {
            "get": {
                "summary": what,
                "security": [],
                "responses": {"200": {"description": what, "content": {kind: {}}}},
            }
        }

    return {
        "/inbox": page("text/html", "the approval inbox page (strict CSP, no framing)"),
        "/inbox/inbox.js": page("text/javascript", "the page's script"),
        "/inbox/inbox.css": page("text/css", "the page's style"),
        "/inbox/session": {
            "post": {
                "summary": f"sign in: sets the {COOKIE} cookie (same-origin only)",
                "security": [],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": ref("SignIn")}},
                },
                "responses": answer(ref("InboxSession"), "signed in"),
            },
            "get": {
                "summary": "who is signed in, and the session's CSRF token",
                "security": session,
                "responses": answer(ref("InboxSession"), "the session"),
            },
        },
        "/inbox/session/end": {
            "post": {
                "summary": "sign out: the session ends on every gateway sharing its key",
                "security": session,
                "parameters": [csrf],
                "responses": answer({"type": "object"}, "signed out"),
            }
        },
        "/inbox/calls": {
            "get": {
                "summary": "every call waiting for a decision the caller may see (scope read)",
                "security": session,
                "responses": answer(ref("InboxCalls"), "the waiting calls"),
            }
        },
        "/inbox/feed": {
            "get": {
                "summary": "the waiting calls, live: an SSE event `calls` (an InboxCalls) on "
                "each change, `signed_out` when the session ends (scope read)",
                "security": session,
                "responses": {
                    "200": {
                        "description": "server-sent events",
                        "content": {"text/event-stream": {"schema": ref("InboxCalls")}},
                    }
                },
            }
        },
        "/inbox/context/{run_id}": {
            "get": {
                "summary": "on demand: the run's summary, status, conversation and Temporal "
                "UI link (scope read on the run; queries only, nothing written)",
                "security": session,
                "parameters": [run],
                "responses": answer(ref("RunContext"), "the run's context"),
            }
        },
    }
