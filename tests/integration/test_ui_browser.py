"""The Temporal UI in a real browser: an operator filters runs by `AgentStatus`, finds the
run waiting for approval, opens it and reads its current details (the pending tool).

Headless Chromium from Debian's `chromium` package (`make test` installs it when it
runs as root), driven by Playwright for Python; Playwright never downloads a browser.
The test skips only when that Chromium is missing or cannot start here.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from durable_agents.client import AgentClient
from durable_agents.workflows import short_ids
from durable_agents.workflows.run_items import Decision
from durable_agents.workflows.state import RunStatus
from playwright.async_api import BrowserContext, Error, async_playwright, expect
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from durable_agents.testing import Call, Reply
from tests.conftest import serving
from tests.integration.test_agent_client import wait_for_status
from tests.support import browser as browser_support
from tests.support.dev_servers import ui_server as ui_server_on_free_ports
from tests.support.doc_blocks import page as doc_page
from tests.support.multi_agents import AGENT_TOOL_AGENTS
from tests.support.ops_support import eventually
from tests.support.runs import child_run

CHROMIUM = browser_support.CHROMIUM
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHARED_SCREENSHOT = Path("/tmp/ui-screenshot.png")
"""A copy of the last screenshot, where a person can look at it."""
UI_WAIT_MS = 30_000
EMAIL = Call("send_email", {"to": "ops@example.com", "body": "refund ok?"}, call_id="e1")


@pytest.fixture
async def browser(tmp_path) -> AsyncIterator[BrowserContext]:
    """Debian's Chromium with a fresh profile, or a skip that says why it cannot run."""
    if await browser_support.chromium() is None:
        pytest.skip(
            f"Chromium is not installed at {CHROMIUM}: `make test` installs Debian's "
            "`chromium` package when run as root (apt-get install chromium)"
        )
    async with async_playwright() as playwright:
        try:
            context = await playwright.chromium.launch_persistent_context(
                str(tmp_path / "chromium-profile"),
                executable_path=str(CHROMIUM),
                args=CHROMIUM_ARGS,
                headless=True,
                viewport={"width": 1400, "height": 1000},
            )
        except Error as err:
            pytest.skip(f"Chromium at {CHROMIUM} cannot start here: {err.message.splitlines()[0]}")
        context.set_default_timeout(UI_WAIT_MS)
        # `expect` has its own wait (5 s by default), too short for the UI's first loads on
        # a loaded 2-core machine running the whole suite (seen in CI, 2026-11-26).
        expect.set_options(timeout=UI_WAIT_MS)
        yield context
        await context.close()


@dataclass(frozen=True)
class UiServer:
    client: Client
    ui_url: str


@pytest.fixture
async def ui_server(tmp_path) -> AsyncIterator[UiServer]:
    """The dev server as `worker.py --dev` starts it: with the UI and the search attributes."""
    env, ui_port = await ui_server_on_free_ports(tmp_path / "dev.db", pydantic_data_converter)
    yield UiServer(env.client, f"http://127.0.0.1:{ui_port}")
    await env.shutdown()


