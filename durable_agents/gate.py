"""The activity gate's keys and tags: proof that an activity execution, its result or a
webhook delivery was made by our own workflow code on a worker holding the keys.

Anyone who may start work in a namespace can run a registered activity directly
(Temporal's standalone activities), run a worker of their own whose workflow schedules
our activities on our task queue, or complete a running activity of ours by id. None of
them holds `AGENT_GATE_KEYS`: every acting activity of ours refuses an execution whose
header does not carry a tag made with one of those keys over what it is asked
(namespace, workflow id, the execution it is asked in: the run's original run id, kept
by `temporal workflow reset`, and the workflow's random seed, which a reset renews;
activity type, arguments), and a run takes an
activity's result only when it carries the worker's tag over the same and the result
(`durable_agents.gate_interceptor` places and checks them).

`AGENT_GATE_KEYS` (or `AGENT_GATE_KEYS_FILE`): `KEY_ID:BASE64` entries separated by
commas or lines; the first tags, every one verifies. Every worker of a namespace
(full workers and tools-only workers) holds the same list. To rotate: add the new key
last on every worker, then move it first, and drop the old one once no run that used
it is still open (a run that continues as new moves to the tagging key at its next
continue-as-new: `workflows.secret_ids`): a worker checks the tags in a run's history
whenever it replays it (a run it must load again refuses results tagged with a key it
no longer holds), and
makes the ids of a run's children and deliveries again with the key the run names
(`id_part`, `AgentSpec.gate_key`; without it, the run's workflow task fails).

A tag also says when the workflow task that made it began; an activity scheduled (or a
delivery started) more than `gate_interceptor.SCHEDULE_WINDOW` seconds later is a copy
of an earlier command and is refused.
`python -m durable_agents.gate new-key KEY_ID` prints a fresh entry.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import os
import re
import secrets
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from durable_agents.dataplane.codec import CodecConfigError, key_entries
from durable_agents.dataplane.secret_env import SecretEnvError, secret_from_env

ENV = "AGENT_GATE_KEYS"
HEADER = "durable-agents-gate"
"""The header (activity, child workflow) that carries the tag."""
RESULT_FIELD = "gated_result"
"""An activity's result as sent: `{"gated_result": <result>, "gate": <tag>}`."""
TAG_FIELD = "gate"
FAILURE_TAG_FIELD = "gate_failure"
"""The last detail of an activity's failure: `{"gate_failure": <tag>}`."""
REFUSED = "ActivityRefused"
"""The type of the non-retryable error an execution without a valid tag fails with."""
KEY_BYTES = 32
DEVELOPMENT_KEY_ID = "dev"
_DEVELOPMENT_KEY = hashlib.sha256(b"durable-agents development gate key").digest()
_KEY_ID = re.compile(r"[A-Za-z0-9._-]{1,32}")


class GateConfigError(ValueError):
    """The gate keys (environment or file) are unusable; the message names the
    variable, never key material."""


@dataclasses.dataclass(frozen=True)
class GateKeys:
    """The named HMAC-SHA256 keys of the workers of a namespace."""

    keys: Mapping[str, bytes] = dataclasses.field(repr=False)
    """Key id -> key of at least 32 bytes. Every key verifies."""
    current: str
    """Id of the key that tags (the first one listed)."""

    def __post_init__(self) -> None:
        if self.current not in self.keys:
            raise GateConfigError(f"gate key {self.current!r} is not among the keys")
        for key_id, key in self.keys.items():
            if not _KEY_ID.fullmatch(key_id):
                raise GateConfigError(f"bad gate key id {key_id!r}: use 1-32 of A-Z a-z 0-9 . _ -")
            if len(key) < KEY_BYTES:
                raise GateConfigError(
                    f"gate key {key_id!r} is {len(key)} bytes; it needs at least {KEY_BYTES}"
                )
            if key == _DEVELOPMENT_KEY and len(self.keys) > 1:  # anyone tags with it
                raise GateConfigError(
                    f"gate key {key_id!r} is the published development key: beside other "
                    "keys it would let anyone tag activities; it is only ever used alone "
                    f"({ENV}=dev, a dev server only this machine reaches)"
                )

    @classmethod
    def parse(cls, text: str, *, source: str = ENV) -> GateKeys:
        """Keys from `KEY_ID:BASE64` entries (commas or lines; `#` comments), as the codec's
        keys are written; the first tags."""
        try:
            keys = key_entries(text, source=source, what="gate key")
        except CodecConfigError as err:
            raise GateConfigError(err.message) from None
        return cls(keys=keys, current=next(iter(keys)))

    @classmethod
    def development(cls) -> GateKeys:
        """A published key for a dev server on this machine (`worker.py --dev`, the
        demos): it keeps nobody out; never use it where others can reach the server."""
        return cls(keys={DEVELOPMENT_KEY_ID: _DEVELOPMENT_KEY}, current=DEVELOPMENT_KEY_ID)

    @property
    def is_development(self) -> bool:
        return self.keys.get(self.current) == _DEVELOPMENT_KEY

    def describe(self) -> str:
        """One line for start-up output: key ids, no key material."""
        if self.is_development:
            return "the published development key (keeps nobody out: set AGENT_GATE_KEYS)"
        others = sorted(k for k in self.keys if k != self.current)
        also = f"; also verifies {', '.join(others)}" if others else ""
        return f"HMAC-SHA256, tagging with key {self.current!r}{also}"


