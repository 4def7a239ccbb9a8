"""The test files' order: longest first by the seconds `tests/durations.json` holds (`conftest.py` applies
it; `nox -s tests -- --store-durations` rewrites the file after a passing run)."""

import json
import warnings
from pathlib import Path

from lab.core.io import write_json_atomic

DURATIONS = Path(__file__).with_name("durations.json")


def load(path: Path) -> dict[str, float]:
    """{test file: seconds}; empty if there is no file, and a warning naming a damaged one."""
    try:
        seconds = json.loads(path.read_text())
    except OSError:
        return {}
    except ValueError as exc:
        seconds = exc
    if not isinstance(seconds, dict) or not all(isinstance(s, int | float) for s in seconds.values()):
        warnings.warn(f"{path} is damaged ({seconds}); the test files run in collection order", stacklevel=2)
        return {}
    return seconds


def file_of(nodeid: str) -> str:
    """The test file of a node id, as `durations.json` names it (relative to the root)."""
    return nodeid.split("::")[0]


def longest_first(items: list, seconds: dict[str, float]) -> None:
    """Sort `items` (with `nodeid`) by their file's seconds, longest first, files not in `seconds` last; a
    stable sort, so each file's tests stay together and in their own order."""
    items.sort(key=lambda item: -seconds.get(file_of(item.nodeid), 0.0))


def store(path: Path, measured: dict[str, float]) -> None:
    """Write `measured` over what `path` holds: a run of some files keeps the others' seconds."""
    kept = load(path) | {f: round(s, 1) for f, s in measured.items()}
    write_json_atomic(path, dict(sorted(kept.items())))
