"""Reading and writing snapshot files on the client side, with the signing key.

The key is configuration of the client side only (`AGENT_SNAPSHOT_KEY`): this is
where signed snapshots are verified, before a run starts from one. Workers never
hold the key; a run started directly with a snapshot file as `resume_from` gets
its SHA-256 digest checked, an HMAC one is left to the client that starts it
(see `workflows.snapshot.state_of_document`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from durable_agents.client.errors import InvalidSnapshot
from durable_agents.workflows import snapshot
from durable_agents.workflows.state import RunState

from durable_agents.dataplane.secret_env import secret_from_env
from durable_agents.signing import SigningKey

KEY_ENV = "AGENT_SNAPSHOT_KEY"
"""Environment variable holding the snapshot signing key (UTF-8 text; unset or empty: none)."""


def signing_key(key: bytes | None = None) -> bytes | None:
    """`key` if given, else `$AGENT_SNAPSHOT_KEY` (or the contents of the file
    `$AGENT_SNAPSHOT_KEY_FILE` names) as UTF-8 bytes, else None (unsigned).

    With a key, export writes an HMAC-SHA256 and only snapshots signed with
    that key load; without one, export writes a SHA-256 digest that catches
    edits and corruption, and signed snapshots are refused (they cannot be checked).
    Raises `SecretEnvError` for both set, or an unreadable or empty file (never a
    silent fall-back to unsigned).
    """
    if key is not None:
        return key
    secret = secret_from_env(KEY_ENV)
    return secret.value.encode("utf-8") if secret else None


def dumps(state: RunState, *, key: bytes | None = None, sign_with: SigningKey | None = None) -> str:
    """The snapshot file text of `state`, signed with `signing_key(key)` if there is one,
    or with the Ed25519 key `sign_with` (a worker holding its public key then trusts
    the decisions the snapshot carries when it resumes it)."""
    try:
        if sign_with is not None:
            return snapshot.dumps(state, signer=sign_with.sign_snapshot)
        return snapshot.dumps(state, key=signing_key(key))
    except snapshot.SnapshotError as err:
        raise invalid(err) from err


def loads(source: str | bytes | RunState, *, key: bytes | None = None) -> RunState:
    """A verified, migrated, validated RunState from snapshot text (or a RunState, re-validated).

    Raises `InvalidSnapshot` saying what is wrong and where.
    """
    try:
        if isinstance(source, RunState):
            # Validate what was built or edited in Python exactly as a file would be.
            return snapshot.loads(snapshot.dumps(source))
        return snapshot.loads(source, key=signing_key(key))
    except snapshot.SnapshotError as err:
        raise invalid(err) from err


def validate(text: str | bytes, *, key: bytes | None = None) -> str:
    """The one-line verdict on a snapshot file; raises `InvalidSnapshot`."""
    try:
        return snapshot.validate(text, key=signing_key(key))
    except snapshot.SnapshotError as err:
        raise invalid(err) from err


def fork(state: RunState, *, at_turn: int, new_input: str | None) -> RunState:
    """`workflows.snapshot.fork`, its refusals as `InvalidSnapshot`."""
    try:
        return snapshot.fork(state, at_turn=at_turn, new_input=new_input)
    except snapshot.SnapshotError as err:
        raise invalid(err) from err


def signed_document(source: str | bytes | RunState) -> dict[str, object] | None:
    """The snapshot document as it is, if it carries an Ed25519 signature (the run is
    started with it unchanged, so the worker can check the signature); else None."""
    if isinstance(source, RunState):
        return None
    try:
        document = json.loads(source)
    except ValueError:
        return None
    block = document.get("integrity") if isinstance(document, dict) else None
    return document if isinstance(block, dict) and "signature" in block else None


def invalid(err: snapshot.SnapshotError) -> InvalidSnapshot:
    """The client error for a snapshot error."""
    return InvalidSnapshot(str(err), path=err.path, problem=err.problem)


@dataclass
class Resealed:
    """A snapshot file sealed again after an edit made on purpose (`reseal`)."""

    text: str
    """The new file: the content as edited, with a new integrity block."""
    state: RunState
    edited: bool
    """The old integrity block did not match the content (or there was none)."""
    differences: list[str] = field(default_factory=list)
    """`changed $.turn: 3 → 4` lines, against the original file, when one was given."""


MAX_DIFFERENCES = 50


def reseal(
    text: str | bytes, *, key: bytes | None = None, against: str | bytes | None = None
) -> Resealed:
    """Seal an edited snapshot file again: its content validated as strictly as `loads`
    does (only the integrity block is not checked), then written with a new block
    (HMAC-SHA256 with `signing_key(key)`, else a SHA-256 digest; never an Ed25519
    signature). With `against`, the original file (verified as `loads` does), the
    result lists what differs. Sealing grants nothing: a resumed snapshot's decisions
    on calls not yet run are asked again (`workflows.resume_trust`) unless an Ed25519
    key the workers trust signed it, and a re-sealed file never carries one. Raises
    `InvalidSnapshot` when the content itself is not a valid snapshot."""
    try:
        document = json.loads(text)
    except ValueError as err:
        raise InvalidSnapshot(f"snapshot is not valid JSON: {err}") from None
    if not isinstance(document, dict):
        raise InvalidSnapshot("a snapshot is a JSON object")
    content = {k: v for k, v in document.items() if k != "integrity"}
    try:
        state = snapshot.loads(json.dumps(content), allow_unverified=True)
    except snapshot.SnapshotError as err:
        raise invalid(err) from err
    try:
        snapshot.loads(text, key=signing_key(key))
        edited = False
    except snapshot.SnapshotError:
        edited = True
    found = Resealed(text=dumps(state, key=key), state=state, edited=edited)
    if against is not None:
        original = loads(against, key=key).model_dump(mode="json")
        found.differences = differences(original, state.model_dump(mode="json"))
    return found


def differences(old: Any, new: Any, path: str = "$") -> list[str]:
    """What changed from `old` to `new` (JSON data), one line per value, by JSON path."""
    if isinstance(old, dict) and isinstance(new, dict):
        lines = []
        for key in [*old, *(k for k in new if k not in old)]:
            where = f"{path}.{key}"
            if key not in new:
                lines.append(f"removed {where}: {_shown(old[key])}")
            elif key not in old:
                lines.append(f"added   {where}: {_shown(new[key])}")
            else:
                lines += differences(old[key], new[key], where)
        return lines
    if isinstance(old, list) and isinstance(new, list):
        lines = []
        for index in range(max(len(old), len(new))):
            where = f"{path}[{index}]"
            if index >= len(new):
                lines.append(f"removed {where}: {_shown(old[index])}")
            elif index >= len(old):
                lines.append(f"added   {where}: {_shown(new[index])}")
            else:
                lines += differences(old[index], new[index], where)
        return lines
    return [] if old == new else [f"changed {path}: {_shown(old)} → {_shown(new)}"]


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= 80 else text[:79] + "…"
