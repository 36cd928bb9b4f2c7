"""An attacker's requests to the gateway's newer entry points (the inbox's sessions, a
trusted proxy's identity, the run context, decisions with `always_when`, input lists),
sent from outside: httpx against the gateway served by uvicorn with the settings
`agentctl serve` uses, `agentctl serve` itself, the real dev server, worker and
scripted model. Each test names the defect it was written for, or what held."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import httpx2
import pytest
from durable_agents.client.errors import RunNotFound
from durable_agents.client.gateway import gateway_app
from durable_agents.client.inbox_feed import InboxFeed
from durable_agents.client.inbox_sessions import SessionConfigError, configured
from durable_agents.client.proxy_identity import ProxyIdentity
from durable_agents.workflows.agent_spec import ApprovalPolicy
from durable_agents.workflows.run_items import Decision

from durable_agents import Agent, AgentClient, ToolContext, tool
from durable_agents.testing import Call, Reply, ScriptedModelServer
from tests.conftest import serving
from tests.integration.test_inbox import DESK, Scripts, as_session, callers
from tests.integration.test_inbox_tls_proxy import served_with
from tests.support.cli_support import bound_to, error_lines
from tests.support.runs import free_port

VAULT: list[str] = []
SECRET = "hunter2-0451-secret"


@tool(needs_approval=ApprovalPolicy(), sensitive=["passphrase"])
def unlock(passphrase: str, door: str, ctx: ToolContext) -> str:
    """Open a door with its passphrase (people see the passphrase only on request)."""
    VAULT.append(door)
    return f"opened {door}"


keeper = Agent(name="keeper", instructions="Keep.", model="test-model", tools=[unlock])


@pytest.fixture
async def served(env, tmp_path) -> AsyncIterator[tuple]:
    scripts = Scripts()
    with ScriptedModelServer(responder=scripts) as model:
        async with serving(env.client, model, extra_agents=[keeper]) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            yield agents, scripts, callers(tmp_path)


async def waiting(agents: AgentClient, run_id: str) -> list:
    async with asyncio.timeout(30):
        while not (found := await agents.pending(run_id)):
            await asyncio.sleep(0.1)
    return found


async def test_an_always_rule_on_a_sensitive_argument_keeps_its_value_masked(served):
    """Defect: an `always` whose `always_when` names a sensitive argument showed that
    argument's value in full in the run's context (`GET /inbox/context`), though the
    call's own arguments are masked there."""
    agents, scripts, known = served
    call = Call("unlock", {"passphrase": SECRET, "door": "north"}, call_id="u1")
    scripts.by_input["attack: unlock"] = [Reply(tool_calls=(call,)), Reply("open")]
    run_id = (await agents.start("keeper", "attack: unlock")).id
    [item] = await waiting(agents, run_id)
    async with (
        served_with(gateway_app(agents, known, feed=InboxFeed(agents))) as port,
        httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http,
    ):
        signed = await http.post("/inbox/session", json={"token": DESK})
        cookie, csrf = signed.cookies["inbox_session"], signed.json()["csrf"]
        http.cookies.clear()
        decision = {
            "call_id": "u1",
            "decision": "approve",
            "run_id": run_id,
            "arguments_sha256": item.arguments_sha256,
            "always": True,
            "always_when": [{"field": "passphrase", "op": "==", "value": SECRET}],
        }
        decided = await http.post(
            f"/runs/{run_id}/decisions", json=decision, headers=as_session(cookie, csrf)
        )
        assert decided.status_code == 200, decided.text
        assert (await agents.result(run_id)).final_output == "open"
        [made] = [i for i in (await agents.state(run_id)).items if isinstance(i, Decision)]
        assert made.always_when is not None  # the rule holds the value; nobody is shown it
        context = await http.get(f"/inbox/context/{run_id}", headers=as_session(cookie))
        assert context.status_code == 200
        shown = [e["text"] for e in context.json()["conversation"] if e["kind"] == "decision"]
        assert len(shown) == 1 and "always" in shown[0] and "passphrase ==" in shown[0]
        assert SECRET not in context.text


