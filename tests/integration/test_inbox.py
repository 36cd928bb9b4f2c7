"""The approval inbox (`GET /inbox` on `agentctl serve`, client/inbox.py) in a real
Chromium driven by Playwright, against the gateway app served by uvicorn, the real dev
server, a worker and the scripted model: an approver signs in with a caller's token,
sees calls of several runs (one in a child run) appear live, approves one, rejects one
with a reason, signs one with a key loaded into the page; each run goes on as decided
and each tool runs once; hostile arguments are shown as text. And the refusals: no
CSRF token, no decide scope, a forged or expired session, another site's sign-in, and
framing.

One Chromium, worker and gateway per module (tests/support/agents CALLS is filtered by
run id, so tests of the module do not see each other's calls).
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import httpx2
import pytest
import uvicorn
from durable_agents.client import inbox_feed
from durable_agents.client.gateway import gateway_app
from durable_agents.client.gateway_auth import Callers, load_callers
from durable_agents.client.inbox import CSP, assets
from durable_agents.client.inbox_feed import InboxFeed
from durable_agents.client.inbox_sessions import COOKIE, Sessions
from durable_agents.workflows.run_items import Decision, ToolResult
from playwright.async_api import Browser, Page, async_playwright, expect

from durable_agents import AgentClient, signing
from durable_agents.testing import Call, Reply, ScriptedModelServer
from tests.conftest import RunningWorker, serving
from tests.support import agents as test_agents
from tests.support import browser as browser_support
from tests.support.approver_keys import ALICE
from tests.support.multi_agents import AGENT_TOOL_AGENTS, NOTICES
from tests.support.runs import child_run, free_port

CHROMIUM = browser_support.CHROMIUM
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
WAIT_MS = 30_000
DESK, READER = "desk-token-0123456789abcdef", "reader-token-0123456789abcdef"
HOSTILE = "<img src=x onerror=alert(1)></script>\u202eevil"
FIGURES = Path("/tmp/inbox-figures.json")
READ_INTERVAL = 0.5
"""The test feeds' seconds between reads: what the page shows is the same at the
default 2 s (`inbox_feed.INTERVAL`), but every row waited a read (16 s a test)."""
"""Where the end-to-end test writes its measurements (page weight, latency, cost)."""
SCREENSHOT = Path("/tmp/inbox-screenshot.png")
"""The inbox with four calls waiting, at phone width, where a person can look at it."""


def callers(tmp_path: Path) -> Callers:
    file = tmp_path / "callers.json"
    file.write_text(
        json.dumps(
            [
                {"name": "desk", "token_env": "T_DESK", "scopes": ["read", "decide"]},
                {"name": "reader", "token_env": "T_READ", "scopes": ["read"]},
            ]
        )
    )
    env = {"AGENT_GATEWAY_TOKENS": str(file), "T_DESK": DESK, "T_READ": READER}
    return load_callers(env)


class Scripts:
    """The model's replies by the run's first user message (runs go on concurrently);
    the child agents' by model name."""

    def __init__(self) -> None:
        self.by_input: dict[str, list[Reply]] = {}
        self.by_model: dict[str, list[Reply]] = {"lead-model": [], "mail-model": []}

    def __call__(self, body: dict) -> Reply:
        if body["model"] in self.by_model:
            return self.by_model[body["model"]].pop(0)
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return self.by_input[first].pop(0)


@dataclass
class Served:
    worker: RunningWorker
    agents: AgentClient
    scripts: Scripts
    url: str
    feed: InboxFeed
    callers: Callers


async def serve_app(app, port: int) -> tuple[uvicorn.Server, asyncio.Task]:
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    async with asyncio.timeout(10):
        while not server.started:
            await asyncio.sleep(0.02)
    return server, task


async def stop(server: uvicorn.Server, task: asyncio.Task) -> None:
    server.should_exit = True  # open feeds are cut after timeout_graceful_shutdown
    await task


