"""What an approval from the inbox may carry, and the context a person decides with
(a real Chromium driven by Playwright, the gateway served by uvicorn, the real dev
server, worker and scripted model): arguments edited in the page, shown as a diff
before they are sent, and refused by the run outside the policy's limits; `always`;
choosing whom to approve as; the run's summary and conversation read on demand (no
history event added), and its link in the Temporal UI. Hostile input sent from outside
too: an approver name the caller may not use, edits of the wrong type, the context of
a run the caller may not see or that does not exist."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx2
import jsonschema
import pytest
from durable_agents.client.gateway_auth import Callers, load_callers
from durable_agents.client.inbox_feed import InboxFeed
from durable_agents.workflows.agent_spec import ApprovalCondition, ApprovalPolicy
from durable_agents.workflows.run_items import Decision
from playwright.async_api import expect

from durable_agents import Agent, AgentClient, signing, tool
from durable_agents.testing import Call, Reply, ScriptedModelServer
from tests.conftest import serving
from tests.integration.test_inbox import (  # noqa: F401 (the module's browser fixture)
    Scripts,
    as_session,
    browser,
    call_of,
    gateway,
    signed_in,
    tool_runs,
)
from tests.support.approver_keys import ALICE

TIPS: list[float] = []


@tool(needs_approval=ApprovalPolicy(limits=[ApprovalCondition(field="amount", op="<=", value=50)]))
def tip(amount: float) -> str:
    """Tip the courier; never more than 50."""
    TIPS.append(amount)
    return f"tipped {amount}"


cashier = Agent(name="cashier", instructions="Tip.", model="test-model", tools=[tip], max_turns=4)
"""An `always` may cover every later call within `tip`'s limits."""

DESK = "desk-token-0123456789abcdef"
MAILROOM = "mailroom-token-0123456789ab"
UI = "http://ui.example:8233"


def callers(tmp_path: Path) -> Callers:
    file = tmp_path / "callers.json"
    file.write_text(
        json.dumps(
            [
                {
                    "name": "desk",
                    "token_env": "T_DESK",
                    "scopes": ["read", "decide"],
                    "approve_as": ["ann"],
                },
                {
                    "name": "mailroom",
                    "token_env": "T_MAIL",
                    "scopes": ["read", "decide"],
                    "agents": ["mailer"],
                },
            ]
        )
    )
    return load_callers({"AGENT_GATEWAY_TOKENS": str(file), "T_DESK": DESK, "T_MAIL": MAILROOM})


@pytest.fixture
async def served(env, tmp_path) -> AsyncIterator[tuple]:
    scripts = Scripts()
    with ScriptedModelServer(responder=scripts) as model:
        async with serving(env.client, model, extra_agents=[cashier]) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            feed = InboxFeed(agents, ui=UI)
            async with gateway(agents, callers(tmp_path), feed=feed) as url:
                yield agents, scripts, url


async def history_length(agents: AgentClient, run_id: str) -> int:
    handle = agents.client.get_workflow_handle(run_id)
    return len([e async for e in handle.fetch_history_events()])