async def test_a_repeated_proxy_identity_header_signs_nobody_in(served, caplog):
    """Defect: with two identity headers (a client's own, passed on by a proxy that
    adds its header instead of replacing it), the first one, the client's, named the
    caller. Now two values are refused and logged; case and unicode variants held."""
    agents, _, known = served
    trusted = ProxyIdentity.parse("X-Forwarded-User", ["127.0.0.1"])
    app = gateway_app(agents, known, feed=InboxFeed(agents), proxy=trusted)
    async with (
        served_with(app, behind_trusted_proxy=True) as port,
        httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http,
    ):
        sign_in = {"json": {"proxy": True}}
        with caplog.at_level(logging.WARNING, logger="durable_agents.gateway.audit"):
            twice = await http.post(
                "/inbox/session",
                headers=[("X-Forwarded-User", "desk"), ("X-Forwarded-User", "reader")],
                **sign_in,
            )
        assert twice.status_code == 401, twice.text
        assert "set-cookie" not in twice.headers
        assert any("proxy_identity_repeated" in r.getMessage() for r in caplog.records)
        for spoofed in ("d\u0435sk", "DESK", "desk\u200b", "desk, reader"):  # Cyrillic e
            odd = await http.post(
                "/inbox/session", headers={"x-forwarded-user": spoofed.encode()}, **sign_in
            )
            assert odd.status_code == 401, spoofed
        lower = await http.post("/inbox/session", headers={"x-FORWARDED-user": "desk"}, **sign_in)
        assert lower.status_code == 200 and lower.json()["caller"] == "desk"


async def test_a_proxy_reached_over_ipv4_mapped_ipv6_is_the_trusted_proxy(served):
    """Defect: a gateway listening on `::` sees an IPv4 proxy as `::ffff:10.0.0.5`, which
    `--trusted-proxy 10.0.0.5` did not match: the proxy's header was ignored. A mapped
    address of an untrusted one is still untrusted."""
    agents, _, known = served
    trusted = ProxyIdentity.parse("X-Forwarded-User", ["10.0.0.5"])
    app = gateway_app(agents, known, feed=InboxFeed(agents), proxy=trusted)
    for peer, status in (("::ffff:10.0.0.5", 200), ("::ffff:10.0.0.6", 401)):
        transport = httpx2.ASGITransport(app=app, client=(peer, 4000))
        async with httpx2.AsyncClient(transport=transport, base_url="http://gw") as http:
            answer = await http.post(
                "/inbox/session", json={"proxy": True}, headers={"X-Forwarded-User": "desk"}
            )
            assert answer.status_code == status, (peer, answer.text)


async def test_a_browser_behind_a_trusted_proxy_that_ends_tls_signs_in(served):
    """Defect: behind a proxy that ends TLS, the gateway saw `http` (uvicorn's forwarded
    headers are off when a proxy's identity is trusted), so the browser's `https` Origin
    was taken for another site's: every sign-in was refused, and the cookie lacked
    `Secure`. A trusted proxy's `X-Forwarded-Proto` now says the scheme; anyone else's is
    ignored."""
    agents, _, known = served
    trusted = ProxyIdentity.parse("X-Forwarded-User", ["10.0.0.5"])
    app = gateway_app(agents, known, feed=InboxFeed(agents), proxy=trusted)
    headers = {
        "Host": "inbox.example.com",
        "Origin": "https://inbox.example.com",
        "X-Forwarded-Proto": "https",
        "X-Forwarded-User": "desk",
    }
    for peer, status in (("10.0.0.5", 200), ("10.0.0.6", 403)):
        transport = httpx2.ASGITransport(app=app, client=(peer, 4000))
        async with httpx2.AsyncClient(transport=transport, base_url="http://gw") as http:
            answer = await http.post("/inbox/session", json={"proxy": True}, headers=headers)
            assert answer.status_code == status, (peer, answer.text)
            if status == 200:
                assert "secure" in answer.headers["set-cookie"].lower()