@asynccontextmanager
async def gateway(served_agents: AgentClient, known: Callers, **inbox) -> AsyncIterator[str]:
    port = free_port()
    running = await serve_app(gateway_app(served_agents, known, **inbox), port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await stop(*running)


@pytest.fixture(scope="module")
async def served(env, tmp_path_factory) -> AsyncIterator[Served]:
    scripts = Scripts()
    known = callers(tmp_path_factory.mktemp("inbox"))
    with ScriptedModelServer(responder=scripts) as model:
        async with serving(env.client, model, extra_agents=AGENT_TOOL_AGENTS) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            feed = InboxFeed(agents, interval=READ_INTERVAL)
            async with gateway(agents, known, feed=feed) as url:
                yield Served(worker, agents, scripts, url, feed, known)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    if await browser_support.chromium() is None:
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (make browser installs it)")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        expect.set_options(timeout=WAIT_MS)
        yield launched
        await launched.close()


async def signed_in(browser: Browser, url: str, token: str) -> Page:
    page = await (await browser.new_context(viewport={"width": 420, "height": 900})).new_page()
    page.set_default_timeout(WAIT_MS)
    page.on("dialog", lambda dialog: pytest.fail(f"a dialog opened: {dialog.message}"))
    await page.goto(f"{url}/inbox")
    await page.get_by_label("Token").fill(token)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_text("Signed in as")).to_be_visible()
    await expect(page.get_by_role("status").first).to_contain_text("Live")
    return page


WATCH = """() => {
  window.seenAt = {};
  const note = () => {
    for (const n of document.querySelectorAll('[data-call-id]')) {
      const key = n.dataset.runId + ' ' + n.dataset.callId;
      if (!(key in window.seenAt)) window.seenAt[key] = Date.now();
    }
  };
  new MutationObserver(note).observe(document.body, {childList: true, subtree: true});
}"""


def call_of(page: Page, call_id: str):
    return page.locator(f'[data-call-id="{call_id}"]')


def tool_runs(run_id: str, tool: str) -> int:
    return sum(1 for t, _, key in test_agents.CALLS if t == tool and key.startswith(f"{run_id}"))


