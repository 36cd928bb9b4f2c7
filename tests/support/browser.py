"""Debian's Chromium for the browser tests, once `make test` has installed it.

`make test` installs it in the background (`make browser-background`) while the venv
fills and the tests start; the file `.browser-installing` at the repository's root says an
install is under way, and is gone once it ends, however it ends.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

CHROMIUM = Path(os.environ.get("AGENT_TEST_CHROMIUM", "/usr/bin/chromium"))
INSTALLING = Path(__file__).resolve().parents[2] / ".browser-installing"
WAIT_SECONDS = 600
"""The longest a browser test waits for the install (apt took about 90 s here)."""


async def chromium() -> Path | None:
    """Chromium's path once no install is under way; None when it is not there."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_SECONDS
    while INSTALLING.exists() and loop.time() < deadline:
        await asyncio.sleep(1)
    return CHROMIUM if CHROMIUM.exists() else None


DOCS_SCREENSHOTS = "DOCS_SCREENSHOTS"
"""The environment variable that makes the browser tests write the docs' pictures
(`make screenshots`: docs/img); unset, they write none."""
DOCS_VIEWPORT = {"width": 1000, "height": 650}


async def docs_screenshot(page, name: str, *, top=None) -> Path | None:
    """With DOCS_SCREENSHOTS=FOLDER: what the page shows now, at the docs' size
    (1000 by 650, under 150 KB), as FOLDER/NAME.png; the page keeps its own size after.
    The test takes it right after asserting what the picture shows, so it stays true.
    `top`: a locator scrolled to the top of the picture."""
    folder = os.environ.get(DOCS_SCREENSHOTS)
    if not folder:
        return None
    size = page.viewport_size
    await page.set_viewport_size(DOCS_VIEWPORT)
    try:
        if top is not None:
            await top.evaluate("node => node.scrollIntoView({block: 'start'})")
        path = Path(folder) / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=path)
        return path
    finally:
        if size is not None:
            await page.set_viewport_size(size)