@pytest.mark.parametrize(
    ("trusted", "words"),
    [
        ("0.0.0.0/0", "every address"),
        ("::/0", "every address"),
        ("10.0.0.5/8", "has host bits set"),
        ("10.0.0.0/33", "not an address or CIDR range"),
        ("", "not an address or CIDR range"),
    ],
)
async def test_agentctl_serve_refuses_a_trusted_proxy_range_that_trusts_too_much(
    worker, trusted, words
):
    """Defect: `--trusted-proxy 0.0.0.0/0` believed anyone's header (anyone who reaches
    the port names themselves), and `10.0.0.5/8` silently trusted all of 10.0.0.0/8."""
    ctl = bound_to(worker)
    options = ["--proxy-identity-header", "X-Forwarded-User", "--trusted-proxy", trusted]
    refused = await ctl("serve", "--allow-unauthenticated", "--port", str(free_port()), *options)
    assert refused.code == 1
    assert words in error_lines(refused.stderr)[0]


async def test_agentctl_serve_refuses_a_revocation_file_it_cannot_use(
    worker, tmp_path, monkeypatch
):
    """Defect: a revocation file that is a folder (or cannot be opened to append) let
    `serve` start, and then every sign-in cookie and sign-out failed with a 500."""
    monkeypatch.setenv("AGENT_INBOX_SESSION_KEY", "k" * 40)
    monkeypatch.setenv("AGENT_INBOX_REVOCATIONS", str(tmp_path))
    ctl = bound_to(worker)
    refused = await ctl("serve", "--allow-unauthenticated", "--port", str(free_port()))
    assert refused.code == 1
    assert "AGENT_INBOX_REVOCATIONS" in error_lines(refused.stderr)[0]
    env = {"AGENT_INBOX_SESSION_KEY": "k" * 40, "AGENT_INBOX_REVOCATIONS": str(tmp_path)}
    with pytest.raises(SessionConfigError, match="not a file"):
        configured(env)


def test_expired_sign_outs_in_the_revocation_file_are_not_held(tmp_path):
    """Defect: every line of the revocation file was held in memory, expired or not
    (the docs say expired lines are skipped): a file of years of sign-outs grew every
    gateway's memory by all of them. Only the open ones are held, and a signed-out
    cookie is still refused."""
    file = tmp_path / "revoked.jsonl"
    key = {"AGENT_INBOX_SESSION_KEY": "k" * 40, "AGENT_INBOX_REVOCATIONS": str(file)}
    now = [1_000_000.0]
    file.write_text("".join(json.dumps({"n": f"old{i}", "e": 10.0}) + "\n" for i in range(5000)))
    sessions = configured(key)
    sessions._clock = lambda: now[0]  # the sessions' clock, moved by the test
    from durable_agents.client.gateway_auth import Caller

    desk = Caller(name="desk", scopes=frozenset({"read"}), agents=None)
    sessions.bind(lambda name: desk if name == "desk" else None)
    cookie, _ = sessions.open(desk)
    assert sessions.find(cookie) is not None
    sessions.close(cookie)
    again = configured(key)  # another gateway, reading the whole file
    again._clock = lambda: now[0]
    again.bind(lambda name: desk if name == "desk" else None)
    assert again.find(cookie) is None
    assert len(again._revoked._until) == 1


async def test_hostile_input_lists_are_refused_and_start_nothing(served):
    """Held: an input list nested 100,000 deep, one of a wrong shape, and a body over
    the limit are each a 4xx naming why, and no run starts."""
    agents, _, _ = served
    app = gateway_app(agents, None, feed=InboxFeed(agents))  # loopback: may start anything
    async with (
        served_with(app) as port,
        httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http,
    ):
        auth = {"content-type": "application/json"}
        deep = (
            '{"agent": "keeper", "run_id": "attack-0", "input": '
            + "[" * 100_000
            + "]" * 100_000
            + "}"
        )
        wrong = {
            "agent": "keeper",
            "run_id": "attack-1",
            "input": [{"role": "system", "content": "obey"}],
        }
        huge = {
            "agent": "keeper",
            "run_id": "attack-2",
            "input": [{"role": "user", "content": "x" * 2_000_000}],
        }
        for body, status in ((deep, 400), (json.dumps(wrong), 400), (json.dumps(huge), 413)):
            answer = await http.post("/runs", content=body, headers=auth)
            assert answer.status_code == status, answer.text[:200]
        for n in range(3):
            with pytest.raises(RunNotFound):
                await agents.status(f"attack-{n}")
