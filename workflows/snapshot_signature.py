"""Snapshots signed with Ed25519, verified where the keys are: on the worker. Pure.

`agentctl export --sign-key FILE` adds `integrity.signature = {"key_id", "sig"}`
next to the SHA-256 digest: base64url (no padding) Ed25519 over the RFC 8785
canonical JSON of the snapshot without `integrity`, the bytes the digest covers.
A workflow started with such a document as `resume_from` checks it against the
snapshot keys of the worker's configuration (public keys, `AGENT_SNAPSHOT_KEYS`,
reaching the run through `describe_agent`); only a snapshot that verifies keeps the
decisions it carries on open calls and its `always` rules (`workflows.resume_trust`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from durable_agents.workflows import signed_decisions
from durable_agents.workflows.agent_spec import ApproverKey
from durable_agents.workflows.canonical import canonical_json


@dataclass(frozen=True)
class SignedSnapshot:
    """What a resumed snapshot document claims: the signing key and signature, and the
    exact bytes they cover."""

    key_id: str
    signature: str
    body: bytes


def claim_of(document: object) -> SignedSnapshot | None:
    """The Ed25519 claim of a snapshot document given as workflow input (a dict with an
    `integrity` block of that algorithm), or None if it makes none or is not JSON."""
    if not isinstance(document, dict):
        return None
    block = document.get("integrity")
    signed = block.get("signature") if isinstance(block, dict) else None
    if not isinstance(signed, dict):
        return None
    key_id, signature = signed.get("key_id"), signed.get("sig")
    if not isinstance(key_id, str) or not isinstance(signature, str):
        return None
    content: dict[str, Any] = {k: v for k, v in document.items() if k != "integrity"}
    try:
        body = canonical_json(content)
    except ValueError:
        return None
    return SignedSnapshot(key_id=key_id, signature=signature, body=body)


def verified_by(
    claim: SignedSnapshot | None, keys: list[ApproverKey], *, now: datetime
) -> str | None:
    """The id of the key whose signature `claim` carries, if it verifies (and the key
    has not expired); else None."""
    if claim is None:
        return None
    key = next((k for k in keys if k.key_id == claim.key_id), None)
    if key is None or (key.not_after is not None and now > key.not_after):
        return None
    if not signed_decisions.verifies(key, claim.signature, claim.body):
        return None
    return key.key_id
