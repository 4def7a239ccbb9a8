"""The file `python -m lab verify --json` writes (`results/verify.json`): its schema, what it holds and
its reader, for the docs and for `verify --compare FILE`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.core.records import RECORD_JSON, Record
from lab.core.schema import INT, OBJECT, TEXT, Each, load

VERIFY_RECORD = {**RECORD_JSON, "key": TEXT}
VERIFY_FILE = {  # --json's schema; files from before the lab recorded its environment lack that field
    "records": Each(VERIFY_RECORD, "record", least=1),
    "seed": INT,
    "tier": TEXT,
    "versions? environment?": OBJECT,
}
WHAT = "the output of `python -m lab verify --json`"


def verify_file(
    records: list[Record], seed: int, tier: str, versions: dict[str, str], environment: dict[str, str]
) -> dict[str, Any]:
    """What `verify --json` writes: the records, the base seed and tier, and the versions and environment
    the checks ran on."""
    return {
        "records": [r.to_json() for r in records],
        "seed": seed,
        "tier": tier,
        "versions": versions,
        "environment": environment,
    }


def read_verify_file(path: str | Path) -> dict[str, Any]:
    """A verify file, with every record's fields checked against the record vocabulary (`VERIFY_FILE`); a
    `ResultsError` naming the file and the field otherwise."""
    return load(Path(path), VERIFY_FILE, WHAT)