async def test_an_approver_decides_calls_of_several_runs_from_the_inbox(served, browser, tmp_path):
    s = served.scripts
    mail = Call("send_email", {"to": "ops@example.com", "body": "refund ok?"}, call_id="m1")
    hostile = Call("send_email", {"to": "x@example.com", "body": HOSTILE}, call_id="h1")
    pay = Call("pay", {"order": "A7", "amount": 250}, call_id="p1")
    s.by_input |= {
        "inbox: mail ops": [Reply(tool_calls=(mail,)), Reply("mailed")],
        "inbox: hostile": [Reply(tool_calls=(hostile,)), Reply("not sent")],
        "inbox: pay A7": [Reply(tool_calls=(pay,)), Reply("paid")],
    }
    s.by_model["lead-model"] += [
        Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),)),
        Reply("told"),
    ]
    s.by_model["mail-model"] += [
        Reply(tool_calls=(Call("notify", {"to": "ann@example.com", "text": "hi"}, "n1"),)),
        Reply("notified"),
    ]
    NOTICES.clear()
    page = await signed_in(browser, served.url, DESK)
    other = await signed_in(browser, served.url, DESK)  # a second approver, watching
    await expect(page.get_by_text("Nothing is waiting for a decision.")).to_be_visible()
    await page.evaluate(WATCH)
    sent_bodies: list[dict] = []
    page.on(
        "request",
        lambda r: r.url.endswith("/decisions") and sent_bodies.append(json.loads(r.post_data)),
    )

    # The runs start one after another, each once the last one's row is shown: the
    # delays below are samples at random points of the feed's read cycle.
    agents = served.agents
    runs: dict[str, str] = {}
    for name, agent, text, call_id in (
        ("mail", "assistant", "inbox: mail ops", "m1"),
        ("hostile", "assistant", "inbox: hostile", "h1"),
        ("pay", "treasurer", "inbox: pay A7", "p1"),
        ("lead", "lead", "inbox: tell ann", "n1"),
    ):
        runs[name] = (await agents.start(agent, text)).id
        await expect(call_of(page, call_id)).to_have_count(1)  # without a reload
        if call_id == "m1":  # docs/how-to/inbox.md: one call waiting, as an approver sees it
            await expect(page.locator("#count")).to_have_text("1")
            heading = page.locator("#waiting-title")
            await browser_support.docs_screenshot(page, "inbox-waiting-call", top=heading)
    child = await child_run(served.worker.client, runs["lead"], "c1")
    await expect(page.locator("#count")).to_have_text("4")
    await page.screenshot(path=SCREENSHOT, full_page=True)

    # Figures: how long after the run asked each row appeared (its `requested_at` is
    # the workflow's clock, the same machine's); what the open inbox costs per read
    # once nothing changes (no state read: the policies are kept).
    asked = {}
    for run_id in runs.values():
        for item in await agents.pending(run_id):
            asked[f"{item.run_id or run_id} {item.call_id}"] = item.requested_at.timestamp()
    seen = await page.evaluate("() => window.seenAt")
    delays = sorted(seen[key] / 1000 - at for key, at in asked.items())
    assert len(delays) == 4 and all(d > 0 for d in delays), (seen, asked)  # after, never before
    counts = served.feed.counts
    async with asyncio.timeout(30):
        start = counts["reads"]
        while counts["reads"] == start:  # from one read's end ...
            await asyncio.sleep(0.05)
        before = dict(counts)
        while counts["reads"] < before["reads"] + 2:  # ... to two reads later
            await asyncio.sleep(0.05)
    per_read = {k: (counts[k] - before[k]) / 2 for k in ("visibility", "queries")}
    assert served.feed.counts["state_reads"] == before["state_reads"]
    per_minute = {k: v * 60 / inbox_feed.INTERVAL for k, v in per_read.items()}  # (default)

    # The child's call: its path from the top, decided through the caller.
    child_call = call_of(page, "n1")
    await expect(child_call).to_contain_text("lead → mailer")
    await expect(child_call).to_contain_text(child)
    # Hostile arguments are text: no element made from them, nothing ran (no dialog).
    hostile_call = call_of(page, "h1")
    shown_args = await hostile_call.locator("pre.arguments").text_content()
    assert "<img src=x onerror=alert(1)></script>\\u{202e}evil" in shown_args
    assert await page.locator("img").count() == 0
    assert "\u202e" not in await page.locator("body").inner_text()

    # Approve one (unsigned: the caller's name is the approver) ...
    mail_call = call_of(page, "m1")
    await mail_call.get_by_role("button", name="Approve").click()
    decided = page.locator('[data-decided-call-id="m1"]')
    await expect(decided).to_contain_text("Approved by desk")
    await expect(call_of(other, "m1")).to_have_count(0)  # gone for the other approver too
    # ... reject one with a reason ...
    await hostile_call.get_by_role("textbox", name="Reason").fill("not to strangers")
    await hostile_call.get_by_role("button", name="Reject").click()
    await expect(page.locator('[data-decided-call-id="h1"]')).to_contain_text("Rejected by desk")
    # ... a call that needs a signature is not sent unsigned ...
    pay_call = call_of(page, "p1")
    await expect(pay_call).to_contain_text("required: load your key above")
    await pay_call.get_by_role("button", name="Approve").click()
    await expect(pay_call).to_contain_text("load your key file above first")
    # ... and is signed with alice's key, loaded into the page.
    key_file = tmp_path / "alice.key"
    signing.write_key(ALICE, key_file)
    await page.get_by_label("Approver key file").set_input_files(key_file)
    await expect(page.locator("#key-state")).to_contain_text("Key alice-test of alice loaded")
    await pay_call.get_by_role("button", name="Approve").click()
    signed = page.locator('[data-decided-call-id="p1"]')
    await expect(signed).to_contain_text("Approved by alice, signed with alice-test")
    shown_payload = await signed.locator("pre.signed").text_content()
    # The child's call, signed too now (a key is loaded): approved through the caller.
    await child_call.get_by_role("button", name="Approve").click()
    await expect(page.locator('[data-decided-call-id="n1"]')).to_contain_text("alice")
    await expect(page.get_by_text("Nothing is waiting for a decision.")).to_be_visible()

    # Each run goes on as decided, and each tool ran once.
    results = {name: await agents.result(run_id) for name, run_id in runs.items()}
    assert {n: r.final_output for n, r in results.items()} == {
        "mail": "mailed",
        "hostile": "not sent",
        "pay": "paid",
        "lead": "told",
    }
    assert tool_runs(runs["mail"], "send_email") == 1
    assert tool_runs(runs["hostile"], "send_email") == 0
    assert tool_runs(runs["pay"], "pay") == 1
    assert NOTICES == [{"to": "ann@example.com", "text": "hi"}]
    made = {}
    for run_id in (runs["mail"], runs["hostile"], runs["pay"], child):
        state = await agents.state(run_id)
        [made[run_id]] = [i for i in state.items if isinstance(i, Decision)]
    mailed, refused, paid = made[runs["mail"]], made[runs["hostile"]], made[runs["pay"]]
    assert (mailed.decision, mailed.approver, mailed.via, mailed.sender) == (
        "approve",
        "desk",
        "update",
        "gateway:desk",
    )
    assert (refused.decision, refused.reason) == ("reject", "not to strangers")
    hostile_state = await agents.state(runs["hostile"])
    [answer] = [i for i in hostile_state.items if isinstance(i, ToolResult)]
    assert "not to strangers" in answer.content
    assert (paid.decision, paid.approver, paid.signed_by) == ("approve", "alice", "alice-test")
    assert made[child].signed_by == "alice-test"
    # The page signed exactly what agentctl signs: the same fields, and (Ed25519 being
    # deterministic) the very signature alice's key makes over them in Python.
    payload = json.loads(shown_payload.split("): ", 1)[1])
    [sent] = [b for b in sent_bodies if b.get("call_id") == "p1"]
    assert {k: v for k, v in sent.items() if k != "signature"} == payload
    assert set(payload) == {
        "call_id",
        "approver",
        "always",
        "sender",
        "run_id",
        "arguments_sha256",
        "expires_at",
        "decision",
        "execution_id",
    }
    assert sent["signature"] == ALICE.sign(payload)["signature"]
    assert (paid.arguments_sha256, paid.expires_at) == (
        payload["arguments_sha256"],
        payload["expires_at"],
    )

    weight = sum(len(b) for b in assets().values())
    FIGURES.write_text(
        json.dumps(
            {
                "page_bytes": weight,
                "row_delay_s": delays,
                "row_delay_p50_s": statistics.median(delays),
                "read_interval_s": READ_INTERVAL,
                "per_read_4_calls_in_5_runs": per_read,
                "per_minute_4_calls_in_5_runs": per_minute,
            },
            indent=2,
        )
    )
    await page.context.close()
    await other.context.close()


