"""Atomic writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lab.core.errors import InputError


@contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success it replaces `path` (fsync'd, mode 0644)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; a report is meant to be read
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextmanager
def quiet_stdout() -> Iterator[None]:
    """File descriptor 1 sent to /dev/null meanwhile: a compiled library's own prints (HiGHS writes a
    debug line per MIP solve) do not reach the one-line output of a command."""
    import sys

    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def write_text_atomic(path: str | os.PathLike[str], text: str | bytes) -> Path:
    """Atomically replace `path` with `text`."""
    with atomic_path(path) as tmp:
        if isinstance(text, bytes):
            tmp.write_bytes(text)
        else:
            tmp.write_text(text)
    return Path(path)


def write_json_atomic(path: str | os.PathLike[str], payload: Any) -> Path:
    """Atomically replace `path` with `payload` as indented JSON (NaN and infinities refused)."""
    return write_text_atomic(path, json.dumps(payload, indent=2, allow_nan=False) + "\n")


def _probe(folder: Path, shown: Path, what: str) -> None:
    """InputError unless the nearest existing folder on the way to `folder` accepts a new file."""
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(f"{what}: cannot write {str(shown)!r}: {str(folder)!r} is not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise InputError(f"{what}: cannot write {str(shown)!r}: {exc.strerror or exc}") from None


def check_writable(path: str | os.PathLike[str], what: str) -> Path:
    """Fail before any compute when the file `path` cannot be written (InputError naming `what`).

    The nearest existing folder on the way must accept a new file (probed with a temporary file
    that is removed at once), and `path` itself must not be a folder.
    """
    target = Path(path)
    if target.is_dir():
        raise InputError(f"{what}: {str(target)!r} is a folder, not a file")
    _probe(target.parent, target, what)
    return target


def check_writable_folder(path: str | os.PathLike[str], what: str) -> Path:
    """Fail before any compute when files cannot be written into the folder `path`."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{what}: {str(folder)!r} is a file, not a folder")
    _probe(folder, folder, what)
    return folder