async def test_an_approver_edits_arguments_seeing_the_diff_and_approves_as_another_name(
    served,
    browser,  # noqa: F811
):
    agents, scripts, url = served
    refund = Call("refund", {"order": "A1", "amount": 150}, call_id="e1")
    scripts.by_input["inbox: refund A1"] = [Reply(tool_calls=(refund,)), Reply("refunded")]
    run_id = (await agents.start("assistant", "inbox: refund A1")).id
    page = await signed_in(browser, url, DESK)
    node = call_of(page, "e1")
    await expect(node).to_be_visible()
    await expect(node).to_contain_text("allowed: an approval may cover later calls")
    # Whom to approve as: desk may also approve as ann; the policy wants ann or boss.
    chooser = node.get_by_role("combobox", name="Approve as")
    assert await chooser.locator("option").all_text_contents() == ["ann", "desk"]
    await expect(chooser).to_have_value("ann")

    # The run's context, on demand: summary, conversation, the link to the UI.
    before = await history_length(agents, run_id)
    await node.get_by_role("button", name="Show the conversation").click()
    region = node.get_by_role("region", name="The run's conversation")
    await expect(region).to_contain_text("Summary: assistant: inbox: refund A1")
    await expect(region).to_contain_text("user: inbox: refund A1")
    await expect(region).to_contain_text('call: refund({"order": "A1", "amount": 150}) [e1]')
    link = region.get_by_role("link", name="Open this run in the Temporal UI")
    namespace = agents.client.namespace
    assert await link.get_attribute("href") == f"{UI}/namespaces/{namespace}/workflows/{run_id}"
    assert await link.get_attribute("rel") == "noopener noreferrer"
    assert await history_length(agents, run_id) == before  # read: nothing written
    facts = node.get_by_role("link", name="Open this run", exact=True)
    assert await facts.get_attribute("href") == f"{UI}/namespaces/{namespace}/workflows/{run_id}"

    # Edits the page refuses before sending anything.
    approve = node.get_by_role("button", name="Approve", exact=True)
    await node.get_by_role("button", name="Edit arguments").click()
    edit = node.get_by_role("textbox", name="Edited arguments (JSON)")
    assert json.loads(await edit.input_value()) == {"order": "A1", "amount": 150}
    status = node.locator(".outcome")
    await edit.fill("{amount: 1}")
    await approve.click()
    await expect(status).to_contain_text("The edited arguments are not JSON")
    await edit.fill("[1, 2]")
    await approve.click()
    await expect(status).to_contain_text("must be a JSON object")
    await edit.fill(json.dumps({"order": "A1", "amount": 120}))
    await node.get_by_role("button", name="Reject").click()
    await expect(status).to_contain_text("Edited arguments go with Approve only")
    await node.get_by_label("Always").check()
    await approve.click()
    await expect(status).to_contain_text("Always cannot go with edited arguments")
    await node.get_by_label("Always").uncheck()
    # A type the tool refuses: the page shows the diff, the run refuses it.
    await edit.fill(json.dumps({"order": "A1", "amount": "lots"}))
    await approve.click()
    diff = node.get_by_label("Changes to the arguments")
    await expect(diff).to_have_text('  "order": "A1"\n- "amount": 150\n+ "amount": "lots"\n')
    await node.get_by_role("button", name="Send the edited approval").click()
    await expect(status).to_contain_text("Refused: ")
    await expect(status).to_contain_text("edited arguments are not valid for refund")
    assert [p.call_id for p in await agents.pending(run_id)] == ["e1"]
    # Then the right edit: the diff, then sent, then recorded as ann's.
    await edit.fill(json.dumps({"order": "A1", "amount": 120}))
    await approve.click()
    await expect(diff).to_have_text('  "order": "A1"\n- "amount": 150\n+ "amount": 120\n')
    await node.get_by_role("button", name="Send the edited approval").click()
    decided = page.locator('[data-decided-call-id="e1"]')
    await expect(decided).to_contain_text("Approved with edited arguments by ann")
    assert (await agents.result(run_id)).final_output == "refunded"
    state = await agents.state(run_id)
    [made] = [i for i in state.items if isinstance(i, Decision)]
    assert (made.approver, made.sender, made.arguments) == (
        "ann",
        "gateway:desk",
        {"order": "A1", "amount": 120},
    )
    assert tool_runs(run_id, "refund") == 1
    await page.context.close()


