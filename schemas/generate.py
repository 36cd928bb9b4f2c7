"""Write the JSON Schema of the current snapshot version and of the contract's payloads:
`python -m schemas.generate [--check]`.

`schemas/runstate-<version>.schema.json` is the published schema of a version.
Until a release ships the current version (`SCHEMA_RELEASED`), it follows the model
and is rewritten with it. A released version's schema never changes in substance: if
the model no longer produces it, the model changed without a version bump and this
refuses to overwrite it; only documentation (titles and descriptions) may be
refreshed. `--check` writes nothing and fails unless the committed files are up to
date and every released version (`released_versions`) has its schema committed, each
minor version only adding optional fields to the previous minor of its major.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from durable_agents.workflows import state
from durable_agents.workflows.migrations import MIGRATIONS
from durable_agents.workflows.payload_schemas import PAYLOADS, payload_schema
from durable_agents.workflows.snapshot import json_schema
from durable_agents.workflows.state import SCHEMA_VERSION

SCHEMA_DIR = Path(__file__).resolve().parent
DRIFT = (
    "RunState changed, but this schema version is released: bump SCHEMA_VERSION and add a migration"
)


_VERSIONED = {"$id", "title"}
"""Top-level keywords that name the version: they differ between any two versions."""


def schema_path(version: str = SCHEMA_VERSION) -> Path:
    """Where the schema of a released version is committed."""
    return SCHEMA_DIR / f"runstate-{version}.schema.json"


def released_versions() -> list[str]:
    """Every version with a committed schema, oldest first: each one a migration starts
    from, and the current one (released or not yet)."""
    return sorted({*MIGRATIONS, SCHEMA_VERSION}, key=_version)


def _version(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


def non_additive_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """How `new` (a minor version) does more than add optional fields to `old`, the
    previous minor of the same major: one line per change, with its JSON pointer.

    Allowed: new properties (not required) and new `$defs`, with their defaults in
    the `default` of an enclosing object; values appended to an `enum` (a new
    status) and alternatives to a union (a new item type, in `oneOf`/`anyOf` and the
    discriminator's mapping): every old value still reads; documentation; the
    version itself (`$id`, `title`, the `schema_version` constant). Anything else
    (a removed or changed keyword, a new required field, a new constraint) is not.
    """
    old, new = substance(old), substance(new)
    for schema in (old, new):
        for key in _VERSIONED:
            schema.pop(key, None)
        schema.get("properties", {}).pop("schema_version", None)
        nested = schema.get("$defs", {}).get("RunState", {})  # a sub-run's
        nested.get("properties", {}).pop("schema_version", None)
    return _changes(old, new, "")


def _changes(old: Any, new: Any, pointer: str) -> list[str]:
    widening = pointer.endswith(("/enum", "/oneOf", "/anyOf"))
    if widening and isinstance(old, list) and isinstance(new, list):
        return [] if new[: len(old)] == old else [f"{pointer}: changed"]
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [] if old == new else [f"{pointer or '/'}: changed"]
    found = [f"{pointer}/{k}: removed" for k in old if k not in new]
    for key in old.keys() & new.keys():
        found += _changes(old[key], new[key], f"{pointer}/{key}")
    extendable = (
        pointer.endswith(("/properties", "/discriminator/mapping"))
        or pointer == "/$defs"
        or _in_default(pointer)
    )
    found += [f"{pointer}/{k}: added" for k in new.keys() - old.keys() if not extendable]
    return sorted(found)


def _in_default(pointer: str) -> bool:
    """Inside a `default` value: a new optional field adds its default there too."""
    parts = pointer.split("/")
    return any(p == "default" and parts[i - 1] != "properties" for i, p in enumerate(parts))


def release_problems() -> list[str]:
    """What is wrong with the committed schemas of the released versions (empty: nothing)."""
    problems, committed = [], {}
    for version in released_versions():
        path = schema_path(version)
        if not path.exists():
            problems.append(f"{path.name} is missing: every released version keeps its schema")
            continue
        committed[version] = json.loads(path.read_text(encoding="utf-8"))
    known = {schema_path(version).name for version in released_versions()}
    problems += [
        f"{path.name}: no such version (neither current nor migrated from): remove it"
        for path in sorted(SCHEMA_DIR.glob("runstate-*.schema.json"))
        if path.name not in known
    ]
    versions = list(committed)
    for older, newer in itertools.pairwise(versions):
        if _version(older)[0] != _version(newer)[0]:
            continue  # a new major may break anything
        problems += [
            f"{schema_path(newer).name}: {change} (a minor version only adds optional fields)"
            for change in non_additive_changes(committed[older], committed[newer])
        ]
    return problems


def render(schema: dict[str, Any]) -> str:
    """The committed text of a schema."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def substance(schema: Any) -> Any:
    """`schema` without its documentation (string `title` and `description` keywords).

    A property that is itself named `title` or `description` maps to a schema
    (a dict), so it is kept.
    """
    if isinstance(schema, dict):
        return {
            k: substance(v)
            for k, v in schema.items()
            if not (k in ("title", "description") and isinstance(v, str))
        }
    if isinstance(schema, list):
        return [substance(v) for v in schema]
    return schema


def payload_path(name: str) -> Path:
    """Where the schema of a contract payload (`workflows.payload_schemas`) is committed."""
    return SCHEMA_DIR / "payloads" / f"{name}.schema.json"


def payload_problems(*, write: bool) -> list[str]:
    """Stale or missing payload schemas (written instead, with `write`)."""
    from durable_agents.client.gateway import openapi  # the HTTP gateway's routes

    problems = []
    documents = [(payload_path(name), render(payload_schema(name))) for name in PAYLOADS]
    documents.append((SCHEMA_DIR / "gateway.openapi.json", render(openapi())))
    for path, text in documents:
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        if write:
            path.parent.mkdir(exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
        else:
            problems.append(f"{path.name} is missing or stale: run python -m schemas.generate")
    return problems


def main(argv: list[str] | None = None, *, path: Path | None = None) -> int:
    """Write (or with --check, verify) the schema of SCHEMA_VERSION at `path`, then
    (only for the default path) the contract's payload schemas, and check every
    released version; 0 on success."""
    parser = argparse.ArgumentParser(prog="python -m schemas.generate", description=__doc__)
    parser.add_argument("--check", action="store_true", help="verify only, write nothing")
    args = parser.parse_args(argv)
    status = _write_current(path or schema_path(), check=args.check)
    if status or path is not None:
        return status
    for problem in payload_problems(write=not args.check):
        print(problem, file=sys.stderr)
        status = 1
    problems = release_problems()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems or status else 0


def _write_current(path: Path, *, check: bool) -> int:
    schema = json_schema()
    text = render(schema)
    if path.exists():
        committed = json.loads(path.read_text(encoding="utf-8"))
        if state.SCHEMA_RELEASED and substance(committed) != substance(schema):
            print(f"{path.name}: {DRIFT}", file=sys.stderr)
            return 1
        if path.read_text(encoding="utf-8") == text:
            print(f"{path.name} is up to date")
            return 0
    if check:
        print(f"{path.name} is missing or stale: run python -m schemas.generate", file=sys.stderr)
        return 1
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