async def test_operator_finds_the_waiting_run_in_the_ui_and_sees_the_pending_tool(
    browser, ui_server, model_server, tmp_path
):
    model_server.script(Reply(tool_calls=(EMAIL,)))
    async with serving(ui_server.client, model_server) as worker:
        client = AgentClient(worker.client, task_queue=worker.task_queue)
        waiting = (await client.start("assistant", "Please mail ops about the refund")).id
        await wait_for_status(client, waiting, RunStatus.AWAITING_APPROVAL)
        model_server.script(Reply(content="hello"))
        done = (await client.start("assistant", "just say hello")).id
        await client.result(done)
        await eventually(  # the UI lists what the visibility store has indexed
            lambda: client.list_runs(status="awaiting_approval"),
            lambda runs: [r.run_id for r in runs] == [waiting],
        )
        page = await browser.new_page()

        # Find: the workflow list, filtered with a visibility query typed into the UI.
        await page.goto(f"{ui_server.ui_url}/namespaces/default/workflows")
        await expect(page.get_by_role("link", name=done, exact=True)).to_be_visible()
        await page.get_by_test_id("toggle-manual-query").click()
        query_box = page.get_by_test_id("workflow-manual-search-input")
        await query_box.fill('AgentStatus="awaiting_approval" AND ExecutionStatus="Running"')
        await query_box.press("Enter")
        await page.wait_for_url("**/workflows?query=*")
        run_link = page.get_by_role("link", name=waiting, exact=True)
        await expect(run_link).to_be_visible()
        await expect(page.get_by_role("link", name=done, exact=True)).to_have_count(0)
        await page.screenshot(path=tmp_path / "ui-filtered.png")

        # The docs' link to the runs waiting for a decision (how-to/temporal-ui.md) lists it.
        await page.goto(pending_approvals_link(ui_server.ui_url))
        await expect(run_link).to_be_visible()
        await expect(page.get_by_role("link", name=done, exact=True)).to_have_count(0)
        await browser_support.docs_screenshot(page, "ui-pending-approvals")

        # Open it: the summary set at start, and the current details the workflow keeps.
        await run_link.click()
        await page.wait_for_url(f"**/workflows/{waiting}/**")
        await page.get_by_text("User Metadata", exact=True).click()
        summary = page.frame_locator("#user-metadata-summary").locator("body")
        await expect(summary).to_contain_text("assistant: Please mail ops about the refund")
        details = page.frame_locator("#user-metadata-current-details")
        await expect(details.get_by_text("send_email")).to_be_visible()
        body = details.locator("body")
        await expect(body).to_contain_text("awaiting_approval")
        await expect(body).to_contain_text("Pending approvals (1)")
        await expect(body).to_contain_text("ops@example.com")
        await expect(body).to_contain_text("call id e1")
        tabs = page.get_by_text("Call Stack", exact=True)  # the tab row, above the summary
        await browser_support.docs_screenshot(page, "ui-run-details", top=tabs)

        shot = tmp_path / "ui-current-details.png"
        await page.screenshot(path=shot, full_page=True)
        shutil.copyfile(shot, SHARED_SCREENSHOT)
        await client.cancel(waiting)


def pending_approvals_link(ui_url: str) -> str:
    """The link how-to/temporal-ui.md gives to the runs waiting for a decision, on `ui_url`."""
    [link] = re.findall(r"<(http://localhost:8233/[^>]*AgentPendingApprovals[^>]*)>", page_text())
    return link.replace("http://localhost:8233", ui_url)


def page_text() -> str:
    return doc_page("how-to/temporal-ui.md")


async def test_operator_finds_a_caller_by_its_childs_pending_approval_and_sees_the_call(
    browser, ui_server, model_server, tmp_path
):
    """An agent called as a tool waits for a decision: the operator's saved search for
    pending approvals finds the run at the top (the caller), whose details show the
    child's call and the run that holds it (tests/integration/test_tree_approvals.py)."""
    replies = {
        "lead-model": [Reply(tool_calls=(Call("ask_mailer", {"input": "tell ann"}, "c1"),))],
        "mail-model": [
            Reply(tool_calls=(Call("notify", {"to": "ann@example.com", "text": "5"}, "n1"),))
        ],
    }
    model_server.responder = lambda body: replies[body["model"]].pop(0)
    async with serving(ui_server.client, model_server, extra_agents=AGENT_TOOL_AGENTS) as worker:
        client = AgentClient(worker.client, task_queue=worker.task_queue)
        caller = (await client.start("lead", "tell ann")).id
        child = await child_run(worker.client, caller, "c1")
        await eventually(
            lambda: client.list_runs(status="awaiting_approval"),
            lambda runs: sorted(r.run_id for r in runs) == sorted([caller, child]),
        )
        page = await browser.new_page()
        await page.goto(f"{ui_server.ui_url}/namespaces/default/workflows")
        await page.get_by_test_id("toggle-manual-query").click()
        query_box = page.get_by_test_id("workflow-manual-search-input")
        await query_box.fill('AgentPendingApprovals > 0 AND AgentName = "lead"')
        await query_box.press("Enter")
        await page.wait_for_url("**/workflows?query=*")
        run_link = page.get_by_role("link", name=caller, exact=True)
        await expect(run_link).to_be_visible()
        await expect(page.get_by_role("link", name=child, exact=True)).to_have_count(0)

        await run_link.click()
        await page.wait_for_url(f"**/workflows/{caller}/**")
        await page.get_by_text("User Metadata", exact=True).click()
        body = page.frame_locator("#user-metadata-current-details").locator("body")
        await expect(body).to_contain_text("awaiting_approval")
        await expect(body).to_contain_text("Pending approvals in runs below (1)")
        await expect(body).to_contain_text("ann@example.com")
        short = short_ids.derive(child, "n1")  # the id the child's run gave the call
        await expect(body).to_contain_text(
            f"call id n1 (short id {short}) — in run {child} (lead → mailer)"
        )
        await page.screenshot(path=tmp_path / "ui-tree.png", full_page=True)
        await client.cancel(caller)


