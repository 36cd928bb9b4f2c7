"""Forward migrations of RunState snapshots: pure, step-by-step functions on plain dicts.

`MIGRATIONS` maps a released schema version to the step that turns a snapshot
of that version into one of the next version; `workflows.snapshot.loads`
applies the steps one by one until the data is at `SCHEMA_VERSION`, then
validates it. Only 1.0 has been released, so the table is empty.

Releasing a new version: bump `SCHEMA_VERSION` in `workflows/state.py`,
register `MIGRATIONS["<old>"] = _<old>_to_<new>` here, commit the new schema
(`python -m schemas.generate`) and a golden fixture written by the new code.
Never edit, renumber or remove a released step: snapshots in users' stores
depend on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""One step: a snapshot dict of version V in, a new dict of the next version out.

A step must not mutate its argument, must set `schema_version` to the version
it produces (strictly newer than V). It never sees `integrity`: the digest is
checked before migrating, over the content as it was written.
"""

MIGRATIONS: dict[str, Migration] = {}
"""Released version -> the step from it to the next version."""
