"""Inbox sessions that survive (client/inbox_sessions.py): two gateways with the same
session key and revocation file, a real Chromium, the real dev server, worker and
scripted model. A person signs in on one gateway, decides on the other without signing
in again, stays signed in across a restart of the first, and signs out on one: every
gateway then refuses the cookie. A cookie signed with another key, or a session
cookie of a gateway with its own random key, is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import pytest
from durable_agents.client.inbox_feed import InboxFeed
from durable_agents.client.inbox_sessions import COOKIE, Sessions
from playwright.async_api import expect

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply, ScriptedModelServer
from tests.conftest import serving
from tests.integration.test_inbox import (  # noqa: F401 (the module's browser fixture)
    DESK,
    Scripts,
    as_session,
    browser,
    call_of,
    callers,
    gateway,
    signed_in,
)

KEY = b"shared-session-key-0123456789abcdef"


@pytest.fixture
async def served(env, tmp_path) -> AsyncIterator[tuple]:
    scripts = Scripts()
    with ScriptedModelServer(responder=scripts) as model:
        async with serving(env.client, model) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            yield agents, scripts, callers(tmp_path), tmp_path / "revoked.jsonl"


def shared(revocations: Path, key: bytes = KEY) -> Sessions:
    return Sessions(key=key, revocations=revocations)


async def test_a_session_works_across_two_gateways_and_a_restart_and_signs_out_everywhere(
    served,
    browser,  # noqa: F811
):
    agents, scripts, known, revoked = served
    mail = Call("send_email", {"to": "ops@example.com", "body": "shared"}, call_id="g1")
    scripts.by_input["inbox: two gateways"] = [Reply(tool_calls=(mail,)), Reply("mailed")]

    def one(**more):
        return gateway(agents, known, feed=InboxFeed(agents), **more)

    async with one(sessions=shared(revoked)) as first:
        page = await signed_in(browser, first, DESK)
        cookie = next(c["value"] for c in await page.context.cookies() if c["name"] == COOKIE)
    # The first gateway is gone; a second one, and later the first again, take the cookie.
    async with one(sessions=shared(revoked)) as second:
        await page.goto(f"{second}/inbox")  # cookies are per host, not per port
        await expect(page.get_by_text("Signed in as desk")).to_be_visible()
        run_id = (await agents.start("assistant", "inbox: two gateways")).id
        await call_of(page, "g1").get_by_role("button", name="Approve").click()
        await expect(page.locator('[data-decided-call-id="g1"]')).to_contain_text(
            "Approved by desk"
        )
        assert (await agents.result(run_id)).final_output == "mailed"
        async with (
            one(sessions=shared(revoked)) as restarted,
            one(sessions=shared(revoked, key=b"another-key-0123456789abcdef012345")) as other,
            one() as own,
            httpx2.AsyncClient(timeout=30) as http,
        ):
            assert (
                await http.get(f"{restarted}/inbox/calls", headers=as_session(cookie))
            ).is_success
            for refusing in (other, own):  # another key, a random one: not their session
                answer = await http.get(f"{refusing}/inbox/calls", headers=as_session(cookie))
                assert answer.status_code == 401
            await page.get_by_role("button", name="Sign out").click()
            await expect(page.get_by_label("Token")).to_be_visible()
            for gone in (second, restarted):
                answer = await http.get(f"{gone}/inbox/calls", headers=as_session(cookie))
                assert answer.status_code == 401, gone
            session = await http.get(f"{restarted}/inbox/session", headers=as_session(cookie))
            assert session.status_code == 401
    async with one(sessions=shared(revoked)) as later:  # and after every restart
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.get(f"{later}/inbox/calls", headers=as_session(cookie))
            assert answer.status_code == 401
    assert len(revoked.read_text().splitlines()) == 1
    await page.context.close()