async def test_always_from_the_inbox_covers_the_later_calls_the_approver_chose(
    served,
    browser,  # noqa: F811
):
    """`always` for the same arguments covers the same call again, not another body;
    `always` for the same `to` then covers a later call to it with another body."""
    agents, scripts, url = served

    def mail(call_id: str, body: str) -> Call:
        return Call("send_email", {"to": "ops@example.com", "body": body}, call_id=call_id)

    scripts.by_input["inbox: always"] = [
        Reply(tool_calls=(mail("a1", "again"),)),
        # the same arguments: the rule decides; another body: asks again
        Reply(tool_calls=(mail("a2", "again"), mail("a3", "other"))),
        Reply(tool_calls=(mail("a4", "third"),)),  # the same `to`: the second rule decides
        Reply("sent four"),
    ]
    run_id = (await agents.start("assistant", "inbox: always")).id
    page = await signed_in(browser, url, DESK)
    first = call_of(page, "a1")
    await first.get_by_label("Always").check()
    scope = first.get_by_role("combobox", name="Which later calls")
    assert await scope.locator("option").all_text_contents() == [
        "with these same arguments",
        'with the same to ("ops@example.com")',
        'with the same body ("again")',
    ]
    await first.get_by_role("combobox", name="Approve as").select_option("desk")
    await first.get_by_role("button", name="Approve", exact=True).click()
    await expect(page.locator('[data-decided-call-id="a1"]')).to_contain_text(
        "Approved by desk (always: later calls with the same arguments too)"
    )
    third = call_of(page, "a3")
    await third.get_by_label("Always").check()
    await third.get_by_role("combobox", name="Which later calls").select_option(
        label='with the same to ("ops@example.com")'
    )
    await third.get_by_role("combobox", name="Approve as").select_option("desk")
    await third.get_by_role("button", name="Approve", exact=True).click()
    await expect(page.locator('[data-decided-call-id="a3"]')).to_contain_text(
        'always: later calls with to == "ops@example.com" too'
    )
    assert (await agents.result(run_id)).final_output == "sent four"
    state = await agents.state(run_id)
    made = [(d.call_id, d.via, d.always) for d in state.items if isinstance(d, Decision)]
    assert made == [
        ("a1", "update", True),
        ("a2", "rule", False),
        ("a3", "update", True),
        ("a4", "rule", False),
    ]
    [scoped] = [d for d in state.items if isinstance(d, Decision) and d.call_id == "a3"]
    assert [c.model_dump() for c in scoped.always_when or []] == [
        {"field": "to", "op": "==", "value": "ops@example.com"}
    ]
    assert tool_runs(run_id, "send_email") == 4
    await page.context.close()


async def test_always_within_the_policys_limits_covers_every_later_call_within_them(
    served,
    browser,  # noqa: F811
):
    agents, scripts, url = served
    TIPS.clear()
    scripts.by_input["inbox: tips"] = [
        Reply(tool_calls=(Call("tip", {"amount": 10}, call_id="t1"),)),
        Reply(tool_calls=(Call("tip", {"amount": 30}, call_id="t2"),)),  # the rule: within
        Reply("tipped"),
    ]
    run_id = (await agents.start("cashier", "inbox: tips")).id
    page = await signed_in(browser, url, DESK)
    node = call_of(page, "t1")
    await node.get_by_label("Always").check()
    await node.get_by_role("combobox", name="Which later calls").select_option(
        label="any, within the policy's limits (amount <= 50)"
    )
    await node.get_by_role("button", name="Approve", exact=True).click()
    await expect(page.locator('[data-decided-call-id="t1"]')).to_contain_text(
        "always: later calls with amount <= 50 too"
    )
    assert (await agents.result(run_id)).final_output == "tipped"
    state = await agents.state(run_id)
    made = [(d.call_id, d.via) for d in state.items if isinstance(d, Decision)]
    assert made == [("t1", "update"), ("t2", "rule")]
    assert TIPS == [10, 30]
    await page.context.close()


async def test_a_signed_edit_outside_the_policys_limits_is_refused_then_one_within_runs(
    served,
    browser,  # noqa: F811
    tmp_path,
):
    agents, scripts, url = served
    pay = Call("pay", {"order": "B2", "amount": 300}, call_id="s1")
    scripts.by_input["inbox: pay B2"] = [Reply(tool_calls=(pay,)), Reply("paid")]
    run_id = (await agents.start("treasurer", "inbox: pay B2")).id
    page = await signed_in(browser, url, DESK)
    node = call_of(page, "s1")
    await expect(node).to_contain_text("not allowed by the policy")
    await expect(node.get_by_label("Always")).to_have_count(0)
    key_file = tmp_path / "alice.key"
    signing.write_key(ALICE, key_file)
    await page.get_by_label("Approver key file").set_input_files(key_file)
    await expect(page.locator("#key-state")).to_contain_text("loaded")
    await node.get_by_role("button", name="Edit arguments").click()
    edit = node.get_by_role("textbox", name="Edited arguments (JSON)")
    await edit.fill(json.dumps({"order": "B2", "amount": 5000}))
    await node.get_by_role("button", name="Approve", exact=True).click()
    await node.get_by_role("button", name="Send the edited approval").click()
    await expect(node.locator(".outcome")).to_contain_text("edited arguments are not valid for pay")
    await edit.fill(json.dumps({"order": "B2", "amount": 250}))
    await node.get_by_role("button", name="Approve", exact=True).click()
    await node.get_by_role("button", name="Send the edited approval").click()
    decided = page.locator('[data-decided-call-id="s1"]')
    await expect(decided).to_contain_text("Approved with edited arguments by alice, signed")
    signed = json.loads((await decided.locator("pre.signed").text_content()).split("): ", 1)[1])
    assert signed["arguments"] == {"order": "B2", "amount": 250}
    assert (await agents.result(run_id)).final_output == "paid"
    state = await agents.state(run_id)
    [made] = [i for i in state.items if isinstance(i, Decision)]
    assert (made.signed_by, made.arguments) == ("alice-test", {"order": "B2", "amount": 250})
    await page.context.close()


