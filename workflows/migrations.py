"""Forward migrations of RunState snapshots: pure, step-by-step functions on plain dicts.

`MIGRATIONS` maps a released schema version to the step that turns a snapshot
of that version into one of the next version; `workflows.snapshot.loads`
applies the steps one by one until the data is at `SCHEMA_VERSION`, then
validates it. Nothing is released yet (2.0 is the one version), so the chain is
empty: a migration is owed only between two releases (DESIGN.md, RunState).

Releasing a new version: bump `SCHEMA_VERSION` (and the `schema_version`
literal) in `workflows/state.py`, register `MIGRATIONS["<old>"] = _<old>_to_<new>`
here, and commit the new schema (`python -m schemas.generate`) and golden fixtures
(`python -m tests.support.snapshot_golden`), keeping the old version's fixtures: the
tests then load every released version. A running workflow carries its RunState
through continue-as-new without `loads`: RunState must also read the older minor
as it is (minors only add optional fields, which `schemas.generate` checks). Never
edit, renumber or remove a released step: snapshots in users' stores depend on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Migration = Callable[[dict[str, Any]], dict[str, Any]]
"""One step: a snapshot dict of version V in, a new dict of the next version out.

It must set `schema_version` to the version it produces (strictly newer than
V). It gets a deep copy of the data (see `workflows.snapshot.migrate`), so a
step that edits its argument in place harms nothing, but should not rely on
that: return a new dict. It never sees `integrity`: the digest is checked
before migrating, over the content as it was written.
"""

MIGRATIONS: dict[str, Migration] = {}
"""Released version -> the step from it to the next version (none released yet)."""
