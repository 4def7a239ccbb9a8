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

What `sweep status` reads is an index beside the rows, kept by SQLite itself on every write: per
row its task, code, status and a 48-hex-digit record (the key's first 128 bits, then the seconds
in nanoseconds), ordered so that one task's rows of one code and status are one range of it, read
by `group_concat` a few large strings at a time instead of one Python object per row. Rows
written one at a time scatter that index over the file, so a new store has 64 KB pages: reading
it when the file is not in the OS page cache costs 16 times fewer random reads than with SQLite's
4 KB pages (10⁶ rows: about 1.5 s instead of 4 s on a shared test machine).

Stores of an older layout (schema 1 or 2: keys were the SHA-256 of the whole configuration's
JSON, no status index) are upgraded in place, in one transaction, by the first command that opens
them for writing (`sweep run`): every key is recomputed from the row's stored task and
configuration, the index is built, and no result is lost or recomputed (10⁶ rows: about a minute,
once). Read-only commands never write: they read such a store through a rekeyed copy in SQLite's
temporary storage, built at every open (correct, but 10⁶ rows take about 35 s) until a run
upgrades it.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from lab.core.errors import InputError
from lab.core.keys import task_key

SCHEMA_VERSION = 3
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
_PAGE_SIZE = 1 << 16  # see the module docstring
_CHECKPOINT_PAGES = (4 << 20) // _PAGE_SIZE  # WAL checkpoint every 4 MB, as SQLite's default with 4 KB pages
_RANGES = [*"0123456789abcdef", "g"]  # status records by their first hex digit: one query each
_STATUS_RECORD = (  # the key's first 32 hex digits, then the seconds in nanoseconds as 16
    "status_record TEXT GENERATED ALWAYS AS "
    "(substr(key, 1, 32) || printf('%016x', CAST(round(seconds * 1e9) AS INTEGER))) VIRTUAL"
)