def as_session(cookie: str, csrf: str | None = None) -> dict[str, str]:
    headers = {"cookie": f"{COOKIE}={cookie}"}
    return headers | ({"x-csrf-token": csrf} if csrf is not None else {})


async def test_the_inbox_refuses_requests_that_are_not_a_signed_in_approvers(served, browser):
    """No CSRF token, no decide scope, a forged, expired or signed-out session, a sign-in
    from another site's page: refused, and the call still waits; then the same request,
    right, decides it. The page allows no inline script and no framing."""
    s = served.scripts
    mail = Call("send_email", {"to": "ops@example.com", "body": "sure?"}, call_id="r1")
    s.by_input["inbox: refusals"] = [Reply(tool_calls=(mail,)), Reply("mailed")]
    clock = [0.0]
    sessions = Sessions(lifetime=timedelta(hours=1), clock=lambda: clock[0])
    feed = InboxFeed(served.agents)
    async with (
        gateway(served.agents, served.callers, sessions=sessions, feed=feed) as url,
        httpx2.AsyncClient(base_url=url, timeout=30) as http,
    ):
        page = await http.get("/inbox")
        assert page.headers["content-security-policy"] == CSP
        assert "frame-ancestors 'none'" in CSP and "script-src 'self';" in CSP
        assert page.headers["x-frame-options"] == "DENY"
        assert re.findall(r"<script[^>]*>", page.text) == ['<script src="/inbox/inbox.js" defer>']

        async def sign_in(token: str, origin: str = url) -> httpx2.Response:
            answer = await http.post(
                "/inbox/session", json={"token": token}, headers={"origin": origin}
            )
            http.cookies.clear()  # each request below says which session it carries
            return answer

        assert (await sign_in("not-a-token-0123456789")).status_code == 401
        elsewhere = await sign_in(DESK, origin="https://evil.example")
        assert elsewhere.status_code == 403 and "another origin" in elsewhere.text
        desk = await sign_in(DESK)
        cookie, csrf = desk.cookies[COOKIE], desk.json()["csrf"]
        set_cookie = desk.headers["set-cookie"].lower()
        assert "httponly" in set_cookie and "samesite=strict" in set_cookie
        assert "max-age=3600" in set_cookie
        reader = await sign_in(READER)
        reader_cookie, reader_csrf = reader.cookies[COOKIE], reader.json()["csrf"]

        run_id = (await served.agents.start("assistant", "inbox: refusals")).id
        listed = {}
        async with asyncio.timeout(20):
            while not listed.get("calls"):
                listed = (await http.get("/inbox/calls", headers=as_session(cookie))).json()
                await asyncio.sleep(0.1)
        [item] = listed["calls"]
        decision = {
            "call_id": "r1",
            "decision": "approve",
            "run_id": item["run_id"],
            "arguments_sha256": item["arguments_sha256"],
        }
        decide = f"/runs/{run_id}/decisions"

        no_csrf = await http.post(decide, json=decision, headers=as_session(cookie))
        assert no_csrf.status_code == 403 and "X-CSRF-Token" in no_csrf.text
        wrong_csrf = await http.post(decide, json=decision, headers=as_session(cookie, "x" * 43))
        assert wrong_csrf.status_code == 403
        read_only = await http.post(
            decide, json=decision, headers=as_session(reader_cookie, reader_csrf)
        )
        assert read_only.status_code == 403 and "reader may not decide" in read_only.text
        forged = await http.post(decide, json=decision, headers=as_session("forged" * 7, csrf))
        assert forged.status_code == 401 and "sign in again" in forged.text
        assert (await http.get("/inbox/calls", headers=as_session("forged" * 7))).status_code == 401

        clock[0] += 3600  # the desk's session has lasted its hour
        expired = await http.post(decide, json=decision, headers=as_session(cookie, csrf))
        assert expired.status_code == 401
        assert (await http.get("/inbox/feed", headers=as_session(cookie))).status_code == 401
        again = await sign_in(DESK)
        cookie, csrf = again.cookies[COOKIE], again.json()["csrf"]
        ended = await http.post("/inbox/session/end", headers=as_session(cookie, csrf))
        assert ended.status_code == 200
        after = await http.post(decide, json=decision, headers=as_session(cookie, csrf))
        assert after.status_code == 401
        assert [p.call_id for p in await served.agents.pending(run_id)] == ["r1"]  # still waits

        fresh = await sign_in(DESK)
        cookie, csrf = fresh.cookies[COOKIE], fresh.json()["csrf"]
        made = await http.post(decide, json=decision, headers=as_session(cookie, csrf))
        assert made.status_code == 200, made.text
        assert (made.json()["approver"], made.json()["sender"]) == ("desk", "gateway:desk")
        assert (await served.agents.result(run_id)).final_output == "mailed"
        assert tool_runs(run_id, "send_email") == 1

        framing = await (await browser.new_context()).new_page()
        async with framing.expect_console_message(lambda m: "frame-ancestors" in m.text):
            await framing.set_content(f'<iframe src="{url}/inbox"></iframe>')
        assert [f.url for f in framing.frames[1:]] != [f"{url}/inbox"]
        await framing.context.close()


