"""The Node.js signing recipe (`examples/sign_decision.mjs`) against the Python signer and
the workflow's verifier, with a fixed test vector (Ed25519 signatures are deterministic)."""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from durable_agents.workflows import signed_start
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import AgentInput, DecideInput
from durable_agents.workflows.signed_decisions import verify

from durable_agents.signing import SigningKey, write_key

RECIPE = Path(__file__).resolve().parents[2] / "examples" / "sign_decision.mjs"
KEY = SigningKey("alice-2026", "alice", Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
PUBLIC = "A6EHv_POEL4dcN0Y50vAmWfk1jCbpQ1fHdyGZBJVMbg"
PAYLOAD = {
    "call_id": "call_refund",
    "decision": "approve",
    "approver": "alice",
    "run_id": "support-42",
    "arguments_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "expires_at": "2026-11-25T12:15:00Z",
    "reason": "refund ü verified",
    "always": False,
    "arguments": {"order": "A12", "amount": 150.0, "note": "\u2028"},
}
SIG = "_gn5BOin4T9i1tVFjW9dwQP6wNcef3UQvm2s_8JtFI2VJBqR1cXFUgjrPQAgCziD-utqZittr3Ly1nxR-WtCAw"
"""The test vector: PAYLOAD signed with the key of seed 00 01 02 ... 1f (also in the docs)."""


async def node_signs(tmp_path: Path, payload: dict, *start: str) -> dict:
    """The recipe's output for `payload`; with `start` (workflow id, expiry), a signed start."""
    node = shutil.which("node")
    assert node is not None, "the signing recipe is checked with node (Debian's nodejs)"
    key_file, payload_file = tmp_path / "alice.key", tmp_path / "payload.json"
    if not key_file.exists():
        write_key(KEY, key_file)
    payload_file.write_text(json.dumps(payload), encoding="utf-8")
    mode = ["--start"] if start else []
    process = await asyncio.create_subprocess_exec(
        node, str(RECIPE), *mode, str(key_file), str(payload_file), *start,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return json.loads(out)


async def test_node_recipe_signs_exactly_as_python_and_the_workflow_verifies_it(tmp_path):
    signed = await node_signs(tmp_path, PAYLOAD)
    assert signed == KEY.sign(PAYLOAD)
    assert signed["signature"] == {"key_id": "alice-2026", "sig": SIG}
    assert KEY.public().public_key == PUBLIC
    request = DecideInput.model_validate(signed)
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    assert verify(request, [KEY.public()], now=now).owner == "alice"


async def test_a_payload_changed_after_node_signed_it_does_not_verify(tmp_path):
    signed = await node_signs(tmp_path, PAYLOAD)
    signed["arguments"]["amount"] = 150000
    request = DecideInput.model_validate(signed)
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    with pytest.raises(DecisionRefused, match="does not verify"):
        verify(request, [KEY.public()], now=now)


async def test_node_recipe_signs_a_start_the_workflow_accepts(tmp_path):
    start = AgentInput(agent="custodian", input="wire ü 250", context={"n": 1.0}).model_dump(
        mode="json"
    )
    signed = await node_signs(tmp_path, start, "wire-42", "2026-11-25T12:15:00Z")
    assert signed == KEY.sign_start(start, workflow_id="wire-42", expires_at="2026-11-25T12:15:00Z")
    claim = signed_start.claim_of(AgentInput.model_validate(signed).model_dump(mode="json"))
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    starter = signed_start.verify(claim, [KEY.public()], workflow_id="wire-42", now=now)
    assert starter.owner == "alice"
    signed["input"] = "wire 250000"
    with pytest.raises(ValueError, match="does not verify"):
        signed_start.verify(
            signed_start.claim_of(signed), [KEY.public()], workflow_id="wire-42", now=now
        )
