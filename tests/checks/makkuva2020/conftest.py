"""The seed-0 quick-tier records of the D1–D6 checks, each check run once per session."""

import json

import pytest

from lab.core import registry


@pytest.fixture(scope="session")
def makkuva_records():
    """`records(claim)`: the records of `claim`, from its registered check (run on first use)."""
    found: dict[str, list] = {}

    def records(claim: str) -> list:
        if claim not in found:
            for check in registry.checks([claim]):
                for record in check.run(0, "quick"):
                    json.dumps(record.to_json(), allow_nan=False)
                    found.setdefault(record.claim, []).append(record)
        return found[claim]

    return records