def keys_from_env(env: Mapping[str, str] | None = None) -> GateKeys | None:
    """The keys of `AGENT_GATE_KEYS` / `AGENT_GATE_KEYS_FILE`; None when neither is set."""
    try:
        secret = secret_from_env(ENV, env=env)
    except SecretEnvError as err:
        raise GateConfigError(str(err)) from None
    return None if secret is None else GateKeys.parse(secret.value, source=secret.source)


MISSING = (
    f"no gate keys: set {ENV} (python -m durable_agents.gate new-key k1) on every worker "
    "of the namespace, so that only runs of ours can start our activities; "
    f"`{ENV}=dev` for a dev server only this machine reaches"
)


def required_keys(env: Mapping[str, str] | None = None) -> GateKeys:
    """The workers' keys from the environment; `dev` names the development key.
    Raises GateConfigError when none is set."""
    secret_text = (os.environ if env is None else env).get(ENV, "").strip()
    if secret_text == DEVELOPMENT_KEY_ID:
        return GateKeys.development()
    keys = keys_from_env(env)
    if keys is None:
        raise GateConfigError(MISSING)
    return keys


def plain(value: Any) -> Any:
    """`value` as the JSON both ends agree on: a pydantic model without the fields at
    their defaults (a worker of a newer build that added a field with a default agrees
    with an older one), anything else as pydantic writes it."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_defaults=True)
    return to_jsonable_python(value)


def digest(values: Sequence[Any]) -> str:
    """Hex SHA-256 of the canonical JSON of `values` (sorted keys, ASCII only)."""
    text = json.dumps([plain(v) for v in values], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _message(fields: Sequence[str]) -> bytes:
    message = "\n".join(f.replace("\\", "\\\\").replace("\n", "\\n") for f in fields)
    return message.encode("utf-8", "surrogatepass")


def _mac(key: bytes, fields: Sequence[str]) -> str:
    mac = hmac.new(key, _message(fields), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).decode().rstrip("=")


def tag(keys: GateKeys, fields: Sequence[str]) -> dict[str, str]:
    """The tag over `fields` with the current key: `{"k": KEY_ID, "t": MAC}`."""
    return {"k": keys.current, "t": _mac(keys.keys[keys.current], fields)}


def check(keys: GateKeys, given: object, fields: Sequence[str]) -> str | None:
    """Why `given` is not a tag over `fields` by one of `keys`; None when it is."""
    if not isinstance(given, dict) or not isinstance(given.get("k"), str):
        return "no gate tag"
    key = keys.keys.get(given["k"])
    if key is None:
        return (
            f"its gate key {given['k'][:32]!r} is not one of this worker's: dropped while a "
            "run that used it is open? keep a key until none is"
        )
    mac = given.get("t")
    # compare_digest takes only ASCII strings: anything else a sender wrote is no tag
    if not (isinstance(mac, str) and mac.isascii()):
        return "its gate tag does not match what it asks"
    if not hmac.compare_digest(mac, _mac(key, fields)):
        return "its gate tag does not match what it asks"
    return None


ID_PART_HEX = 16
"""Hex digits of an id's secret part (64 bits of the HMAC)."""


def id_part(keys: GateKeys, key_id: str, fields: Sequence[str]) -> str:
    """The part of a workflow id only holders of key `key_id` can make: the first
    `ID_PART_HEX` hex digits of its HMAC-SHA256 over `fields` (`workflows.secret_ids`).
    Raises GateConfigError when this worker does not hold that key (dropped while a run
    that made ids with it is still open)."""
    key = keys.keys.get(key_id)
    if key is None:
        raise GateConfigError(
            f"gate key {key_id[:32]!r}, which this run's workflow ids are made with, is not "
            "one of this worker's (keep a key until no run that used it is open)"
        )
    digest = hmac.new(key, _message(["id", *fields]), hashlib.sha256)
    return digest.hexdigest()[:ID_PART_HEX]


def new_key_entry(key_id: str) -> str:
    """A fresh `KEY_ID:BASE64` entry for AGENT_GATE_KEYS."""
    entry = f"{key_id}:{base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode()}"
    GateKeys.parse(entry)  # validates the id
    return entry


def main(argv: list[str] | None = None) -> int:
    """`python -m durable_agents.gate new-key KEY_ID`: print a fresh key entry."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "new-key":
        print("usage: python -m durable_agents.gate new-key KEY_ID", file=sys.stderr)
        return 2
    try:
        print(new_key_entry(args[1]))
    except GateConfigError as err:
        print(f"gate: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