_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS {schema}.tasks (
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
    {status_record},
    CHECK ((status = 'done' AND result IS NOT NULL AND json_valid(result) AND error IS NULL)
        OR (status = 'failed' AND result IS NULL AND error IS NOT NULL))
)""",
    "CREATE INDEX IF NOT EXISTS {schema}.tasks_status ON tasks (task, code, status, status_record)",
)


@dataclass(frozen=True)
class TaskTable:
    """One task's rows as columns: 128-bit key prefixes ((n, 2) uint64), failed and stale flags, nanoseconds.

    `failed_keys` are the full keys of the failed rows that are not stale.
    """

    prefix: np.ndarray
    failed: np.ndarray
    stale: np.ndarray
    nanoseconds: np.ndarray
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
            version = _check_ours(db, self.path) if exists else SCHEMA_VERSION
            db.create_function("task_key", 2, _stored_key, deterministic=True)
            if self.readonly and version < SCHEMA_VERSION:
                _rekeyed_copy(db)
            elif not self.readonly:
                db.execute(f"PRAGMA page_size={_PAGE_SIZE}")  # takes effect when the file is new
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=FULL")
                db.execute(f"PRAGMA wal_autocheckpoint={_CHECKPOINT_PAGES}")
                with _Commit(db):
                    if version < SCHEMA_VERSION:
                        _upgrade(db)
                    _create(db, "main")
                    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                    db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        except BaseException:
            db.close()
            raise
        return db

    def _transaction(self) -> _Commit:
        return _Commit(self._db)

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
            for key, status, row_code in self._select("key, status, code", list(keys))
        }

    def task_table(self, task: str, code: str | None) -> TaskTable:
        """Every row of one task as arrays (key prefix, failed, stale, nanoseconds) for `sweep status`.

        Read from the status index in one snapshot, one code and status at a time (the codes found
        by seeking through the index), 16 queries of `group_concat` each: 24 bytes per row and no
        object per row. A row is stale when `code` is given and differs from the row's.
        """
        parts, failed, stale, failed_keys = [np.empty((0, 3), np.uint64)], [], [], []
        try:
            with _Commit(self._db, "DEFERRED"):
                for row_code in self._codes(task):
                    is_stale = code is not None and row_code != code
                    for status in ("done", "failed"):
                        for records in self._records(task, row_code, status):
                            parts.append(records)
                            stale.append(np.full(len(records), is_stale))
                            failed.append(np.full(len(records), status == "failed" and not is_stale))
                    if not is_stale:
                        failed_keys += [key for (key,) in self._db.execute(_FAILED_KEYS, (task, row_code))]
        except sqlite3.DatabaseError as exc:
            raise InputError(f"store {self.path}: {_damaged(exc)}") from None
        records = np.concatenate(parts)
        flags = (np.concatenate([np.empty(0, bool), *column]) for column in (failed, stale))
        return TaskTable(records[:, :2], *flags, records[:, 2], failed_keys)

    def _codes(self, task: str) -> list[str]:
        """The distinct codes of one task's rows, in order, each found by one seek in the status index."""
        codes: list[str] = []
        row = self._db.execute(_CODE_AFTER.format(">="), (task, "")).fetchone()
        while row is not None:
            codes.append(row[0])
            row = self._db.execute(_CODE_AFTER.format(">"), (task, row[0])).fetchone()
        return codes

    def _records(self, task: str, code: str, status: str) -> Iterator[np.ndarray]:
        """One task's rows of one code and status, in chunks of (n, 3) uint64: key prefix (2), nanoseconds."""
        for low, high in itertools.pairwise(_RANGES):
            (text,) = self._db.execute(_RECORDS, (task, code, status, low, high)).fetchone()
            if text:
                yield np.frombuffer(bytes.fromhex(text), dtype=">u8").astype(np.uint64).reshape(-1, 3)

    def rows(self, keys: Iterable[str]) -> list[StoredTask]:
        """The stored rows for `keys`, in the order of `keys` (keys without a row are skipped)."""
        order = {key: i for i, key in enumerate(keys)}
        columns = ", ".join((*_COLUMNS, "code"))
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
    """A transaction begun with BEGIN IMMEDIATE (to write) or DEFERRED (one snapshot to read), then COMMIT.

    ROLLBACK on error.
    """

    def __init__(self, db: sqlite3.Connection, kind: str = "IMMEDIATE") -> None:
        self._db = db
        db.execute(f"BEGIN {kind}")

    def __enter__(self) -> sqlite3.Connection:
        return self._db

    def __exit__(self, exc_type: type | None, *rest: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


_EMPTIED = "the file is empty (emptied or truncated); it is left untouched: move it aside to start afresh"


_CODE_AFTER = "SELECT code FROM tasks WHERE task = ? AND code {} ? ORDER BY code LIMIT 1"
_RECORDS = (
    "SELECT group_concat(status_record, '') FROM tasks "
    "WHERE task = ? AND code = ? AND status = ? AND status_record >= ? AND status_record < ?"
)
_FAILED_KEYS = "SELECT key FROM tasks WHERE task = ? AND code = ? AND status = 'failed'"


def _create(db: sqlite3.Connection, schema: str) -> None:
    """The tasks table and its status index in `schema` ('main', or 'temp' for a rekeyed copy)."""
    for statement in _SCHEMA:
        db.execute(statement.format(schema=schema, status_record=_STATUS_RECORD))


def _stored_key(task: str, params: str) -> str:
    """SQL function task_key(task, params): a stored row's key, recomputed from its configuration."""
    return task_key(task, json.loads(params))


def _upgrade(db: sqlite3.Connection) -> None:
    """Bring a store of schema 1 or 2 to this layout in place: code column, this lab's keys, status record."""
    if "code" not in _columns(db):
        db.execute("ALTER TABLE tasks ADD COLUMN code TEXT NOT NULL DEFAULT ''")
    db.execute("UPDATE tasks SET key = task_key(task, params)")
    db.execute(f"ALTER TABLE tasks ADD COLUMN {_STATUS_RECORD}")


def _rekeyed_copy(db: sqlite3.Connection) -> None:
    """Read a store of schema 1 or 2 without writing it: a copy in temporary storage that shadows `tasks`."""
    _create(db, "temp")
    code = "code" if "code" in _columns(db) else "''"
    db.execute(
        f"INSERT INTO temp.tasks ({', '.join(_COLUMNS)}, code) "
        f"SELECT task_key(task, params), {', '.join(_COLUMNS[1:])}, {code} FROM main.tasks "
        "ORDER BY 1"  # in key order, the copy's indexes grow at their ends
    )


def _columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA main.table_info(tasks)")}


def _damaged(exc: sqlite3.DatabaseError) -> str:
    return (
        f"damaged or not a SQLite file ({exc}); it is left untouched: restore it from a copy, "
        "or move it aside (e.g. to *.corrupt) to start afresh"
    )


def _check_ours(db: sqlite3.Connection, path: Path) -> int:
    """The schema version of the lab's store; InputError for a foreign database or a newer schema."""
    application_id = db.execute("PRAGMA application_id").fetchone()[0]
    version = db.execute("PRAGMA user_version").fetchone()[0]
    ours = application_id == APPLICATION_ID or (
        application_id == 0 and version == 1 and set(_COLUMNS) <= _columns(db)
    )
    if not ours:
        raise InputError(
            f"store {path}: not a moe-lab sweep store (a foreign SQLite database); it is left untouched: "
            "give another --store path"
        )
    if version > SCHEMA_VERSION:
        raise InputError(f"store {path}: schema version {version} is newer than this lab's {SCHEMA_VERSION}")
    return version


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
