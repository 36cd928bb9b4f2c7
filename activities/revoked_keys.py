"""Approver keys revoked under a running run (`workflows.revoked_approvals`).

A run verifies a signed decision with the approver keys frozen at its start; a worker
checks the keys that signed a call's approvals (an `always` rule's too) against the keys
it trusts now before the call acts, whatever kind of call it is:

- a `@tool`: `run_tool`, on the call's `ToolRequest.approval_keys`;
- an MCP server's tool: the activity gate (`durable_agents.gate_interceptor`), on the
  keys the run puts in the call's `_meta` under `contract.MCP_APPROVAL_KEYS` (covered by
  the gate's tag; taken out before the call reaches the server);
- an agent called as a tool, or a handoff: `describe_agent`, asked by the run before it
  starts the child or hands over (`DescribeAgentInput.approval_keys`).

A refusal is the non-retryable `ApprovalKeyRevoked`: the call did not act, and the run
asks for a decision again.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from durable_agents.workflows.contract import ERROR_APPROVAL_KEY_REVOKED, MCP_APPROVAL_KEYS
from temporalio.exceptions import ApplicationError

from durable_agents.signing import Trust


def revoked(trust: Trust, approval_keys: Sequence[str]) -> str | None:
    """The first key id of `approval_keys` (`KEY_ID PUBLIC_KEY`) that `trust` does not
    trust now (not among its approver keys, or past its `not_after`); None: all are."""
    now = datetime.now(UTC)
    trusted = {
        f"{k.key_id} {k.public_key}"
        for k in trust.approver_keys
        if k.not_after is None or now <= k.not_after
    }
    return next((k.split(" ")[0] for k in approval_keys if k not in trusted), None)


def refusal(key_id: str) -> ApplicationError:
    """What a worker raises for a call approved with `key_id`, which it no longer trusts."""
    return ApplicationError(
        f"the approval of this call (or the `always` rule that made it) was signed "
        f"with approver key {key_id[:200]!r}, "
        "which this worker no longer trusts (not in its AGENT_APPROVER_KEYS, or past "
        "its not_after): the call did not run",
        type=ERROR_APPROVAL_KEY_REVOKED,
        non_retryable=True,
    )


def check(trust: Trust | None, approval_keys: Sequence[str]) -> None:
    """Raise `refusal` unless `trust` trusts every key of `approval_keys` now (a worker
    without a trust to check them against refuses any)."""
    if not approval_keys:
        return
    key = approval_keys[0].split(" ")[0] if trust is None else revoked(trust, approval_keys)
    if key is not None:
        raise refusal(key)


def check_mcp_call(trust: Trust | None, args: Sequence[Any]) -> None:
    """An MCP `call-tool` activity's request (`temporalio-mcp`: a dict with `meta`): the
    approval keys the run put in its `_meta` are taken out (the server never sees them)
    and checked (`check`). Anything but a list of strings there is refused."""
    request = args[0] if args else None
    meta = request.get("meta") if isinstance(request, dict) else None
    if not isinstance(meta, dict) or MCP_APPROVAL_KEYS not in meta:
        return
    keys = meta.pop(MCP_APPROVAL_KEYS)
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise refusal(repr(keys)[:64])
    check(trust, keys)
