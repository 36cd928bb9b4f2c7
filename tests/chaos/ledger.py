"""A durable ledger of tool side effects shared by worker processes (SQLite, WAL):
what a side-effecting tool must do to be safe under retries — deduplicate on its
idempotency key against a durable store — and what the chaos tests count."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

ENV = "CHAOS_LEDGER"
"""The environment variable naming the ledger file (set for worker processes)."""

_SCHEMA = """
create table if not exists attempts (key text, tool text, pid integer, at real);
create table if not exists effects (key text primary key, tool text, pid integer, at real);
"""


def connect(path: str | Path | None = None) -> sqlite3.Connection:
    db = sqlite3.connect(str(path or os.environ[ENV]), timeout=30, isolation_level=None)
    db.execute("pragma journal_mode=wal")
    db.executescript(_SCHEMA)
    return db


def attempt(key: str, tool: str) -> None:
    """Record that an attempt of the keyed call started in this process."""
    with contextlib.closing(connect()) as db:
        db.execute(
            "insert into attempts values (?, ?, ?, ?)", (key, tool, os.getpid(), time.time())
        )


def apply(key: str, tool: str) -> bool:
    """Apply the keyed side effect once: False if it was applied already."""
    with contextlib.closing(connect()) as db:
        cursor = db.execute(
            "insert or ignore into effects values (?, ?, ?, ?)",
            (key, tool, os.getpid(), time.time()),
        )
        return cursor.rowcount == 1


def attempts(path: Path, key_prefix: str = "") -> list[tuple[str, str, int, float]]:
    with contextlib.closing(connect(path)) as db:
        return db.execute(
            "select key, tool, pid, at from attempts where key like ? order by at",
            (key_prefix + "%",),
        ).fetchall()


def effects(path: Path, key_prefix: str = "") -> list[tuple[str, str, int, float]]:
    with contextlib.closing(connect(path)) as db:
        return db.execute(
            "select key, tool, pid, at from effects where key like ? order by at",
            (key_prefix + "%",),
        ).fetchall()
