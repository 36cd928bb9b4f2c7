"""Portable RunState snapshots: write, read (verify, migrate, validate), fork.

A snapshot file is the RunState JSON (`schema_version` first) plus a top-level
`integrity` object, `{"algorithm": "sha256" | "hmac-sha256", "digest": hex}`,
over the canonical JSON (RFC 8785, see `workflows.canonical`) of every other
top-level field. Without a key the digest catches edits and corruption; with a signing key it is
an HMAC and only holders of the key can produce a snapshot that loads.

Pure and deterministic (no clock, no environment, no I/O): the caller passes
the text and the key, so the workflow may import this module too.
"""

from __future__ import annotations

import copy
import hmac
import json
import re
from collections.abc import Callable
from typing import Any

from durable_agents.workflows import json_nulls
from durable_agents.workflows.canonical import (
    HMAC_SHA256,
    SHA256,
    canonical_json,
    integrity_block,
)
from durable_agents.workflows.execution_settings import execution_field_problem
from durable_agents.workflows.migrations import MIGRATIONS, Migration
from durable_agents.workflows.run_items import (
    AssistantMessage,
    Handoff,
    ToolResult,
    Usage,
    UserMessage,
)
from durable_agents.workflows.state import SCHEMA_VERSION, RunOrigin, RunState, RunStatus
from pydantic import ValidationError

_VERSION = re.compile(r"(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})")  # bounded: int() of it is cheap
_DIGEST = re.compile(r"[0-9a-f]{64}")
_SIGNATURE = re.compile(r"[A-Za-z0-9_-]{86}")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

PRE_RELEASE_MAJOR = 1
"""Snapshots of this major or older were written by builds before the first release
(schema 0.x and 1.0 to 1.31): never read, with a message saying so."""


class SnapshotError(ValueError):
    """A snapshot (or a fork of one) that cannot be used; the message says why and where."""

    path: str | None
    """JSON path of the offending value (`$.items[3].decision`), or None for the whole file."""
    problem: str
    """What is wrong, in words."""

    def __init__(self, path: str | None, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"invalid snapshot at {path}: {problem}" if path else problem)

    def __reduce__(self) -> tuple[type[SnapshotError], tuple[str | None, str]]:
        return type(self), (self.path, self.problem)


# --- integrity ---------------------------------------------------------------------


def _integrity(content: dict[str, Any], key: bytes | None) -> dict[str, str]:
    try:
        return integrity_block(content, key)
    except ValueError as err:
        raise SnapshotError(None, f"snapshot content is not canonical JSON: {err}") from None


# --- writing ------------------------------------------------------------------------


Signer = Callable[[bytes], tuple[str, str]]
"""Signs the canonical bytes of a snapshot: returns (key id, base64url Ed25519 signature)."""


def dumps(state: RunState, *, key: bytes | None = None, signer: Signer | None = None) -> str:
    """The snapshot file text of `state` (indent 2), signed with HMAC-SHA256 if `key` is
    given, or with Ed25519 by `signer` (`workflows.snapshot_signature`: a worker holding
    the public key trusts the decisions it carries when it resumes it).

    The state is validated first, exactly as `loads` will, so a snapshot that
    was written can always be read back.
    """
    _check_key(key)
    if key is not None and signer is not None:
        raise SnapshotError(None, "sign a snapshot with an HMAC key or an Ed25519 key, not both")
    content = state.model_dump(mode="json", warnings=False)  # _validated says what is wrong
    _validated(content)
    block: dict[str, Any] = _integrity(content, key)
    if signer is not None:
        key_id, sig = signer(_canonical(content))
        block["signature"] = {"key_id": key_id, "sig": sig}
    document = {**content, "integrity": block}
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


# --- reading ------------------------------------------------------------------------


def loads(
    text: str | bytes, *, key: bytes | None = None, allow_unverified: bool = False
) -> RunState:
    """The RunState of a snapshot file: parsed, verified, migrated to the newest version, validated.

    Integrity policy: with a `key`, only a snapshot signed with that key loads
    (unsigned, unverifiable or wrongly signed ones are refused). Without a key,
    a `sha256` digest must match and an `hmac-sha256` one is refused (it cannot
    be checked). A snapshot with no `integrity` block at all (hand-written, or
    made by another tool) loads only with `allow_unverified=True` and no key.
    Raises SnapshotError; nothing is coerced, and only fields whose schema
    states a default may be omitted.
    """
    return _read(text, key=key, allow_unverified=allow_unverified)[0]