async def test_the_page_says_when_the_feed_drops_and_catches_up_when_it_returns(served, browser):
    s = served.scripts
    mail = Call("send_email", {"to": "ops@example.com", "body": "later"}, call_id="d1")
    s.by_input["inbox: while offline"] = [Reply(tool_calls=(mail,)), Reply("mailed")]
    port = free_port()
    feed = InboxFeed(served.agents, interval=READ_INTERVAL)
    app = gateway_app(served.agents, served.callers, feed=feed)
    running = await serve_app(app, port)
    page = await signed_in(browser, f"http://127.0.0.1:{port}", DESK)
    connection = page.locator("#connection")
    await stop(*running)
    await expect(connection).to_contain_text("Connection lost")
    run_id = (await served.agents.start("assistant", "inbox: while offline")).id
    await expect(call_of(page, "d1")).to_have_count(0)
    running = await serve_app(app, port)  # the same sessions: still signed in
    await expect(connection).to_contain_text("Live")
    await expect(call_of(page, "d1")).to_have_count(1)  # caught up, no reload
    await served.agents.cancel(run_id)
    await expect(call_of(page, "d1")).to_have_count(0)
    await page.context.close()
    await stop(*running)


UNNAMED_CONTROLS = """() => [...document.querySelectorAll('button, input, textarea, select')]
  .filter(e => e.type !== 'hidden' && e.getClientRects().length > 0)
  .filter(e => !((e.getAttribute('aria-label') || '').trim()
                 || e.getAttribute('aria-labelledby')
                 || (e.labels && e.labels.length)
                 || (e.tagName === 'BUTTON' && e.textContent.trim())
                 || e.title))
  .map(e => e.outerHTML.slice(0, 120))"""


