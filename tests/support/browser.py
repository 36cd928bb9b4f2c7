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