def validate(text: str | bytes, *, key: bytes | None = None, allow_unverified: bool = False) -> str:
    """A one-line verdict on a snapshot file (or SnapshotError, as `loads`)."""
    state, version, verified = _read(text, key=key, allow_unverified=allow_unverified)
    schema = version if version == SCHEMA_VERSION else f"{version} (migrated to {SCHEMA_VERSION})"
    count = len(state.items)
    verdict = (
        f"valid, schema {schema}, run {state.run_id}, {count} item{'' if count == 1 else 's'}, "
        f"status {state.status.value}"
    )
    block = _parse(text).get("integrity")
    signature = block.get("signature") if isinstance(block, dict) else None
    if isinstance(signature, dict):
        return verdict + (
            f" (signed with Ed25519 key {str(signature.get('key_id'))[:64]!r}: verified by "
            "the worker that resumes it)"
        )
    return verdict if verified else verdict + " (unverified: no integrity block)"


def _read(
    text: str | bytes, *, key: bytes | None, allow_unverified: bool
) -> tuple[RunState, str, bool]:
    _check_key(key)
    data = _whole(_parse(text))
    version = _check_version(data)
    verified = _verify(data, key=key, allow_unverified=allow_unverified)
    return _validated(json_nulls.filled(migrate(data))), version, verified


def load_data(document: dict[str, Any]) -> RunState:
    """A snapshot document given as data, not text (a workflow's `resume_from`, see
    `workflows.snapshot_input`): migrated if older, validated strictly.

    Its `integrity` block is optional; a SHA-256 digest must match, an HMAC is
    removed unchecked: workers never hold the key, so signed snapshots are verified
    on the client path (`loads` with the key, as agentctl and AgentClient do before
    they start a run). Raises SnapshotError.
    """
    data = dict(document)
    if "schema_version" in data:  # else the schema's default: the current version
        _check_version(data)
        if "integrity" in data:
            _verify(data, key=None, allow_unverified=False, signed_unchecked=True)
        data = migrate(data)
    return _validated(data)


def lenient_document(document: dict[str, Any]) -> dict[str, Any]:
    """A snapshot document as another tool may write it, made what `load_data` reads:
    `null` for an empty list or map (Go, the `temporal` CLI printing `get_state`) made
    empty (`workflows.json_nulls`), a `get_state` answer's `"page": null` dropped, and
    one page of a larger state refused (SnapshotError): it is not the whole state."""
    return json_nulls.filled(_whole(dict(document)))


