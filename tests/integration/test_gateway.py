"""The HTTP gateway (`agentctl serve`, `client.gateway`) against the real dev server,
worker and scripted model, served by uvicorn and driven with an HTTP client: start
(idempotent), status, state, pending, decisions (the digest echoed), events over SSE
(resumed with `Last-Event-ID`, one shared subscription for many followers); bearer
tokens with scopes and agents, and hostile requests, each answered with the right
status and a clear message; an audit line for every change."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
import uvicorn
from durable_agents.client.agent_client import decision_payload
from durable_agents.client.gateway import gateway_app
from durable_agents.client.gateway_auth import Callers, GatewayConfigError, load_callers
from durable_agents.workflows.event_models import RUN_EVENT
from durable_agents.workflows.state import RunStatus

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply
from tests.support.approver_keys import ALICE
from tests.support.cli_support import bound_to, error_lines
from tests.support.doc_blocks import page
from tests.support.runs import free_port, temporal_cli, wait_for_status

READER, DECIDER, STARTER, SUPPORT_ONLY = (f"{n}-token-0123456789abcdef" for n in "rdsa")
REFUND = Call("refund", {"order": "A12", "amount": 250}, call_id="r1")


def callers(tmp_path) -> Callers:
    file = tmp_path / "callers.json"
    file.write_text(
        json.dumps(
            [
                {"name": "dashboard", "token_env": "T_READ", "scopes": ["read"]},
                {
                    "name": "desk",
                    "token_env": "T_DECIDE",
                    "scopes": ["read", "decide"],
                    "approve_as": ["ann"],
                },
                {"name": "bot", "token_env": "T_START", "scopes": ["start", "read"]},
                {
                    "name": "support-desk",
                    "token_env": "T_SUPPORT",
                    "scopes": ["read", "decide"],
                    "agents": ["support"],
                },
            ]
        )
    )
    env = {
        "AGENT_GATEWAY_TOKENS": str(file),
        "T_READ": READER,
        "T_DECIDE": DECIDER,
        "T_START": STARTER,
        "T_SUPPORT": SUPPORT_ONLY,
    }
    return load_callers(env)


@asynccontextmanager
async def gateway(worker, known: Callers | None) -> AsyncIterator[str]:
    agents = AgentClient(worker.client, task_queue=worker.task_queue)
    port = free_port()
    config = uvicorn.Config(
        gateway_app(agents, known), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(10):
        while not server.started:
            await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def json_type(token: str) -> dict[str, str]:
    return {**bearer(token), "content-type": "application/json"}


async def sse(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> list[dict]:
    """The SSE messages of `url` until the server ends the stream: id, event, data."""
    found, message = [], {}
    async with asyncio.timeout(30), http.stream("GET", url, headers=headers) as answer:
        assert answer.status_code == 200, await answer.aread()
        assert answer.headers["content-type"].startswith("text/event-stream")
        async for line in answer.aiter_lines():
            if not line:
                if "data" in message:
                    found.append(message)
                message = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                message[key] = value
    return found


async def test_start_decide_and_follow_over_http(worker, model_server, tmp_path, caplog):
    model_server.script(Reply(tool_calls=(REFUND,)), Reply("refunded"))
    caplog.set_level(logging.INFO, logger="durable_agents.gateway.audit")
    async with (
        gateway(worker, callers(tmp_path)) as url,
        httpx2.AsyncClient(base_url=url, timeout=30) as http,
    ):
        start = {"agent": "assistant", "input": "refund A12", "request_id": "req-1"}
        first = await http.post("/runs", json=start, headers=bearer(STARTER))
        assert first.status_code == 201, first.text
        run_id = first.json()["run_id"]
        again = await http.post("/runs", json=start, headers=bearer(STARTER))
        assert (again.status_code, again.json()) == (200, {"run_id": run_id, "started": False})
        followers = [
            asyncio.create_task(sse(http, f"/runs/{run_id}/events", bearer(READER)))
            for _ in range(6)  # more than a run lets poll at once: they share one
        ]
        async with asyncio.timeout(15):
            while not (await http.get(f"/runs/{run_id}/pending", headers=bearer(READER))).json():
                await asyncio.sleep(0.1)
        [asked] = (await http.get(f"/runs/{run_id}/pending", headers=bearer(READER))).json()
        status = (await http.get(f"/runs/{run_id}", headers=bearer(READER))).json()
        assert (status["status"], status["agent"]) == ("awaiting_approval", "assistant")
        decision = {"call_id": "r1", "decision": "approve", "approver": "ann"}
        blind = await http.post(f"/runs/{run_id}/decisions", json=decision, headers=bearer(DECIDER))
        assert blind.status_code == 400 and "arguments_sha256" in blind.json()["error"]["message"]
        digest = {"arguments_sha256": asked["arguments_sha256"]}
        as_boss = {**decision, **digest, "approver": "boss"}  # on the policy's list, not desk's
        posing = await http.post(f"/runs/{run_id}/decisions", json=as_boss, headers=bearer(DECIDER))
        assert posing.status_code == 403 and "may not decide as 'boss'" in posing.text
        wrong = {**decision, "arguments_sha256": "0" * 64}
        refused = await http.post(f"/runs/{run_id}/decisions", json=wrong, headers=bearer(DECIDER))
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "decision_refused"
        shown = {**decision, "arguments_sha256": asked["arguments_sha256"]}
        made = await http.post(f"/runs/{run_id}/decisions", json=shown, headers=bearer(DECIDER))
        assert made.status_code == 200, made.text
        assert (made.json()["decision"], made.json()["approver"]) == ("approve", "ann")
        assert made.json()["sender"] == "gateway:desk"
        streams = await asyncio.gather(*followers)
        resumed = await sse(
            http, f"/runs/{run_id}/events", {**bearer(READER), "last-event-id": "5"}
        )
        last = str(len(streams[0]))
        ended = await http.get(
            f"/runs/{run_id}/events", headers={**bearer(READER), "last-event-id": last}
        )
        assert ended.status_code == 204  # an EventSource reconnecting after the end stops
        state = (await http.get(f"/runs/{run_id}/state", headers=bearer(READER))).json()
    assert state["status"] == "completed" and state["final_output"] == "refunded"
    assert all(s == streams[0] for s in streams)
    events = [json.loads(m["data"]) for m in streams[0]]
    for message, event in zip(streams[0], events, strict=True):
        RUN_EVENT.validate_python(event)
        assert (message["id"], message["event"]) == (str(event["seq"]), event["type"])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1]["type"] == "run_finished"
    assert resumed == streams[0][5:]
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name.endswith("audit")]
    assert [(a["caller"], a["action"], a["outcome"], a["status"]) for a in lines] == [
        ("bot", "start", "started", 201),
        ("bot", "start", "existing", 200),
        ("desk", "decide", "refused", 400),  # no digest: refused before it was read
        ("desk", "approve", "refused", 403),
        ("desk", "approve", "refused", 409),
        ("desk", "approve", "recorded", 200),
    ]
    assert all(a["run_id"] == run_id and a["from"] == "127.0.0.1" for a in lines[1:])
    assert all(READER not in r.getMessage() for r in caplog.records)


async def test_an_idempotency_key_answers_only_the_request_it_was_first_used_for(
    worker, model_server, tmp_path
):
    other = Call("refund", {"order": "B7", "amount": 500}, call_id="r2")
    model_server.script(Reply(tool_calls=(REFUND, other)), Reply("one refunded"))
    async with (
        gateway(worker, callers(tmp_path)) as url,
        httpx2.AsyncClient(base_url=url, timeout=30) as http,
    ):
        start = {"agent": "assistant", "input": "refund both"}
        run_id = (await http.post("/runs", json=start, headers=bearer(STARTER))).json()["run_id"]
        async with asyncio.timeout(15):
            while (
                len(
                    asked := (
                        await http.get(f"/runs/{run_id}/pending", headers=bearer(READER))
                    ).json()
                )
                < 2
            ):
                await asyncio.sleep(0.1)
        digests = {p["call_id"]: p["arguments_sha256"] for p in asked}

        def decision(call_id: str, verdict: str) -> dict:
            made = {"call_id": call_id, "decision": verdict, "approver": "ann"}
            return {**made, "arguments_sha256": digests[call_id]}

        keyed = {**bearer(DECIDER), "idempotency-key": "1"}
        decisions = f"/runs/{run_id}/decisions"
        first = await http.post(decisions, json=decision("r1", "approve"), headers=keyed)
        retried = await http.post(decisions, json=decision("r1", "approve"), headers=keyed)
        assert (first.status_code, retried.status_code) == (200, 200)
        assert retried.json() == first.json()  # a retry: the first answer, nothing new
        reused = await http.post(decisions, json=decision("r2", "reject"), headers=keyed)
        assert reused.status_code == 409, reused.text
        assert "was used for another decision (approve 'r1')" in reused.json()["error"]["message"]
        left = (await http.get(f"/runs/{run_id}/pending", headers=bearer(READER))).json()
        assert [p["call_id"] for p in left] == ["r2"]  # not answered by r1's decision
        fresh = {**bearer(DECIDER), "idempotency-key": "2"}
        made = await http.post(decisions, json=decision("r2", "reject"), headers=fresh)
        assert (made.status_code, made.json()["call_id"]) == (200, "r2")


async def test_tokens_scopes_and_hostile_requests(worker, model_server, tmp_path):
    model_server.script(Reply(tool_calls=(REFUND,)))
    async with (
        gateway(worker, callers(tmp_path)) as url,
        httpx2.AsyncClient(base_url=url, timeout=30) as http,
    ):
        started = await http.post(
            "/runs", json={"agent": "assistant", "input": "x"}, headers=bearer(STARTER)
        )
        run_id = started.json()["run_id"]
        checks = [
            ("GET", f"/runs/{run_id}", {}, None, 401, "bearer token"),
            ("GET", f"/runs/{run_id}", {"authorization": "Bearer nope"}, None, 401, "bearer"),
            ("GET", f"/runs/{run_id}", {"authorization": f"Basic {READER}"}, None, 401, "bearer"),
            ("POST", "/runs", bearer(READER), {"agent": "assistant", "input": "x"}, 403, "start"),
            ("POST", f"/runs/{run_id}/decisions", bearer(STARTER), {}, 403, "may not decide"),
            ("GET", f"/runs/{run_id}", bearer(SUPPORT_ONLY), None, 403, "may not read this run"),
            ("GET", "/runs/no-such-run", bearer(READER), None, 404, "no run with id"),
            ("GET", "/nowhere", bearer(READER), None, 404, "Not Found"),
            ("POST", "/runs", json_type(STARTER), "{not json", 400, "invalid body"),
            ("POST", "/runs", bearer(STARTER), "agent=assistant", 415, "must be JSON"),
            (
                "POST",
                "/runs",
                bearer(STARTER),
                {"agent": "a", "input": "", "run_id": "a/b"},
                400,
                "run_id",
            ),
            (
                "POST",
                "/runs",
                bearer(STARTER),
                {"agent": "a", "input": "", "run_id": "gw-1"},
                400,
                "run ids starting 'gw-' are the gateway's own",
            ),
            (  # a run's webhook delivery id: started first, it would keep one from starting
                "POST",
                "/runs",
                bearer(STARTER),
                {"agent": "a", "input": "", "run_id": f"evt_{'0a' * 16}_1_approvals"},
                400,
                "are the webhook deliveries'",
            ),
            ("GET", f"/runs/{run_id}/events?after=%C2%B2", bearer(READER), None, 400, "seq"),
            ("POST", "/runs", bearer(STARTER), {"agent": "assistant"}, 400, "input"),
            ("POST", "/runs", bearer(STARTER), {"agent": "ghost", "input": "x"}, 400, "ghost"),
            ("POST", "/runs", bearer(STARTER), {"agent": "a", "input": "x", "x": 1}, 400, "x"),
            ("GET", f"/runs/{run_id}/events?after=-1", bearer(READER), None, 400, "seq"),
        ]
        for method, path, headers, body, status, words in checks:
            content = body if isinstance(body, str) else None
            payload = None if isinstance(body, str) else body
            answer = await http.request(
                method, path, headers=headers, json=payload, content=content
            )
            assert answer.status_code == status, (path, answer.text)
            assert words in answer.json()["error"]["message"], (path, answer.text)
        document = await http.get("/openapi.json")  # public, as /healthz
        assert (
            document.status_code == 200 and "/runs/{run_id}/decisions" in document.json()["paths"]
        )
        taken = await http.post(
            "/runs",
            json={"agent": "assistant", "input": "x", "run_id": run_id},
            headers=bearer(STARTER),
        )
        assert (taken.status_code, taken.json()["error"]["code"]) == (409, "run_exists")
        await worker.client.get_workflow_handle(run_id).cancel()


def test_a_callers_file_is_checked(tmp_path):
    file = tmp_path / "callers.json"
    cases = [
        ("{}", {}, "a JSON list"),
        ('[{"name": "a", "token_env": "T", "scopes": ["admin"]}]', {"T": "x" * 20}, "scopes"),
        ('[{"name": "a", "token_env": "T", "scopes": ["read"]}]', {}, "$T (its token) is not set"),
        ('[{"name": "a", "token_env": "T", "scopes": ["read"]}]', {"T": "short"}, "shorter"),
        ('[{"name": "a", "token_env": "T", "scopes": ["read"], "x": 1}]', {}, "unknown fields"),
        ("not json", {}, "not JSON"),
    ]
    for text, extra, words in cases:
        file.write_text(text)
        with pytest.raises(GatewayConfigError, match=re.escape(words)):
            load_callers({"AGENT_GATEWAY_TOKENS": str(file), **extra})
    assert len(load_callers({})) == 0


async def test_agentctl_serve_refuses_to_run_open_or_without_callers(worker):
    ctl = bound_to(worker)
    open_to_all = await ctl("serve", "--host", "0.0.0.0", "--allow-unauthenticated")
    assert open_to_all.code == 1
    assert "only on a loopback address" in error_lines(open_to_all.stderr)[0]
    nobody = await ctl("serve", "--port", str(free_port()))
    assert nobody.code == 1 and "no callers" in error_lines(nobody.stderr)[0]


def test_the_docs_callers_file_loads(tmp_path):
    """docs/how-to/gateway.md's callers.json (run end to end, curl and all, by
    tests/integration/test_docs_examples.py): the desk decides as ann, on my-support only."""
    section = page("how-to/gateway.md")
    document = section.split("cat > callers.json <<'EOF'\n", 1)[1].split("\nEOF", 1)[0]
    file = tmp_path / "callers.json"
    file.write_text(document)
    env = {"AGENT_GATEWAY_TOKENS": str(file), "DESK_TOKEN": "d" * 48, "BOT_TOKEN": "b" * 48}
    loaded = load_callers(env)
    desk = loaded.find("Bearer " + "d" * 48)
    assert desk is not None and desk.may("decide", "my-support") and not desk.may("decide", "x")
    assert desk.may_approve_as("ann") and not desk.may_approve_as("bob")
    bot = loaded.find("Bearer " + "b" * 48)
    assert bot is not None and bot.may("start", "anything") and not bot.may("decide")


async def test_a_signed_decision_passes_through_unchanged(worker, model_server, tmp_path):
    model_server.script(
        Reply(tool_calls=(Call("pay", {"order": "A1", "amount": 10}, call_id="p1"),)),
        Reply("paid"),
    )
    async with (
        gateway(worker, callers(tmp_path)) as url,
        httpx2.AsyncClient(base_url=url, timeout=30) as http,
    ):
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        run_id = (await agents.start("treasurer", "pay A1")).id
        async with asyncio.timeout(15):
            while not (pending := await agents.pending(run_id)):
                await asyncio.sleep(0.1)
        [asked] = pending
        unsigned = {"call_id": "p1", "decision": "approve", "approver": "ann"}
        unsigned["arguments_sha256"] = asked.arguments_sha256
        refused = await http.post(
            f"/runs/{run_id}/decisions", json=unsigned, headers=bearer(DECIDER)
        )
        assert refused.status_code == 409 and "sign" in refused.text  # the policy wants alice's
        signed = decision_payload(
            run_id,
            "p1",
            "approve",
            signal=False,
            approver=None,
            arguments_sha256=asked.arguments_sha256,
            execution_id=asked.execution_id,
            signing_key=ALICE,
        )
        made = await http.post(f"/runs/{run_id}/decisions", json=signed, headers=bearer(DECIDER))
        assert made.status_code == 200, made.text
        assert (made.json()["approver"], made.json()["decision"]) == ("alice", "approve")
        assert (await agents.result(run_id)).final_output == "paid"


async def test_an_open_gateway_answers_only_loopback_names(worker, model_server):
    async with gateway(worker, None) as url, httpx2.AsyncClient(base_url=url, timeout=30) as http:
        assert (await http.get("/healthz")).status_code == 200
        rebound = await http.get("/healthz", headers={"host": "attacker.example"})
        assert rebound.status_code == 400  # a page of another site, by DNS rebinding


async def test_a_message_starts_its_session_when_there_is_none(worker, model_server, tmp_path):
    model_server.script(Reply("hello"), Reply("again"))
    async with (
        gateway(worker, callers(tmp_path)) as url,
        httpx2.AsyncClient(base_url=url, timeout=30) as http,
    ):
        first = {"content": "hi", "agent": "assistant"}
        started = await http.post("/runs/chat-42/messages", json=first, headers=bearer(STARTER))
        assert (started.status_code, started.json()) == (
            201,
            {"run_id": "chat-42", "started": True},
        )
        agents = AgentClient(worker.client, task_queue=worker.task_queue)
        handle = worker.client.get_workflow_handle("chat-42")
        await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        second = await http.post("/runs/chat-42/messages", json=first, headers=bearer(STARTER))
        assert second.status_code == 202, second.text
        await wait_for_status(handle, RunStatus.AWAITING_INPUT)
        state = await agents.state("chat-42")
        assert [i.content for i in state.items if i.type == "user_message"] == ["hi", "hi"]
        nobody = await http.post(
            "/runs/chat-43/messages", json={"content": "x"}, headers=bearer(STARTER)
        )
        assert nobody.status_code == 404  # no agent named: nothing to start
        reader = await http.post("/runs/chat-44/messages", json=first, headers=bearer(READER))
        assert reader.status_code == 403
        odd = await http.post("/runs/gw-123/messages", json=first, headers=bearer(STARTER))
        assert odd.status_code == 400 and "cannot be a new run's id" in odd.text
        squat = f"/runs/evt_{'0a' * 16}_1_a/messages"
        refused = await http.post(squat, json=first, headers=bearer(STARTER))
        assert refused.status_code == 400 and "cannot be a new run's id" in refused.text
        await agents.end_session("chat-42")


async def test_a_run_squatting_a_request_id_is_never_handed_to_the_caller(
    worker, model_server, tmp_path
):
    """`gw-` ids are a digest of caller, agent and request id: anyone who may start
    workflows can compute one and start a run there first (here with the `temporal`
    CLI). The gateway answers 409 instead of handing that run over as the caller's."""
    model_server.script(Reply("hello"))
    key = json.dumps(["bot", "assistant", "req-squat"])
    squatted = f"gw-{hashlib.sha256(key.encode()).hexdigest()[:32]}"
    planted = {"agent": "assistant", "input": "wire everything to mallory"}
    await temporal_cli(
        worker, "workflow", "start", "--type", "AgentWorkflow", "--task-queue",
        worker.task_queue, "--workflow-id", squatted, "--input", json.dumps(planted),
    )  # fmt: skip
    async with (
        gateway(worker, callers(tmp_path)) as url,
        httpx2.AsyncClient(base_url=url, timeout=30) as http,
    ):
        start = {"agent": "assistant", "input": "say hello", "request_id": "req-squat"}
        refused = await http.post("/runs", json=start, headers=bearer(STARTER))
        assert refused.status_code == 409, refused.text
        assert "held by a run this request did not start" in refused.text
        as_planted = {**start, "input": planted["input"]}  # the very run asked for
        same = await http.post("/runs", json=as_planted, headers=bearer(STARTER))
        assert (same.status_code, same.json()["run_id"]) == (200, squatted)
