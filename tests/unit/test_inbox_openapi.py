"""The inbox's routes are in the gateway's OpenAPI document (client/inbox_openapi.py):
every `/inbox` route with its methods, every reference resolves, and the committed
`schemas/gateway.openapi.json` is the generated one."""

from __future__ import annotations

import json
from pathlib import Path

from durable_agents.client.gateway import gateway_app, openapi
from starlette.routing import Route

ROOT = Path(__file__).resolve().parents[2]


def refs(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in refs(v)]
    return []


def test_every_inbox_route_is_in_the_openapi_document():
    document = openapi()
    app = gateway_app(None, None)  # type: ignore[arg-type]  (routes only: nothing is called)
    routes = [r for r in app.routes if isinstance(r, Route) and r.path.startswith("/inbox")]
    assert len(routes) >= 9
    for route in routes:
        path = route.path.replace("{run_id:path}", "{run_id}")
        assert path in document["paths"], path
        for method in route.methods - {"HEAD"}:
            assert method.lower() in document["paths"][path], (path, method)
    signed_in = document["paths"]["/inbox/calls"]["get"]["security"]
    assert signed_in == [{"inboxSession": []}]
    assert document["components"]["securitySchemes"]["inboxSession"]["in"] == "cookie"


def test_every_reference_resolves_and_the_committed_document_is_current():
    document = openapi()
    schemas = document["components"]["schemas"]
    for ref in refs(document):
        if ref.startswith("#/components/schemas/"):
            assert ref.rsplit("/", 1)[1] in schemas, ref
    for name in ("InboxCalls", "InboxCall", "InboxSession", "RunContext", "SignIn"):
        assert name in schemas
    committed = json.loads((ROOT / "schemas" / "gateway.openapi.json").read_text())
    assert committed == json.loads(json.dumps(document))
