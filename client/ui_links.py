"""Links into the Temporal UI, for `agentctl pending --all` and the approval inbox.

The UI lists the runs waiting for a decision with the visibility query
`agent_client.PENDING_QUERY` (`AgentPendingApprovals > 0`, ...), which nothing tells
a newcomer; a link with that query opens the list in one click. The UI's address is
not known from Temporal's: it is `--ui`, else `AGENT_UI_URL` (what the webhook events
link to as well), else the dev server's UI (`http://localhost:8233`) when the address
is the dev server's default one (`localhost:7233`, `127.0.0.1:7233`); otherwise no
link (a guess would point at nothing on a real cluster).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping

from durable_agents.client.agent_client import PENDING_QUERY

from durable_agents.webhooks import UI_ENV

DEV_ADDRESSES = frozenset({"localhost:7233", "127.0.0.1:7233"})
"""Addresses of `temporal server start-dev` (and `worker.py --dev`) by default."""
DEV_UI = "http://localhost:8233"


def ui_address(
    given: str | None, *, address: str, env: Mapping[str, str] = os.environ
) -> str | None:
    """The UI's address: `given`, `AGENT_UI_URL`, or the dev server's UI when `address`
    is the dev server's default; None when it is not known."""
    chosen = (given or env.get(UI_ENV, "")).strip()
    if chosen:
        return chosen.rstrip("/")
    return DEV_UI if address in DEV_ADDRESSES else None


def waiting_runs(ui: str, namespace: str) -> str:
    """The UI's list of the runs of `namespace` waiting for a decision."""
    query = urllib.parse.quote(PENDING_QUERY, safe="")
    return f"{ui}/namespaces/{urllib.parse.quote(namespace, safe='')}/workflows?query={query}"


def run(ui: str, namespace: str, run_id: str) -> str:
    """The UI's page of one run (its latest execution)."""
    quoted = urllib.parse.quote(namespace, safe="")
    return f"{ui}/namespaces/{quoted}/workflows/{urllib.parse.quote(run_id, safe='')}"
