"""Result store of sweeps: one SQLite file in WAL mode, one row per finished task, keyed by the task key.

Each finished task is committed as one row in one transaction as soon as its result reaches the
client, so an interrupted sweep loses at most the tasks still running; a row is complete or
absent, never partial (the table's CHECK constraint ties `status` to the presence of `result`
or `error`). A done row is final: a later write for the same key never replaces it. A failed row
keeps the error text and is replaced only when the task is retried. Several sweeps may share a
store: a key names a task's full configuration, so overlapping grids reuse each other's results.

Each row also records `code`, the fingerprint of the science code that computed it
(`lab.core.provenance.code_fingerprint`): a row from other code is stale, reported as such, and
recomputed unless the caller keeps stale rows on purpose. The file is marked as the lab's by
SQLite's application_id; a foreign, damaged or emptied file is refused and left untouched, and
read-only commands open the store read-only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from lab.core.errors import InputError

SCHEMA_VERSION = 2
APPLICATION_ID = 0x6D6F656C  # "moel"
_COLUMNS = (
    "key",
    "task",
    "params",
    "lab_version",
    "status",
    "result",
    "error",
    "seconds",
    "worker",
    "finished",
)
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
    code TEXT NOT NULL DEFAULT '',
    CHECK ((status = 'done' AND result IS NOT NULL AND json_valid(result) AND error IS NULL)
        OR (status = 'failed' AND result IS NULL AND error IS NOT NULL))
);
"""


@dataclass(frozen=True)
class TaskTable:
    """One task's rows as columns: 128-bit key prefixes ((n, 2) uint64), failed and stale flags, seconds.

    `failed_keys` are the full keys of the failed rows, in table order.
    """

    prefix: np.ndarray
    failed: np.ndarray
    stale: np.ndarray
    seconds: np.ndarray
    failed_keys: list[str]


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
    code: str


