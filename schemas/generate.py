"""Write the JSON Schema of the current snapshot version: `python -m schemas.generate [--check]`.

`schemas/runstate-<SCHEMA_VERSION>.schema.json` is the published schema of a
released version and never changes in substance: if the model no longer
produces it, the model changed without a version bump and this refuses to
overwrite it. Only documentation (titles and descriptions) may be refreshed.
`--check` writes nothing and fails unless the committed file is up to date.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from workflows.snapshot import json_schema
from workflows.state import SCHEMA_VERSION

SCHEMA_DIR = Path(__file__).resolve().parent
DRIFT = "RunState changed without a schema version bump: bump SCHEMA_VERSION and add a migration"


def schema_path(version: str = SCHEMA_VERSION) -> Path:
    """Where the schema of a released version is committed."""
    return SCHEMA_DIR / f"runstate-{version}.schema.json"


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


def main(argv: list[str] | None = None, *, path: Path | None = None) -> int:
    """Write (or with --check, verify) the schema of SCHEMA_VERSION at `path`; 0 on success."""
    parser = argparse.ArgumentParser(prog="python -m schemas.generate", description=__doc__)
    parser.add_argument("--check", action="store_true", help="verify only, write nothing")
    args = parser.parse_args(argv)
    path = path or schema_path()
    schema = json_schema()
    text = render(schema)
    if path.exists():
        committed = json.loads(path.read_text(encoding="utf-8"))
        if substance(committed) != substance(schema):
            print(f"{path.name}: {DRIFT}", file=sys.stderr)
            return 1
        if path.read_text(encoding="utf-8") == text:
            print(f"{path.name} is up to date")
            return 0
    if args.check:
        print(f"{path.name} is missing or stale: run python -m schemas.generate", file=sys.stderr)
        return 1
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
