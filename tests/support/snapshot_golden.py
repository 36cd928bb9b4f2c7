"""The golden snapshots of this schema version, one per shape an export writes
(`tests/fixtures/runstate-<version>-<shape>.json`), the states they load as, and
helpers to edit them.

The fixtures are data, not code: edit one by hand (to cover a new field, say), then
rewrite them all with `PYTHONPATH=. .venv/bin/python -m tests.support.snapshot_golden`,
which loads each one with this build and writes it back as `dumps` does (a new field
gets its default, the digest is computed again). Until a release ships the version
(`SCHEMA_RELEASED`), a change to RunState is followed that way; after it, a released
version's fixtures never change (a new version gets new files, written from them).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from durable_agents.workflows.canonical import canonical_json
from durable_agents.workflows.snapshot import dumps, load_data, loads
from durable_agents.workflows.state import SCHEMA_RELEASED, SCHEMA_VERSION, RunState

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEY = b"test-signing-key"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
OBJECT = {"type": "object", "properties": {}}

SHAPES = ("single", "tree", "paused")
"""What an export writes: `single`, one run that ended (every item type, decision record
and optional field of a run); `tree`, the same run as a caller, with the unfinished run
it called as a tool in `sub_runs` and a call pending below it; `paused`, a run an
operator paused while it waited for a decision (written by a real export)."""


def case(make: Callable[[], str | bytes], message: str, id: str) -> Any:
    """A refusal case: `make` builds the file, `message` is the refusal expected."""
    return pytest.param(make, message, id=id)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def fixture_path(shape: str = "tree", version: str = SCHEMA_VERSION) -> Path:
    """Where the golden snapshot of `shape` is committed."""
    if shape not in SHAPES:
        raise ValueError(f"no golden shape {shape!r}: one of {SHAPES}")
    return FIXTURES / f"runstate-{version}-{shape}.json"


def golden_text(shape: str = "tree") -> str:
    return fixture_path(shape).read_text(encoding="utf-8")


def golden_state(shape: str = "tree") -> RunState:
    """What the golden fixture of `shape` loads as (a fresh object: callers edit it)."""
    return loads(golden_text(shape))


def rewritten(text: str) -> str:
    """A fixture's text as this build writes it: validated strictly, digested again."""
    document = {k: v for k, v in json.loads(text).items() if k != "integrity"}
    return dumps(load_data(document))


def main() -> int:
    """Rewrite every fixture of the current version as this build writes it."""
    if SCHEMA_RELEASED:
        print(f"schema {SCHEMA_VERSION} is released: its fixtures never change", file=sys.stderr)
        return 1
    for shape in SHAPES:
        path = fixture_path(shape)
        path.write_text(rewritten(path.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {path}")
    return 0


def sign(doc: dict[str, Any], key: bytes | None = None) -> dict[str, Any]:
    """`doc` with an integrity block computed independently of `dumps`."""
    content = {k: v for k, v in doc.items() if k != "integrity"}
    body = canonical_json(content)
    if key is None:
        return {
            **content,
            "integrity": {"algorithm": "sha256", "digest": hashlib.sha256(body).hexdigest()},
        }
    digest = hmac.new(key, body, "sha256").hexdigest()
    return {**content, "integrity": {"algorithm": "hmac-sha256", "digest": digest}}


def edited(edit: Callable[[dict[str, Any]], None], *, resign: bool = True) -> str:
    """The newest golden snapshot after `edit`, re-digested (as anyone can) unless `resign`
    is False."""
    doc = json.loads(golden_text())
    edit(doc)
    return json.dumps(sign(doc) if resign else doc, ensure_ascii=False)


def set_at(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting the value at a dotted path (numbers index lists)."""

    def edit(doc: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for part in parents:
            doc = doc[part]
        doc[last] = value

    return edit


def drop_at(path: str) -> Callable[[dict[str, Any]], None]:
    """An edit deleting the value at a dotted path."""

    def edit(doc: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for part in parents:
            doc = doc[part]
        del doc[last]

    return edit


def move_item(source: int, target: int) -> Callable[[dict[str, Any]], None]:
    """An edit moving items[source] to items[target]."""

    def edit(doc: dict[str, Any]) -> None:
        doc["items"].insert(target, doc["items"].pop(source))

    return edit


def insert_item(index: int, item: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """An edit inserting `item` at items[index]."""

    def edit(doc: dict[str, Any]) -> None:
        doc["items"].insert(index, item)

    return edit


def nulled(value: Any) -> Any:
    """`value` with every empty list written as null, as the `temporal` CLI prints a
    query answer and Go writes a nil slice."""
    if isinstance(value, dict):
        return {key: nulled(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [nulled(inner) for inner in value] if value else None
    return value


if __name__ == "__main__":
    sys.exit(main())
