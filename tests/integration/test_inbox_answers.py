"""The approval inbox answers an external tool's call (a real Chromium driven by
Playwright, the gateway served by uvicorn, the real dev server, worker and scripted
model): the call shows its answer schema, a JSON box and an "Answer" button; JSON it
cannot read is refused on the page, an answer the schema refuses is refused by the
run, and the answer given reaches the model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import expect

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply, ScriptedModelServer
from tests.conftest import serving
from tests.integration.test_inbox import (  # noqa: F401 (the module's browser fixture)
    DESK,
    Scripts,
    browser,
    call_of,
    callers,
    gateway,
    signed_in,
)
from tests.support.answer_agents import ANSWER_AGENTS

GOOD = {"account": "ACC-1", "amount": 12.5, "lines": [{"sku": "A", "quantity": 2}]}


@pytest.fixture
async def served(env, tmp_path) -> AsyncIterator[tuple]:
    scripts = Scripts()
    with ScriptedModelServer(responder=scripts) as model:
        async with serving(env.client, model, extra_agents=ANSWER_AGENTS) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            async with gateway(agents, callers(tmp_path)) as url:
                yield agents, scripts, url, model


async def test_an_approver_answers_an_external_tools_call_from_the_inbox(served, browser):  # noqa: F811
    agents, scripts, url, model = served
    ask = Call("ask_refund", {"order_id": "o-7"}, "call_ask_1")
    scripts.by_input["refund o-7"] = [Reply(tool_calls=(ask,)), Reply(content="refunded")]
    run_id = (await agents.start("questioner", "refund o-7")).id
    page = await signed_in(browser, url, DESK)
    node = call_of(page, "call_ask_1")
    await expect(node).to_be_visible()
    await expect(node).to_contain_text("Waits for an answer matching")
    await expect(node).to_contain_text('"required"')
    await expect(node.get_by_role("button", name="Approve")).to_have_count(0)
    answer = node.get_by_role("textbox", name="Answer (JSON)")
    await answer.fill("{account: 1}")
    await node.get_by_role("button", name="Answer").click()
    await expect(node.get_by_role("status")).to_contain_text("The answer is not JSON")
    await answer.fill(json.dumps({**GOOD, "lines": [{"sku": "A", "quantity": "two"}]}))
    await node.get_by_role("button", name="Answer").click()
    await expect(node.get_by_role("status")).to_contain_text(
        "lines[0].quantity: 'two' is not of type 'integer'"
    )
    await answer.fill(json.dumps(GOOD))
    await node.get_by_role("button", name="Answer").click()
    decided = page.locator('[data-decided-call-id="call_ask_1"]')
    await expect(decided.get_by_role("status")).to_contain_text("Answered by desk")
    result = await agents.result(run_id)
    assert result.final_output == "refunded"
    sent = [
        m for r in model.requests for m in r["messages"] if m.get("tool_call_id") == "call_ask_1"
    ]
    assert json.loads(sent[-1]["content"]) == GOOD
