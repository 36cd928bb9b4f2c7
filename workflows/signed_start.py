"""Who started a run, proven by a signature: pure and deterministic.

A workflow cannot tell who started it: anyone who may start workflows can say
anything in the input. A start input may carry `start_signature = {"key_id",
"workflow_id", "expires_at", "sig"}`: base64url (no padding) Ed25519, with one of
the approver keys of the worker's configuration, over the RFC 8785 canonical JSON
of the input object as sent, in which `start_signature` stands without `sig`. The
run checks it against the keys frozen into it at start (`AgentSpec.approver_keys`,
from `describe_agent`) and records the key's owner as `RunState.started_by`; a
policy with `separate_duties` then refuses that owner's approvals. A signature
that does not verify fails the start: someone claimed to be someone they are not.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from durable_agents.workflows import signed_decisions
from durable_agents.workflows.agent_spec import ApproverKey
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.payloads import parse_time
from durable_agents.workflows.state import START_PROOF_CHARS, Starter, StartProof

FIELD = "start_signature"
"""The start input's field that carries the signature."""


@dataclass(frozen=True)
class StartClaim:
    """What a start input's signature claims, and the exact bytes it covers."""

    key_id: str
    workflow_id: str
    expires_at: str
    sig: str
    body: bytes


def signed_body(start_input: dict[str, Any]) -> bytes:
    """The bytes a start signature covers: the input with `start_signature` minus `sig`."""
    claim = start_input.get(FIELD)
    unsigned = {k: v for k, v in claim.items() if k != "sig"} if isinstance(claim, dict) else claim
    return canonical_json({**start_input, FIELD: unsigned})


def claim_of(start_input: object) -> StartClaim | None:
    """The claim of a start input (the JSON object as sent), or None if it makes none.
    The input model has already checked the fields' types and forms."""
    if not isinstance(start_input, dict) or not isinstance(start_input.get(FIELD), dict):
        return None
    claim = start_input[FIELD]
    try:
        body = signed_body(start_input)
    except ValueError:  # no canonical form (a non-finite number): nothing verifies
        body = b""
    return StartClaim(
        key_id=str(claim.get("key_id")),
        workflow_id=str(claim.get("workflow_id")),
        expires_at=str(claim.get("expires_at")),
        sig=str(claim.get("sig")),
        body=body,
    )


def proof(claim: StartClaim) -> StartProof | None:
    """The claim kept as proof for the runs this run calls as tools (None: its input is
    too large to pass on, or not text)."""
    try:
        body = claim.body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(body) > START_PROOF_CHARS or not body:
        return None
    return StartProof(key_id=claim.key_id, workflow_id=claim.workflow_id, sig=claim.sig, body=body)


def inherited(
    given: StartProof, keys: list[ApproverKey], *, root_id: str, now: datetime
) -> Starter | None:
    """Who signed the start of the tree's root, from the proof a caller passed down, if
    it checks out: signed for the root (`root_id`, as Temporal says), its claim the one
    inside the signed body, with a key of `keys` not expired `now`, the signature
    verifying. None otherwise: the run starts unsigned (its expiry was the root's to
    judge, at the root's start)."""
    if given.workflow_id != root_id:
        return None
    try:
        signed = json.loads(given.body)
    except (ValueError, RecursionError):  # (nested past the stack: it failed the task once)
        return None
    claim = signed.get(FIELD) if isinstance(signed, dict) else None
    if not isinstance(claim, dict) or (claim.get("key_id"), claim.get("workflow_id")) != (
        given.key_id,
        given.workflow_id,
    ):
        return None
    key = next((k for k in keys if k.key_id == given.key_id), None)
    if key is None or (key.not_after is not None and now > key.not_after):
        return None
    if not signed_decisions.verifies(key, given.sig, given.body.encode("utf-8")):
        return None
    return Starter(key_id=key.key_id, owner=key.owner)


def verify(
    claim: StartClaim, keys: list[ApproverKey], *, workflow_id: str, now: datetime
) -> Starter:
    """Who signed the start; ValueError with the reason if the signature does not
    verify, names another workflow, has expired or was made with an unknown or
    expired key."""
    if claim.workflow_id != workflow_id:
        raise ValueError(f"the signed start is for workflow {claim.workflow_id!r}, not this one")
    if now >= parse_time(claim.expires_at):
        raise ValueError(f"the signed start expired at {claim.expires_at}")
    key = next((k for k in keys if k.key_id == claim.key_id), None)
    if key is None:
        raise ValueError(f"the start is signed with key {claim.key_id!r}, which this worker lacks")
    if key.not_after is not None and now > key.not_after:
        raise ValueError(f"key {key.key_id!r} expired at {key.not_after.isoformat()}")
    if not signed_decisions.verifies(key, claim.sig, claim.body):
        raise ValueError(
            f"the start signature with key {key.key_id!r} does not verify (input changed "
            "after signing, or not signed over its RFC 8785 canonical JSON)"
        )
    return Starter(key_id=key.key_id, owner=key.owner)
