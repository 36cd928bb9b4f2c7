"""What a decision is bound to, and how a signed one is checked: pure and deterministic.

A decision names the pending call's arguments by digest (`arguments_sha256`:
hex SHA-256 of the RFC 8785 canonical JSON of the arguments object), so an
approval of what a person was shown cannot release other arguments. A signed
decision carries `signature = {"key_id", "sig"}`: base64url (no padding) Ed25519
over the canonical JSON of the payload as sent, without `signature`. Any
language can produce one with an RFC 8785 library and Ed25519 (README, "Security
model"); the workflow verifies it against the approver keys frozen into the run
(`AgentSpec.approver_keys`), so the approver is the key's owner, not a name the
sender typed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from datetime import datetime
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from durable_agents.workflows.agent_spec import ApproverKey
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.errors import DecisionRefused
from durable_agents.workflows.payloads import DecisionSignal, parse_time
from durable_agents.workflows.proposed_calls import parse_arguments
from durable_agents.workflows.run_items import ToolCall

SIGNED_FIELDS = ("run_id", "arguments_sha256", "expires_at", "decision")
"""Fields every signed decision must carry, so that it decides one call of one run,
as shown, once, for a limited time."""


def arguments_sha256(arguments: dict[str, Any]) -> str:
    """Hex SHA-256 of the canonical JSON of an arguments object."""
    return hashlib.sha256(canonical_json(arguments)).hexdigest()


def call_arguments(call: ToolCall) -> dict[str, Any] | None:
    """The call's arguments as a JSON object, or None if they are not one."""
    try:
        parsed = parse_arguments(call.arguments)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def call_sha256(call: ToolCall) -> str | None:
    """`arguments_sha256` of a call's arguments, or None if they are not a JSON object."""
    arguments = call_arguments(call)
    if arguments is None:
        return None
    try:
        return arguments_sha256(arguments)
    except ValueError:  # NaN and the like: no canonical form, nothing can bind to it
        return None


def signed_message(payload: DecisionSignal) -> bytes:
    """The bytes a decision's signature covers: the payload's fields as sent (those
    the sender set, `decision` included), without `signature`, canonical JSON."""
    fields = payload.model_dump(mode="json", include=payload.model_fields_set)
    fields.pop("signature", None)
    return canonical_json(fields)


def verify(
    payload: DecisionSignal,
    keys: list[ApproverKey],
    *,
    now: datetime,
    execution_bound: bool = False,
) -> ApproverKey:
    """The key that signed `payload`; raises DecisionRefused if none did, or if the
    signed payload is not bound (run, arguments, expiry, decision, and with
    `execution_bound` the run's execution) or names another approver than the
    key's owner."""
    signature = payload.signature
    if signature is None:
        raise DecisionRefused("the tool's policy requires a signed decision (`signature`)")
    required = (*SIGNED_FIELDS, "execution_id") if execution_bound else SIGNED_FIELDS
    unbound = [f for f in required if getattr(payload, f) is None]
    if unbound:
        raise DecisionRefused(f"a signed decision must carry {', '.join(unbound)}")
    key = next((k for k in keys if k.key_id == signature.key_id), None)
    if key is None:
        raise DecisionRefused(f"signed with key {signature.key_id!r}, which this run does not know")
    if key.not_after is not None and now > key.not_after:
        raise DecisionRefused(f"key {key.key_id!r} expired at {key.not_after.isoformat()}")
    if not verifies(key, signature.sig, signed_message(payload)):
        raise DecisionRefused(
            f"the signature with key {key.key_id!r} does not verify (payload changed after "
            "signing, or not signed over its RFC 8785 canonical JSON)"
        )
    if payload.approver != key.owner:
        raise DecisionRefused(
            f"signed with {key.owner}'s key {key.key_id!r}, but names {payload.approver!r}"
        )
    return key


def binding_problem(
    payload: DecisionSignal,
    *,
    run_id: str,
    digest: str | None,
    now: datetime,
    execution_id: str | None = None,
) -> str | None:
    """Why the payload's bindings do not match the call it decides, or None."""
    if payload.run_id is not None and payload.run_id != run_id:
        return f"the decision is for run {payload.run_id!r}, not this one"
    if payload.execution_id is not None and payload.execution_id != execution_id:
        return (
            f"the decision is for execution {payload.execution_id!r} of run {run_id!r}, "
            "not this one (an earlier run under the same workflow id?)"
        )
    if payload.arguments_sha256 is not None and payload.arguments_sha256 != digest:
        return (
            "arguments_sha256 does not match the call's arguments (the decision was made "
            "on other arguments than the call has)"
        )
    if payload.expires_at is not None and now >= parse_time(payload.expires_at):
        return f"the decision expired at {payload.expires_at}"
    return None


def verifies(key: ApproverKey, sig: str, message: bytes) -> bool:
    """Whether `sig` (base64url Ed25519) is `key`'s signature over `message`."""
    try:
        public = Ed25519PublicKey.from_public_bytes(_unbase64url(key.public_key))
        public.verify(_unbase64url(sig), message)
    except (InvalidSignature, ValueError, binascii.Error):
        return False
    return True


def _unbase64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _fail_one_verification() -> None:
    """Make `cryptography` look up its InvalidSignature class now, at import, outside
    any workflow sandbox: it caches the class on first use. Looked up for the first
    time inside a sandbox that re-imports modules (a worker or Replayer without
    `cryptography` passed through), the lookup fails and aborts the whole process,
    so one badly signed signal would kill the worker."""
    public = Ed25519PrivateKey.from_private_bytes(bytes(32)).public_key()
    try:
        public.verify(bytes(64), b"")
    except InvalidSignature:
        return
    raise RuntimeError("an all-zero Ed25519 signature verified")


_fail_one_verification()
