"""`agentctl serve` serving TLS itself (a self-signed certificate made here with
`cryptography`), and signing in to the inbox with the identity header of a proxy the
operator trusts (never by default): a real Chromium, uvicorn with the settings `serve`
uses (client/gateway_serving.py), the real dev server, worker and scripted model. From
outside: the header from an untrusted address (also behind a forged X-Forwarded-For)
is ignored and logged, an identity that is no caller is refused, the header alone
authenticates no change, and bad TLS and proxy options stop `serve` with why."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import logging
import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from durable_agents.client import gateway_serving
from durable_agents.client.gateway import gateway_app
from durable_agents.client.inbox_feed import InboxFeed
from durable_agents.client.proxy_identity import ProxyIdentity
from playwright.async_api import expect

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply, ScriptedModelServer
from tests.conftest import serving
from tests.integration.test_inbox import (  # noqa: F401 (the module's browser fixture)
    DESK,
    WAIT_MS,
    Scripts,
    browser,
    call_of,
    callers,
)
from tests.support.cli_support import AGENTCTL, bound_to, error_lines
from tests.support.runs import free_port


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key (PEM files)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]
            ),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


@asynccontextmanager
async def served_with(app, **options) -> AsyncIterator[int]:
    """The gateway `app` under uvicorn, with the settings `agentctl serve` would use."""
    port = free_port()
    server = uvicorn.Server(gateway_serving.config(app, host="127.0.0.1", port=port, **options))
    server.config.timeout_graceful_shutdown = 1
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(10):
        while not server.started:
            await asyncio.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def served(env, tmp_path) -> AsyncIterator[tuple]:
    scripts = Scripts()
    with ScriptedModelServer(responder=scripts) as model:
        async with serving(env.client, model) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            yield agents, scripts, callers(tmp_path)


async def test_the_gateway_serves_tls_itself_and_the_inbox_signs_there(
    served,
    browser,  # noqa: F811
    tmp_path,
):
    agents, scripts, known = served
    mail = Call("send_email", {"to": "ops@example.com", "body": "over tls"}, call_id="t1")
    scripts.by_input["inbox: tls"] = [Reply(tool_calls=(mail,)), Reply("mailed")]
    cert, key = self_signed(tmp_path)
    tls = gateway_serving.tls_files(str(cert), str(key))
    app = gateway_app(agents, known, feed=InboxFeed(agents))
    async with served_with(app, tls=tls) as port:
        url = f"https://127.0.0.1:{port}"
        trusting = ssl.create_default_context(cafile=str(cert))
        async with httpx2.AsyncClient(verify=trusting, timeout=30) as http:
            assert (await http.get(f"{url}/healthz")).text == "ok"
            signed = await http.post(f"{url}/inbox/session", json={"token": DESK})
            assert "secure" in signed.headers["set-cookie"].lower()
        async with httpx2.AsyncClient(timeout=30) as http:  # not trusting it: refused
            with pytest.raises(httpx2.ConnectError):
                await http.get(f"{url}/healthz")
        with pytest.raises(httpx2.HTTPError):  # plain http on the TLS port: no answer
            async with httpx2.AsyncClient(timeout=10) as http:
                await http.get(f"http://127.0.0.1:{port}/healthz")

        context = await browser.new_context(ignore_https_errors=True)
        page = await context.new_page()
        page.set_default_timeout(WAIT_MS)
        await page.goto(f"{url}/inbox")
        assert await page.evaluate("() => window.isSecureContext && !!crypto.subtle")
        await page.get_by_label("Token").fill(DESK)
        await page.get_by_role("button", name="Sign in").click()
        run_id = (await agents.start("assistant", "inbox: tls")).id
        await call_of(page, "t1").get_by_role("button", name="Approve").click()
        await expect(page.locator('[data-decided-call-id="t1"]')).to_contain_text(
            "Approved by desk"
        )
        assert (await agents.result(run_id)).final_output == "mailed"
        [cookie] = await context.cookies()
        assert cookie["secure"] and cookie["httpOnly"]
        await context.close()


async def test_a_trusted_proxys_identity_signs_in_and_one_from_elsewhere_is_ignored(
    served,
    browser,  # noqa: F811
    caplog,
):
    agents, scripts, known = served
    mail = Call("send_email", {"to": "ops@example.com", "body": "via sso"}, call_id="p1")
    scripts.by_input["inbox: proxy"] = [Reply(tool_calls=(mail,)), Reply("mailed")]
    trusted = ProxyIdentity.parse("X-Forwarded-User", ["127.0.0.1/32"])
    elsewhere = ProxyIdentity.parse("X-Forwarded-User", ["10.0.0.0/8"])
    feed = InboxFeed(agents)
    async with (
        served_with(
            gateway_app(agents, known, feed=feed, proxy=trusted), behind_trusted_proxy=True
        ) as good,
        served_with(
            gateway_app(agents, known, feed=feed, proxy=elsewhere), behind_trusted_proxy=True
        ) as other,
        served_with(gateway_app(agents, known, feed=feed)) as plain,
    ):
        context = await browser.new_context(extra_http_headers={"X-Forwarded-User": "desk"})
        page = await context.new_page()
        page.set_default_timeout(WAIT_MS)
        await page.goto(f"http://127.0.0.1:{good}/inbox")
        await expect(page.get_by_text("Signed in as desk")).to_be_visible()  # no token asked
        run_id = (await agents.start("assistant", "inbox: proxy")).id
        await call_of(page, "p1").get_by_role("button", name="Approve").click()
        await expect(page.locator('[data-decided-call-id="p1"]')).to_contain_text(
            "Approved by desk"
        )
        assert (await agents.result(run_id)).final_output == "mailed"
        await context.close()

        async with httpx2.AsyncClient(timeout=30) as http:
            as_proxy = {"X-Forwarded-User": "desk"}
            # From an address the proxy is not trusted from, even naming one it is: ignored.
            with caplog.at_level(logging.WARNING, logger="durable_agents.gateway.audit"):
                forged = await http.post(
                    f"http://127.0.0.1:{other}/inbox/session",
                    json={"proxy": True},
                    headers=as_proxy | {"X-Forwarded-For": "10.0.0.5"},
                )
            assert forged.status_code == 401 and "no identity from a trusted proxy" in forged.text
            assert any("proxy_identity_ignored" in r.getMessage() for r in caplog.records)
            page_answer = await http.get(
                f"http://127.0.0.1:{other}/inbox/session", headers=as_proxy
            )
            assert page_answer.status_code == 401 and page_answer.json()["proxy"] is False
            # An identity that names no caller; a gateway that trusts no proxy.
            nobody = await http.post(
                f"http://127.0.0.1:{good}/inbox/session",
                json={"proxy": True},
                headers={"X-Forwarded-User": "mallory"},
            )
            assert nobody.status_code == 401 and "'mallory' is not a caller" in nobody.text
            bare = await http.post(
                f"http://127.0.0.1:{plain}/inbox/session", json={"proxy": True}, headers=as_proxy
            )
            assert bare.status_code == 400 and "trusts no proxy" in bare.text
            # The header alone authenticates no request but the sign-in.
            for path in ("/inbox/calls", f"/runs/{run_id}"):
                alone = await http.get(f"http://127.0.0.1:{good}{path}", headers=as_proxy)
                assert alone.status_code == 401, path


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (["--tls-cert", "/no/such/cert.pem", "--tls-key", "/no/such/key.pem"], "is not a file"),
        (["--tls-cert", "CERT"], "--tls-cert and --tls-key go together"),
        (["--tls-cert", "CERT", "--tls-key", "CERT"], "not a PEM certificate and its key"),
        (["--proxy-identity-header", "X-Forwarded-User"], "needs --trusted-proxy"),
        (["--proxy-identity-header", "X User", "--trusted-proxy", "10.0.0.1"], "not a header"),
        (["--proxy-identity-header", "Cookie", "--trusted-proxy", "10.0.0.1"], "something else"),
        (["--proxy-identity-header", "X-U", "--trusted-proxy", "proxy.lan"], "not an address"),
    ],
)
async def test_agentctl_serve_refuses_unusable_tls_and_proxy_options(
    worker, tmp_path, options, words
):
    cert, _ = self_signed(tmp_path)
    given = [str(cert) if o == "CERT" else o for o in options]
    ctl = bound_to(worker)
    port = str(free_port())
    refused = await ctl("serve", "--allow-unauthenticated", "--port", port, *given)
    assert refused.code == 1
    assert words in error_lines(refused.stderr)[0]


async def test_agentctl_serve_with_tls_options_serves_https_with_shared_sessions(worker, tmp_path):
    """The command itself: `agentctl serve --tls-cert --tls-key`, with a session key and
    revocation file from the environment, answers https and says so."""
    cert, key = self_signed(tmp_path)
    file = tmp_path / "callers.json"
    file.write_text(json.dumps([{"name": "desk", "token_env": "T_DESK", "scopes": ["read"]}]))
    env = os.environ | {
        "AGENT_GATEWAY_TOKENS": str(file),
        "T_DESK": DESK,
        "AGENT_INBOX_SESSION_KEY": "k" * 40,
        "AGENT_INBOX_REVOCATIONS": str(tmp_path / "revoked.jsonl"),
    }
    connection = ["--address", worker.address, "--namespace", worker.namespace]
    for _ in range(3):  # another process may bind the free port first (suites side by side)
        port = free_port()
        process = await asyncio.create_subprocess_exec(
            str(AGENTCTL),
            *connection,
            "serve",
            "--port",
            str(port),
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
            env=env,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stderr is not None
        line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
        answer = await _health(port, cert, process)
        if answer is not None:
            break
        said = (await process.stderr.read()).decode()
        assert "address already in use" in said, said  # any other end is the test's failure
    else:
        pytest.fail("three free ports were taken before agentctl serve bound them")
    try:
        assert f"https://127.0.0.1:{port}/inbox" in line
        assert "sessions signed with $AGENT_INBOX_SESSION_KEY" in line
        trusting = ssl.create_default_context(cafile=str(cert))
        async with httpx2.AsyncClient(verify=trusting, timeout=30) as http:
            assert answer == "ok"
            signed = await http.post(
                f"https://127.0.0.1:{port}/inbox/session", json={"token": DESK}
            )
            assert signed.status_code == 200 and "secure" in signed.headers["set-cookie"].lower()
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()


async def _health(port: int, cert: Path, process) -> str | None:
    """`/healthz`'s answer over https once the server listens; None if the process ended
    first (its port taken by another process between `free_port` and its bind)."""
    trusting = ssl.create_default_context(cafile=str(cert))
    async with httpx2.AsyncClient(verify=trusting, timeout=30) as http:
        async with asyncio.timeout(60):
            while process.returncode is None:
                try:
                    return (await http.get(f"https://127.0.0.1:{port}/healthz", timeout=2)).text
                except httpx2.TransportError:  # not listening yet, or another's server
                    await asyncio.sleep(0.1)
    return None