async def test_choices_and_context_sent_from_outside_are_checked(served):
    """An approver name the caller may not use, an edit the tool refuses, the context of
    a run the caller may not see, of an unknown run, or without a session."""
    agents, scripts, url = served
    refund = Call("refund", {"order": "C3", "amount": 500}, call_id="x1")
    scripts.by_input["inbox: hostile choices"] = [Reply(tool_calls=(refund,)), Reply("done")]
    run_id = (await agents.start("assistant", "inbox: hostile choices")).id
    async with httpx2.AsyncClient(base_url=url, timeout=30) as http:
        signed = await http.post("/inbox/session", json={"token": DESK})
        cookie, csrf = signed.cookies["inbox_session"], signed.json()["csrf"]
        http.cookies.clear()
        assert signed.json()["approve_as"] == ["ann", "desk"]
        mail = await http.post("/inbox/session", json={"token": MAILROOM})
        mail_cookie = mail.cookies["inbox_session"]
        http.cookies.clear()
        async with asyncio.timeout(30):
            while not (waiting := await agents.pending(run_id)):
                await asyncio.sleep(0.1)
        [item] = waiting
        base = {
            "call_id": "x1",
            "decision": "approve",
            "run_id": run_id,
            "arguments_sha256": item.arguments_sha256,
        }
        decide = f"/runs/{run_id}/decisions"
        headers = as_session(cookie, csrf)
        as_boss = await http.post(decide, json=base | {"approver": "boss"}, headers=headers)
        assert as_boss.status_code == 403 and "may not decide as 'boss'" in as_boss.text
        wrong = {"approver": "ann", "arguments": {"order": "C3", "amount": {"$gt": 1}}}
        refused = await http.post(decide, json=base | wrong, headers=headers)
        assert refused.status_code == 409
        assert "edited arguments are not valid for refund" in refused.text
        not_object = await http.post(decide, json=base | {"arguments": [1]}, headers=headers)
        assert not_object.status_code == 400
        assert [p.call_id for p in await agents.pending(run_id)] == ["x1"]  # still waits

        context = f"/inbox/context/{run_id}"
        assert (await http.get(context)).status_code == 401
        other = await http.get(context, headers=as_session(mail_cookie))
        assert other.status_code == 403 and "may not read this run" in other.text
        unknown = await http.get("/inbox/context/no-such-run", headers=as_session(cookie))
        assert unknown.status_code == 404
        odd = await http.get("/inbox/context/%E2%80%AEx%00y", headers=as_session(cookie))
        assert odd.status_code in (400, 404)
        before = await history_length(agents, run_id)
        found = (await http.get(context, headers=as_session(cookie))).json()
        # What the routes answer is what the gateway's OpenAPI document says.
        document = (await http.get("/openapi.json")).json()
        listed = (await http.get("/inbox/calls", headers=as_session(cookie))).json()
        for name, value in (
            ("RunContext", found),
            ("InboxSession", signed.json()),
            ("InboxCalls", listed),
        ):
            schema = {"$ref": f"#/components/schemas/{name}", "components": document["components"]}
            jsonschema.validate(value, schema)
        assert found["summary"] == "assistant: inbox: hostile choices"
        assert [e["kind"] for e in found["conversation"]] == ["user", "call"]
        assert found["earlier"] == 0 and found["ui_url"].endswith(f"/workflows/{run_id}")
        assert await history_length(agents, run_id) == before
    await agents.cancel(run_id)
