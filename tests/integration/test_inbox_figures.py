"""The inbox's figures, measured with a real Chromium against the gateway, the real dev
server, worker and scripted model: the page's weight, how long after a run asks for a
decision its row appears (30 approvals, each run started once the last row showed, so
the delays sample the feed's whole read cycle), and what an open inbox costs per
minute. And the claim behind "free for the runs": an open inbox, read after read,
adds no event to any run's history. The figures go to `FIGURES` (and the test's
output); only order and counts are asserted, never a wall-clock margin."""

from __future__ import annotations

import asyncio
import json
import statistics
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from durable_agents.client.inbox import assets
from durable_agents.client.inbox_feed import InboxFeed
from playwright.async_api import expect

from durable_agents import AgentClient
from durable_agents.testing import Call, Reply, ScriptedModelServer
from tests.conftest import serving
from tests.integration.test_inbox import (  # noqa: F401 (the module's browser fixture)
    DESK,
    WATCH,
    Scripts,
    browser,
    call_of,
    callers,
    gateway,
    signed_in,
)

FIGURES = Path("/tmp/inbox-figures-wave.json")
APPROVALS = 30
PAGE_BUDGET = 64 * 1024
"""The page's HTML, script and style together stay under this (no framework, no build)."""


@pytest.fixture
async def served(env, tmp_path) -> AsyncIterator[tuple]:
    scripts = Scripts()
    with ScriptedModelServer(responder=scripts) as model:
        async with serving(env.client, model) as worker:
            agents = AgentClient(worker.client, task_queue=worker.task_queue)
            feed = InboxFeed(agents)
            async with gateway(agents, callers(tmp_path), feed=feed) as url:
                yield agents, scripts, url, feed


async def history_lengths(agents: AgentClient, run_ids: list[str]) -> dict[str, int]:
    async def one(run_id: str) -> int:
        handle = agents.client.get_workflow_handle(run_id)
        return len([e async for e in handle.fetch_history_events()])

    return dict(zip(run_ids, await asyncio.gather(*map(one, run_ids)), strict=True))


async def reads(feed: InboxFeed, count: int) -> dict[str, float]:
    """The feed's calls per read, over `count` reads from one read's end."""
    counts = feed.counts
    async with asyncio.timeout(60):
        start = counts["reads"]
        while counts["reads"] == start:
            await asyncio.sleep(0.05)
        before = dict(counts)
        while counts["reads"] < before["reads"] + count:
            await asyncio.sleep(0.05)
    return {
        k: (counts[k] - before.get(k, 0)) / count for k in ("visibility", "queries", "state_reads")
    }


async def test_an_open_inbox_adds_no_history_event(served, browser):  # noqa: F811
    """The claim, on three waiting runs read every half second (`make test`); the
    figures take thirty, at the feed's own interval."""
    served[3].interval = 0.5
    await measured(served, browser, approvals=3)


@pytest.mark.soak
async def test_inbox_figures(served, browser):  # noqa: F811
    """The figures over `APPROVALS` runs (`make soak`: about 80 s), written to `FIGURES`."""
    figures = await measured(served, browser, approvals=APPROVALS)
    FIGURES.write_text(json.dumps(figures, indent=2))
    print(json.dumps(figures, indent=2))


async def measured(served, browser, *, approvals: int) -> dict:  # noqa: F811
    """Start `approvals` runs one after another, each once the last one's row showed;
    then check that one open inbox, and a second, add nothing to any run's history.
    What was measured, as the figures report it."""
    agents, scripts, url, feed = served
    page = await signed_in(browser, url, DESK)
    await page.evaluate(WATCH)
    runs: list[str] = []
    for n in range(approvals):
        text = f"inbox figures: {n}"
        mail = Call("send_email", {"to": f"u{n}@example.com", "body": "hi"}, call_id=f"f{n}")
        scripts.by_input[text] = [Reply(tool_calls=(mail,)), Reply("mailed")]
        runs.append((await agents.start("assistant", text)).id)
        await expect(call_of(page, f"f{n}")).to_have_count(1)  # without a reload
    await expect(page.locator("#count")).to_have_text(str(approvals))

    asked = {}
    for run_id in runs:
        [item] = await agents.pending(run_id)
        asked[f"{run_id} {item.call_id}"] = item.requested_at.timestamp()
    seen = await page.evaluate("() => window.seenAt")
    delays = sorted(seen[key] / 1000 - at for key, at in asked.items())
    assert len(delays) == approvals and all(d > 0 for d in delays)  # after, never before

    # One open inbox, then a second: the runs' histories do not grow, read after read.
    before = await history_lengths(agents, runs)
    one_inbox = await reads(feed, 3)
    other = await signed_in(browser, url, DESK)
    await expect(other.locator("#count")).to_have_text(str(approvals))
    two_inboxes = await reads(feed, 3)
    assert await history_lengths(agents, runs) == before
    assert one_inbox["visibility"] == two_inboxes["visibility"] == 1  # shared: one reader
    assert one_inbox["queries"] == two_inboxes["queries"] == approvals
    assert one_inbox["state_reads"] == 0  # each run's policy was read once, and kept

    weight = {name: len(data) for name, data in assets().items()}
    assert sum(weight.values()) < PAGE_BUDGET
    per_minute = 60 / feed.interval
    figures = {
        "page_bytes": weight | {"total": sum(weight.values())},
        "approvals_measured": approvals,
        "row_delay_p50_s": round(statistics.median(delays), 3),
        "row_delay_p99_s": round(statistics.quantiles(delays, n=100, method="inclusive")[98], 3),
        "row_delay_max_s": round(delays[-1], 3),
        "read_interval_s": feed.interval,
        "per_minute_one_or_many_inboxes": {
            "visibility_calls": one_inbox["visibility"] * per_minute,
            "queries": one_inbox["queries"] * per_minute,
            "waiting_runs": approvals,
        },
        "history_events_added": 0,
    }
    for run_id in runs:
        await agents.cancel(run_id)
    await page.context.close()
    await other.context.close()
    return figures
