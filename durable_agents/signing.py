"""Approver keys: make one, keep it, sign a decision with it, list the public halves.

A key file (`agentctl keygen`) is JSON, written 0600:
`{"key_id": str, "owner": str, "private_key": base64url of the 32-byte Ed25519 seed}`.
Workers learn the public halves from `AGENT_APPROVER_KEYS`, a JSON list of
`{"key_id", "owner", "public_key", "not_after"?}` (`ApproverKey`); runs take them
at start and resume and verify signed decisions against them
(`workflows.signed_decisions`). What is signed: the RFC 8785 canonical JSON of
the decision payload exactly as sent, without `signature`.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import TypeAdapter, ValidationError

from durable_agents.workflows.agent_spec import ApproverKey
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.errors import AgentError

APPROVER_KEYS_ENV = "AGENT_APPROVER_KEYS"
"""Worker environment: path of the JSON list of approver public keys."""
SNAPSHOT_KEYS_ENV = "AGENT_SNAPSHOT_KEYS"
"""Worker environment: path of the JSON list of public keys that sign snapshots."""
REFUSE_UNVERIFIED_ENV = "AGENT_REFUSE_UNVERIFIED_SNAPSHOTS"
"""Worker environment: `1` refuses to resume a snapshot that does not verify."""


@dataclass(frozen=True)
class Trust:
    """What a worker trusts, from its configuration (`durable_agents.signing.trust_from_env`):
    approver keys for signed decisions, snapshot keys for signed snapshots, and whether
    a snapshot that does not verify is refused."""

    approver_keys: Sequence[ApproverKey] = ()
    snapshot_keys: Sequence[ApproverKey] = ()
    refuse_unverified_snapshots: bool = False


class SigningError(AgentError):
    """A key file or key list that cannot be used; the message says why."""


@dataclass(frozen=True)
class SigningKey:
    """An approver's private key, with the id and owner workers know it by."""

    key_id: str
    owner: str
    private: Ed25519PrivateKey

    def public(self) -> ApproverKey:
        """The entry for the workers' `AGENT_APPROVER_KEYS` list."""
        raw = self.private.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return ApproverKey(key_id=self.key_id, owner=self.owner, public_key=b64url(raw))

    def sign_snapshot(self, body: bytes) -> tuple[str, str]:
        """A snapshot's signature (`workflows.snapshot.Signer`): key id, base64url sig."""
        return self.key_id, b64url(self.private.sign(body))

    def sign(self, payload: dict[str, Any]) -> dict[str, Any]:
        """`payload` (plain JSON, exactly as it will be sent) with its `signature`."""
        body = {k: v for k, v in payload.items() if k != "signature"}
        sig = self.private.sign(canonical_json(body))
        return {**body, "signature": {"key_id": self.key_id, "sig": b64url(sig)}}

    def sign_start(
        self, start_input: dict[str, Any], *, workflow_id: str, expires_at: str
    ) -> dict[str, Any]:
        """`start_input` (plain JSON, as it will be sent) with its `start_signature`
        (`workflows.signed_start`): the run records this key's owner as its starter."""
        claim: dict[str, Any] = {
            "key_id": self.key_id,
            "workflow_id": workflow_id,
            "expires_at": expires_at,
        }
        body = {k: v for k, v in start_input.items() if k != "start_signature"}
        sig = self.private.sign(canonical_json({**body, "start_signature": claim}))
        return {**body, "start_signature": {**claim, "sig": b64url(sig)}}


def generate(key_id: str, owner: str) -> SigningKey:
    """A new key for `owner`."""
    ApproverKey(key_id=key_id, owner=owner, public_key="A" * 43)  # the id and owner fit
    return SigningKey(key_id, owner, Ed25519PrivateKey.generate())


def write_key(key: SigningKey, path: Path) -> None:
    """Write a key file readable by its owner only; refuses to overwrite one."""
    seed = key.private.private_bytes_raw()
    text = json.dumps({"key_id": key.key_id, "owner": key.owner, "private_key": b64url(seed)})
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise SigningError(f"{path} exists; not overwriting a key") from None
    except OSError as err:
        raise SigningError(f"cannot write key file {path}: {err.strerror or err}") from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text + "\n")


def read_key(path: Path) -> SigningKey:
    """The key in a key file written by `write_key` (or by hand, in that format)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        seed = unb64url(data["private_key"])
        key = SigningKey(
            str(data["key_id"]), str(data["owner"]), Ed25519PrivateKey.from_private_bytes(seed)
        )
        key.public()  # the id and owner fit
        return key
    except OSError as err:
        raise SigningError(f"cannot read key file {path}: {err.strerror}") from None
    except (ValueError, KeyError, TypeError, ValidationError, RecursionError) as err:
        raise SigningError(
            f"{path} is not a key file ({type(err).__name__}): expected "
            '{"key_id", "owner", "private_key"} as written by agentctl keygen'
        ) from None


_KEYS = TypeAdapter(list[ApproverKey])


def read_public_keys(path: Path) -> list[ApproverKey]:
    """The approver keys listed in a JSON file; key ids must be unique."""
    try:
        keys = _KEYS.validate_json(path.read_bytes())
    except OSError as err:
        raise SigningError(f"cannot read approver keys {path}: {err.strerror}") from None
    except ValidationError as err:
        raise SigningError(f"{path} is not a list of approver keys: {err}") from None
    ids = [k.key_id for k in keys]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise SigningError(f"{path} lists key ids more than once: {', '.join(repeated)}")
    return keys


def trust_from_env(environ: Mapping[str, str] | None = None) -> Trust:
    """What a worker trusts: AGENT_APPROVER_KEYS, AGENT_SNAPSHOT_KEYS (JSON lists of
    public keys; unset: none) and AGENT_REFUSE_UNVERIFIED_SNAPSHOTS (`1`: refuse)."""
    env = os.environ if environ is None else environ
    approvers, snapshots = env.get(APPROVER_KEYS_ENV), env.get(SNAPSHOT_KEYS_ENV)
    refuse = env.get(REFUSE_UNVERIFIED_ENV, "").strip().lower() in ("1", "true", "yes", "on")
    return Trust(
        approver_keys=read_public_keys(Path(approvers)) if approvers else [],
        snapshot_keys=read_public_keys(Path(snapshots)) if snapshots else [],
        refuse_unverified_snapshots=refuse,
    )


def describe_trust(trust: Trust) -> str:
    """One start-up line: key ids (never key material) and the snapshot policy."""
    approvers = ", ".join(k.key_id for k in trust.approver_keys) or "none"
    snapshots = ", ".join(k.key_id for k in trust.snapshot_keys) or "none"
    refused = "; unverified snapshots refused" if trust.refuse_unverified_snapshots else ""
    return f"worker: approver keys: {approvers}; snapshot keys: {snapshots}{refused}"


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
