"""Result store of sweeps: one SQLite file in WAL mode, one row per finished task, keyed by the task key.

Each finished task is committed as one row in one transaction as soon as its result reaches the
client, so an interrupted sweep loses at most the tasks still running; a row is complete or
absent, never partial (the table's CHECK constraint ties `status` to the presence of `result`
or `error`). A done row is final: a later write for the same key never replaces it. A failed row
keeps the error text and is replaced only when the task is retried. Several sweeps may share a
store: a key names a task's full configuration, so overlapping grids reuse each other's results.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
_CHUNK = 500  # keys per SELECT ... IN (...), below SQLite's bound-parameter limit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    key TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    params TEXT NOT NULL,
    lab_version TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    result TEXT,
    error TEXT,
    seconds REAL NOT NULL,
    worker TEXT NOT NULL,
    finished TEXT NOT NULL,
    CHECK ((status = 'done' AND result IS NOT NULL AND json_valid(result) AND error IS NULL)
        OR (status = 'failed' AND result IS NULL AND error IS NOT NULL))
);
"""


@dataclass(frozen=True)
class StoredTask:
    """One row of the store: a finished task's configuration and its result or error."""

    key: str
    task: str
    params: dict[str, Any]
    lab_version: str
    status: str
    result: dict[str, Any] | None
    error: str | None
    seconds: float
    worker: str
    finished: str
    result_text: str | None


class SweepStore:
    """The SQLite store at `path` (created with its folder if missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise ValueError(f"store {self.path}: schema version {version}, expected {SCHEMA_VERSION}")
        with self._transaction():
            self._db.execute(_SCHEMA)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def _transaction(self) -> _Commit:
        self._db.execute("BEGIN IMMEDIATE")
        return _Commit(self._db)

    def put(
        self,
        key: str,
        task: str,
        params: dict[str, Any],
        lab_version: str,
        outcome: dict[str, Any],
    ) -> None:
        """Commit one finished task (outcome of `lab.sweeps.tasks.run_task`) in its own transaction."""
        row = (
            key,
            task,
            json.dumps(params, allow_nan=False),
            lab_version,
            outcome["status"],
            outcome["result"],
            outcome["error"],
            float(outcome["seconds"]),
            outcome["worker"],
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
        with self._transaction():
            self._db.execute(
                "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(key) DO UPDATE SET task=excluded.task, params=excluded.params, "
                "lab_version=excluded.lab_version, status=excluded.status, result=excluded.result, "
                "error=excluded.error, seconds=excluded.seconds, worker=excluded.worker, "
                "finished=excluded.finished WHERE tasks.status != 'done'",
                row,
            )

    def statuses(self, keys: Iterable[str]) -> dict[str, str]:
        """Status ('done' or 'failed') of each key that has a row; keys without a row are absent."""
        return dict(self._select("key, status", list(keys)))

    def rows(self, keys: Iterable[str]) -> list[StoredTask]:
        """The stored rows for `keys`, in the order of `keys` (keys without a row are skipped)."""
        order = {key: i for i, key in enumerate(keys)}
        found = [_row(values) for values in self._select("*", list(order))]
        return sorted(found, key=lambda row: order[row.key])

    def _select(self, columns: str, keys: list[str]) -> list[tuple]:
        found = []
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            found += self._db.execute(f"SELECT {columns} FROM tasks WHERE key IN ({marks})", chunk).fetchall()
        return found

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SweepStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Commit:
    """Context manager ending a transaction begun with BEGIN IMMEDIATE: COMMIT, or ROLLBACK on error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        return self._db

    def __exit__(self, exc_type: type | None, *rest: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _row(values: tuple) -> StoredTask:
    key, task, params, lab_version, status, result, error, seconds, worker, finished = values
    return StoredTask(
        key=key,
        task=task,
        params=json.loads(params),
        lab_version=lab_version,
        status=status,
        result=json.loads(result) if result is not None else None,
        error=error,
        seconds=seconds,
        worker=worker,
        finished=finished,
        result_text=result,
    )