class SweepStore:
    """The SQLite store at `path`: created with its folder if missing, unless `readonly`.

    Refused with an InputError naming the file (and left untouched): a file that is not the lab's
    store, a damaged or emptied one, one of a newer schema, and a missing one when `readonly`.
    """

    def __init__(self, path: str | Path, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        exists = self.path.exists()
        if exists and self.path.is_dir():
            raise InputError(f"store {self.path}: is a folder, not a SQLite file")
        if exists and self.path.stat().st_size == 0:
            raise InputError(f"store {self.path}: {_EMPTIED}")
        if readonly and not exists:
            raise InputError(f"store {self.path}: no such file (run the sweep first)")
        if not readonly:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = self._connect(exists)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"store {self.path}: {_damaged(exc)}") from None

    def _connect(self, exists: bool) -> sqlite3.Connection:
        if self.readonly:
            db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        else:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        try:
            self._columns = _check_ours(db, self.path) if exists else set()
            if not self.readonly:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
                with _Commit(db, begin=True):
                    db.execute(_SCHEMA)
                    if "code" not in self._columns and self._columns:
                        db.execute("ALTER TABLE tasks ADD COLUMN code TEXT NOT NULL DEFAULT ''")
                    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                    db.execute(f"PRAGMA application_id={APPLICATION_ID}")
                self._columns = {*_COLUMNS, "code"}
        except BaseException:
            db.close()
            raise
        return db

    def _transaction(self) -> _Commit:
        return _Commit(self._db, begin=True)

    def put(
        self,
        key: str,
        task: str,
        params: dict[str, Any],
        lab_version: str,
        outcome: dict[str, Any],
        code: str = "",
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
            code,
        )
        with self._transaction():
            self._db.execute(
                f"INSERT INTO tasks ({', '.join(_COLUMNS)}, code) VALUES ({', '.join('?' * 11)}) "
                "ON CONFLICT(key) DO UPDATE SET task=excluded.task, params=excluded.params, "
                "lab_version=excluded.lab_version, status=excluded.status, result=excluded.result, "
                "error=excluded.error, seconds=excluded.seconds, worker=excluded.worker, "
                "finished=excluded.finished, code=excluded.code "
                "WHERE tasks.status != 'done' OR tasks.code != excluded.code",
                row,
            )

    def statuses(self, keys: Iterable[str], code: str | None = None) -> dict[str, str]:
        """Status of each key that has a row ('done', 'failed', or 'stale' when its code is not `code`)."""
        return {
            key: "stale" if code is not None and row_code != code else status
            for key, status, row_code in self._select("key, status, " + self._code, list(keys))
        }

    def task_table(self, task: str, code: str | None) -> TaskTable:
        """Every row of one task as arrays (key prefix, failed, stale, seconds): what `sweep status` counts.

        Rows are fetched in chunks and kept as NumPy arrays, so 10⁶ rows cost about 50 MB; a row
        is stale when `code` is given and differs from the row's. One pass over the table.
        """
        query = (
            f"SELECT substr(key, 1, 32), CASE WHEN status = 'failed' THEN key END, {self._code} != ?, "
            "seconds "
            "FROM tasks WHERE task = ?"
        )
        parts, failed_keys = [], []
        try:
            cursor = self._db.execute(query, ("" if code is None else code, task))
            while chunk := cursor.fetchmany(1 << 16):
                keys, failed, stale, seconds = zip(*chunk, strict=True)
                prefix = np.frombuffer(bytes.fromhex("".join(keys)), dtype=">u8").astype(np.uint64)
                flags = np.array([key is not None for key in failed])
                parts.append((prefix.reshape(-1, 2), flags, np.array(stale, bool), np.array(seconds)))
                failed_keys += [key for key in failed if key is not None]
        except sqlite3.DatabaseError as exc:
            raise InputError(f"store {self.path}: {_damaged(exc)}") from None
        if not parts:
            parts = [(np.empty((0, 2), np.uint64), np.empty(0, bool), np.empty(0, bool), np.empty(0))]
        prefix, failed, stale, seconds = (np.concatenate(column) for column in zip(*parts, strict=True))
        return TaskTable(prefix, failed, stale & (code is not None), seconds, failed_keys)

    @property
    def _code(self) -> str:
        return "code" if "code" in self._columns else "''"

    def rows(self, keys: Iterable[str]) -> list[StoredTask]:
        """The stored rows for `keys`, in the order of `keys` (keys without a row are skipped)."""
        order = {key: i for i, key in enumerate(keys)}
        columns = ", ".join((*_COLUMNS, self._code))
        found = [_row(values) for values in self._select(columns, list(order))]
        return sorted(found, key=lambda row: order[row.key])

    def _select(self, columns: str, keys: list[str]) -> list[tuple]:
        found = []
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            found += self._execute(f"SELECT {columns} FROM tasks WHERE key IN ({marks})", chunk)
        return found

    def _execute(self, query: str, args: Iterable[Any]) -> list[tuple]:
        try:
            return self._db.execute(query, tuple(args)).fetchall()
        except sqlite3.DatabaseError as exc:
            raise InputError(f"store {self.path}: {_damaged(exc)}") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SweepStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Commit:
    """A transaction begun with BEGIN IMMEDIATE, ended with COMMIT, or ROLLBACK on error."""

    def __init__(self, db: sqlite3.Connection, begin: bool) -> None:
        self._db = db
        if begin:
            db.execute("BEGIN IMMEDIATE")

    def __enter__(self) -> sqlite3.Connection:
        return self._db

    def __exit__(self, exc_type: type | None, *rest: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


_EMPTIED = "the file is empty (emptied or truncated); it is left untouched: move it aside to start afresh"


def prefix_array(raw: bytes) -> np.ndarray:
    """16-byte key prefixes, concatenated, as an (n, 2) array of uint64: the high and low 64 bits."""
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).reshape(-1, 2)


def _damaged(exc: sqlite3.DatabaseError) -> str:
    return (
        f"damaged or not a SQLite file ({exc}); it is left untouched: restore it from a copy, "
        "or move it aside (e.g. to *.corrupt) to start afresh"
    )


def _check_ours(db: sqlite3.Connection, path: Path) -> set[str]:
    """The columns of the lab's `tasks` table; InputError for a foreign database or a newer schema."""
    application_id = db.execute("PRAGMA application_id").fetchone()[0]
    version = db.execute("PRAGMA user_version").fetchone()[0]
    columns = {row[1] for row in db.execute("PRAGMA table_info(tasks)")}
    ours = application_id == APPLICATION_ID or (
        application_id == 0 and version == 1 and set(_COLUMNS) <= columns
    )
    if not ours:
        raise InputError(
            f"store {path}: not a moe-lab sweep store (a foreign SQLite database); it is left untouched: "
            "give another --store path"
        )
    if version > SCHEMA_VERSION:
        raise InputError(f"store {path}: schema version {version} is newer than this lab's {SCHEMA_VERSION}")
    return columns


def _row(values: tuple) -> StoredTask:
    key, task, params, lab_version, status, result, error, seconds, worker, finished, code = values
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
        code=code,
    )