async def tab_to(page: Page, target, *, most: int = 80) -> None:
    """Press Tab until `target` has the focus (as a person without a mouse does)."""
    for _ in range(most):
        if await target.evaluate("element => element === document.activeElement"):
            return
        await page.keyboard.press("Tab")
    pytest.fail(f"Tab never reached {target}")


async def test_an_approver_signs_in_and_approves_with_the_keyboard_alone(served, browser):
    """Usable without a mouse, on a phone-width screen: Tab reaches the Token box, Sign
    in and the call's Approve button, Enter presses them; every control the page shows
    has a name a screen reader reads; the page is no wider than the screen."""
    text = "inbox: keyboard"
    mail = Call("send_email", {"to": "kb@example.com", "body": "by keyboard"}, call_id="k1")
    served.scripts.by_input[text] = [Reply(tool_calls=(mail,)), Reply("mailed")]
    run_id = (await served.agents.start("assistant", text)).id
    context = await browser.new_context(viewport={"width": 360, "height": 740})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    await page.goto(f"{served.url}/inbox")
    assert await page.evaluate(UNNAMED_CONTROLS) == []
    await tab_to(page, page.get_by_label("Token"))
    await page.keyboard.type(DESK)
    await tab_to(page, page.get_by_role("button", name="Sign in"))
    await page.keyboard.press("Enter")
    await expect(page.get_by_text("Signed in as")).to_be_visible()
    row = call_of(page, "k1")
    await expect(row).to_have_count(1)
    assert await page.evaluate(UNNAMED_CONTROLS) == []
    assert await page.evaluate("() => document.documentElement.scrollWidth <= innerWidth")
    await tab_to(page, row.get_by_role("button", name="Approve"), most=200)
    await page.keyboard.press("Enter")
    assert (await served.agents.result(run_id)).final_output == "mailed"
    [decided] = [i for i in (await served.agents.state(run_id)).items if isinstance(i, Decision)]
    assert (decided.decision, decided.approver) == ("approve", "desk")
    await context.close()
