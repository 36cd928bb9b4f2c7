"""Approver keys of the tests: fixed seeds, so histories and vectors stay reproducible.
Test workers know ALICE's and BOB's public keys (`tests.conftest.serving`); MALLORY's
they do not."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from durable_agents.signing import SigningKey, Trust

ALICE = SigningKey("alice-test", "alice", Ed25519PrivateKey.from_private_bytes(b"\x01" * 32))
MALLORY = SigningKey("mallory-test", "mallory", Ed25519PrivateKey.from_private_bytes(b"\x02" * 32))
BOB = SigningKey("bob-test", "bob", Ed25519PrivateKey.from_private_bytes(b"\x04" * 32))
OPS = SigningKey("ops-test", "ops", Ed25519PrivateKey.from_private_bytes(b"\x03" * 32))
"""Signs exported snapshots; test workers trust it for that."""
WORKER_KEYS = [ALICE.public(), BOB.public()]
WORKER_TRUST = Trust(approver_keys=WORKER_KEYS, snapshot_keys=[OPS.public()])