async def send_signal(page, name: str, payload: str) -> None:
    """The UI's own way: More Actions → Send a Signal, a custom signal name (the run's
    signals are dynamic, so the UI lists none), the JSON payload, Submit."""
    await page.locator("button:visible", has_text="More Actions").first.click()
    await page.locator("[data-testid=signal-button]:visible").first.click()
    modal = page.locator("[data-testid=signal-confirmation-modal]:visible").first
    await modal.get_by_test_id("signal-select-button").click()
    custom = page.get_by_text("Input Signal name").last
    await expect(custom).to_be_visible()
    await custom.click()
    name_box = page.locator("[data-testid=signal-name]:visible")
    await expect(name_box).to_be_visible()
    await name_box.fill(name)
    await modal.locator("[role=textbox]").first.click()
    await page.keyboard.type(payload)
    await name_box.press("Tab")  # the editor and the name are taken as they leave focus
    await page.locator("[data-testid=confirm-modal-button]:visible").first.click()
    await expect(modal).to_be_hidden()


async def test_operator_approves_from_the_temporal_ui_and_reads_a_refusal_there(
    browser, ui_server, model_server, tmp_path
):
    """docs/how-to/temporal-ui.md: a decision sent as a signal from the run's
    page; one the run refuses (a call id that is not pending) shows in the run's current
    details, the reason first and nothing of the worker's code; the right one completes
    the run."""
    model_server.script(Reply(tool_calls=(EMAIL,)), Reply(content="sent"))
    async with serving(ui_server.client, model_server) as worker:
        client = AgentClient(worker.client, task_queue=worker.task_queue)
        run_id = (await client.start("assistant", "Please mail ops about the refund")).id
        await wait_for_status(client, run_id, RunStatus.AWAITING_APPROVAL)
        page = await browser.new_page()
        await page.goto(f"{ui_server.ui_url}/namespaces/default/workflows/{run_id}")
        await expect(page.locator("button:visible", has_text="More Actions").first).to_be_visible()

        await send_signal(page, "approve", '{"call_id": "e9", "approver": "ann"}')
        await eventually(
            lambda: client.state(run_id), lambda state: len(state.refused_decisions) == 1
        )
        await page.reload()
        await page.get_by_text("User Metadata", exact=True).click()
        body = page.frame_locator("#user-metadata-current-details").locator("body")
        await expect(body).to_contain_text("Last refused decision")
        text = await body.inner_text()
        assert "approve of call e9 by ann: no tool call e9 in run" in " ".join(text.split())
        assert "Traceback" not in text and ".py" not in text
        await page.screenshot(path=tmp_path / "ui-refused.png", full_page=True)

        await send_signal(page, "approve", '{"call_id": "e1", "approver": "ann"}')
        result = await client.result(run_id)
        assert result.final_output == "sent"
        [decision] = [i for i in (await client.state(run_id)).items if isinstance(i, Decision)]
        assert (decision.approver, decision.via) == ("ann", "signal")