def _whole(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the `page` field of a `get_state` answer (`workflows.state_pages`):
    null is the whole state; a page is refused, since it is not the whole state."""
    if "page" not in data:
        return data
    if data["page"] is not None:
        raise SnapshotError(
            "$.page",
            "this is one page of a run's state (a get_state answer cut to its size bound), "
            "not the whole state: read it whole (AgentClient.state, agentctl export) to resume",
        )
    return {key: value for key, value in data.items() if key != "page"}


def _parse(text: str | bytes) -> dict[str, Any]:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise SnapshotError(None, f"snapshot is not UTF-8 text (byte {err.start})") from None
    try:
        data = json.loads(
            text.removeprefix("\ufeff"),
            object_pairs_hook=_unique_keys,
            parse_constant=_refuse_constant,
        )
    except SnapshotError:
        raise
    except json.JSONDecodeError as err:
        where = f"line {err.lineno}, column {err.colno}"
        raise SnapshotError(None, f"snapshot is not valid JSON: {err.msg} at {where}") from None
    except RecursionError:
        raise SnapshotError(None, "snapshot is nested too deeply to read") from None
    except ValueError as err:  # an integer of thousands of digits, say
        raise SnapshotError(None, f"snapshot cannot be read: {err}") from None
    if not isinstance(data, dict):
        raise SnapshotError("$", f"a snapshot is a JSON object, not {_json_type(data)}")
    return data


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data = dict(pairs)
    if len(data) != len(pairs):
        keys = [k for k, _ in pairs]
        duplicate = next(k for i, k in enumerate(keys) if k in keys[:i])
        raise SnapshotError(None, f"snapshot is not valid JSON: duplicate key {duplicate!r}")
    return data


def _refuse_constant(name: str) -> None:
    raise SnapshotError(None, f"snapshot is not valid JSON: {name} is not a JSON number")


def _check_version(data: dict[str, Any]) -> str:
    """The snapshot's version, if this build reads it (as is or by `MIGRATIONS`); else
    SnapshotError, in one line naming the version and the one this build reads."""
    if "schema_version" not in data:
        raise SnapshotError("$", "schema_version is missing")
    version = data["schema_version"]
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise SnapshotError(
            "$.schema_version",
            f'expected "MAJOR.MINOR" such as "{SCHEMA_VERSION}", got {_shown(version)}',
        )
    theirs, ours = _version(version), _version(SCHEMA_VERSION)
    if theirs > ours:
        reader = f"{ours[0]}.x" if theirs[0] > ours[0] else SCHEMA_VERSION
        raise SnapshotError(
            None, f"snapshot schema {version} is newer than this reader ({reader}); upgrade"
        )
    if version != SCHEMA_VERSION and version not in MIGRATIONS:
        raise _unreadable(version)
    return version


def _unreadable(version: str) -> SnapshotError:
    """The refusal of an older `version` no migration starts from."""
    if _version(version)[0] <= PRE_RELEASE_MAJOR:
        why = "was written by a pre-release build"
    else:
        why = "is not supported (no migration to a newer one)"
    reads = f"this build reads {SCHEMA_VERSION}"
    return SnapshotError(None, f"snapshot schema {version} {why}; {reads}")


def _shown(value: Any, limit: int = 40) -> str:
    """`value` as JSON, cut to `limit` characters: an error message stays one short line."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _version(version: str) -> tuple[int, int]:
    return tuple(int(part) for part in version.split("."))  # type: ignore[return-value]


def _verify(
    data: dict[str, Any],
    *,
    key: bytes | None,
    allow_unverified: bool,
    signed_unchecked: bool = False,
) -> bool:
    """Check and remove the integrity block; False if there was none and that is allowed
    (or, with `signed_unchecked` and no key, if it is an HMAC, removed unchecked)."""
    if "integrity" not in data:
        if key is not None:
            raise SnapshotError(None, "unsigned snapshot refused: a signing key is configured")
        if not allow_unverified:
            raise SnapshotError("$", "integrity is missing (the snapshot was not made by export)")
        return False
    block = data.pop("integrity")
    if isinstance(block, dict) and "signature" in block:
        _check_signature_shape(block)
        block = {k: v for k, v in block.items() if k != "signature"}
    if (
        not isinstance(block, dict)
        or set(block) != {"algorithm", "digest"}
        or block["algorithm"] not in (SHA256, HMAC_SHA256)
        or not isinstance(block["digest"], str)
        or not _DIGEST.fullmatch(block["digest"])
    ):
        raise SnapshotError(
            "$.integrity",
            'expected {"algorithm": "sha256" or "hmac-sha256", "digest": 64 lowercase hex digits}',
        )
    if block["algorithm"] == HMAC_SHA256 and key is None:
        if signed_unchecked:
            return False
        raise SnapshotError(
            None, "signed snapshot (hmac-sha256) cannot be verified: no signing key is configured"
        )
    if block["algorithm"] == SHA256 and key is not None:
        raise SnapshotError(None, "unsigned snapshot refused: a signing key is configured")
    if not hmac.compare_digest(_integrity(data, key)["digest"], block["digest"]):
        other_key = " or signed with another key" if key is not None else ""
        raise SnapshotError(
            None, f"snapshot was modified after export{other_key} (digest mismatch)"
        )
    return True


def _check_signature_shape(block: dict[str, Any]) -> None:
    """An Ed25519 signature (`integrity.signature`) is checked where its public keys are:
    by the worker that resumes the snapshot (`workflows.snapshot_signature`); here
    only its shape is. It goes with a SHA-256 digest, which anyone can check."""
    signature = block["signature"]
    if (
        block.get("algorithm") != SHA256
        or not isinstance(signature, dict)
        or set(signature) != {"key_id", "sig"}
        or not isinstance(signature["key_id"], str)
        or not isinstance(signature["sig"], str)
        or not _SIGNATURE.fullmatch(signature["sig"])
    ):
        raise SnapshotError(
            "$.integrity.signature",
            'expected {"key_id": str, "sig": 86 base64url characters}, with a sha256 digest',
        )


def _canonical(content: dict[str, Any]) -> bytes:
    try:
        return canonical_json(content)
    except ValueError as err:
        raise SnapshotError(None, f"snapshot content is not canonical JSON: {err}") from None


def migrate(
    data: dict[str, Any], *, migrations: dict[str, Migration] | None = None
) -> dict[str, Any]:
    """`data` brought to `SCHEMA_VERSION` by the registered steps (default: `MIGRATIONS`).

    Each step gets its own deep copy, so a step that mutates its argument
    cannot change the caller's data (or what an earlier step returned).
    """
    steps = MIGRATIONS if migrations is None else migrations
    version = data["schema_version"]
    while version != SCHEMA_VERSION:
        step = steps.get(version)
        if step is None:
            raise _unreadable(version)
        data = step(copy.deepcopy(data))
        produced = data.get("schema_version")
        if not isinstance(produced, str) or _version(produced) <= _version(version):
            raise RuntimeError(f"the migration from {version} produced version {produced!r}")
        version = produced
    subs = data.get("sub_runs")
    if isinstance(subs, list) and subs:  # each sub-run's state, in turn
        data = {**data, "sub_runs": [_migrated_sub(sub, steps) for sub in subs]}
    return data


def _migrated_sub(sub: Any, steps: dict[str, Migration]) -> Any:
    state = sub.get("state") if isinstance(sub, dict) else None
    if not isinstance(state, dict):
        return sub  # validation says what is wrong with it
    version = state.get("schema_version")
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        return sub
    return {**sub, "state": migrate(state, migrations=steps)}


def _validated(content: dict[str, Any]) -> RunState:
    """Strict validation (no coercion): `"3"` is not a turn, `"yes"` is not a boolean."""
    try:
        return RunState.model_validate_json(json.dumps(content, allow_nan=False), strict=True)
    except ValidationError as err:
        raise _schema_error(err.errors()[0]) from None
    except ValueError as err:  # NaN or an infinity in the state being written
        raise SnapshotError(None, f"state is not JSON: {err}") from None


def _schema_error(error: Any) -> SnapshotError:
    if error["type"] == "run_state":  # RunState's own checks: they name the path
        return SnapshotError(error["ctx"]["path"], error["ctx"]["problem"])
    loc = error["loc"]
    # In a discriminated union pydantic puts the item's `type` tag after the index.
    if len(loc) > 2 and loc[0] == "items":
        loc = loc[:2] + loc[3:]
    path = "$" + "".join(
        f"[{p}]" if isinstance(p, int) else f".{p}" if _IDENTIFIER.fullmatch(p) else f"[{p!r}]"
        for p in loc
    )
    ctx = error.get("ctx", {})
    setting = execution_field_problem(tuple(loc)) if error["type"] == "extra_forbidden" else None
    problem = setting or {
        "union_tag_invalid": f"unknown item type {ctx.get('tag')!r} "
        f"(expected {ctx.get('expected_tags')})",
        "union_tag_not_found": "item has no type",
        "extra_forbidden": f"unknown field (not in schema {SCHEMA_VERSION})",
        "missing": "required field is missing",
    }.get(error["type"], error["msg"])
    return SnapshotError(path, problem)


def _check_key(key: bytes | None) -> None:
    if key is not None and (not isinstance(key, bytes) or not key):
        raise ValueError("a signing key must be non-empty bytes")


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


# --- forking ------------------------------------------------------------------------


def fork(state: RunState, *, at_turn: int, new_input: str | None = None) -> RunState:
    """The state of `state`'s run as it was at the end of turn `at_turn`, ready to run again.

    Keeps the items up to (not including) the model reply of turn `at_turn + 1`:
    turn N's decisions and tool results stay, its calls still undecided there
    are pending again. `new_input`, if given, is the next user message. The fork
    records its source in `origin` (`loop.resume` keeps it) and keeps the
    source's `run_id` until resumed. Signals held or refused after the cut, and
    queued messages, go with the cut turns. Status is running, error cleared.
    If turn N's reply was the final answer, its final output is kept and the
    resumed run completes at once; with `new_input` the model is asked again.
    A fork before a handoff the run made later is refused, unless the run had the
    agent it has now at that turn: the state holds only that agent's definition.

    Usage restarts at zero: usage is a run total, with no per-turn record, so
    the source's spend up to the cut cannot be derived; copying the totals
    would count cut turns and double-count when source and fork are summed.
    The fork's usage is what the fork itself spends; the source's is on the
    run named by `origin.run_id`.
    """
    if not 0 <= at_turn <= state.turn:
        raise SnapshotError(
            None,
            f"cannot fork run {state.run_id} at turn {at_turn}: it has turns 0 to {state.turn}",
        )
    cut = next(
        (
            i
            for i, item in enumerate(state.items)
            if isinstance(item, AssistantMessage) and item.turn > at_turn
        ),
        len(state.items),
    )
    moved = [i for i in state.items[cut:] if isinstance(i, Handoff)]
    if moved and moved[0].from_agent != state.agent.name:
        # the agent it had then is not in the state: only the one it has now is
        last = moved[-1]
        raise SnapshotError(
            None,
            f"cannot fork run {state.run_id} at turn {at_turn}: it handed over from "
            f"{last.from_agent} to {last.to_agent} at turn {last.turn}, and a snapshot "
            f"holds only the agent it has now ({state.agent.name}); fork at turn "
            f"{last.turn} or later",
        )
    items = [item.model_copy(deep=True) for item in state.items[:cut]]
    reply = next((i for i in reversed(items) if isinstance(i, AssistantMessage)), None)
    final = reply is not None and not reply.tool_calls
    if new_input is not None:
        _check_can_continue(items, reply, at_turn)
        items.append(UserMessage(content=new_input))
    forked = state.model_copy(deep=True)
    forked.items = items
    forked.turn = at_turn
    forked.status = RunStatus.RUNNING
    ended = reply is not None and final and new_input is None
    forked.final_output = (reply.content or "") if reply is not None and ended else None
    forked.error = None
    forked.usage = Usage()
    forked.origin = RunOrigin(run_id=state.run_id, turn=at_turn, mode="fork")
    forked.paused = None  # a fork is a new run from an earlier turn: not the source's pause
    forked.sub_runs = []  # its children were of the source's later calls
    started = {c.call_id for i in items if isinstance(i, AssistantMessage) for c in i.tool_calls}
    forked.background_runs = [b for b in forked.background_runs if b.call_id in started]
    if forked.context_overflow != at_turn + 1:  # a refusal of a later call of the source
        forked.context_overflow = None
    if cut < len(state.items):
        # Signals and messages the source received after the cut belong to its later turns.
        after = state.items[cut].at  # type: ignore[union-attr]  # the first reply cut
        forked.held_decisions = [d for d in forked.held_decisions if d.at < after]
        forked.refused_decisions = [d for d in forked.refused_decisions if d.at < after]
        forked.refused_signals = [s for s in forked.refused_signals if s.at < after]
        forked.queued_messages = []
        for run in forked.background_runs:  # ended after the cut: running at the fork's turn
            if run.finished_at is not None and run.finished_at >= after:
                run.status, run.finished_at = RunStatus.RUNNING, None
    return forked


def _check_can_continue(items: list[Any], reply: AssistantMessage | None, at_turn: int) -> None:
    """Refuse a new user message where the loop could not take it: between a
    tool call and its result (the model API requires every call answered first)."""
    if reply is None:
        return
    answered = {i.call_id for i in items if isinstance(i, ToolResult)}
    open_calls = [c.call_id for c in reply.tool_calls if c.call_id not in answered]
    if open_calls:
        raise SnapshotError(
            None,
            f"cannot add input at turn {at_turn}: tool calls {', '.join(open_calls)} of that turn "
            "have no result yet; resume and decide them, or fork at an earlier turn",
        )


# --- schema -------------------------------------------------------------------------


_INTEGRITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Digest of the canonical JSON (RFC 8785) of every other top-level field.",
    "properties": {
        "algorithm": {"enum": [SHA256, HMAC_SHA256]},
        "digest": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        "signature": {
            "type": "object",
            "description": "Ed25519 over the same canonical JSON (with a sha256 digest): a "
            "worker that holds the public key trusts the decisions the snapshot carries.",
            "properties": {
                "key_id": {"type": "string"},
                "sig": {"type": "string", "pattern": "^[A-Za-z0-9_-]{86}$"},
            },
            "required": ["key_id", "sig"],
            "additionalProperties": False,
        },
    },
    "required": ["algorithm", "digest"],
    "additionalProperties": False,
}


def json_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a snapshot file of `SCHEMA_VERSION`."""
    generated = RunState.model_json_schema(mode="validation")
    defs = generated.pop("$defs", {})
    if "$ref" in generated:  # RunState is recursive (`sub_runs`): the document is one
        schema = {**copy.deepcopy(defs["RunState"]), "$defs": defs}  # with an integrity block
    else:
        schema = {**generated, "$defs": defs}
    schema["properties"]["integrity"] = _INTEGRITY_SCHEMA
    schema["required"] = [*schema["required"], "integrity"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": f"urn:durable-agents:runstate:{SCHEMA_VERSION}",
        **schema,
        "title": f"RunState snapshot {SCHEMA_VERSION}",
    }
