"""Record keys: unique within each claim over a quick-tier verify run, the same at every seed."""

import json
from collections import Counter
from pathlib import Path

import pytest

from lab.core import registry
from lab.docs.results import Results, ResultsError, record_by_key

COMMITTED = Path(__file__).parents[2] / "results" / "verify.json"
CHEAP = ("A1", "B7", "B12", "C1", "C3")  # claims whose quick-tier checks run in seconds


def _duplicates(records) -> list[tuple[str, str]]:
    counts = Counter((r["claim"], r["key"]) for r in records)
    return [pair for pair, n in counts.items() if n > 1]


def test_committed_verify_run_has_a_unique_key_per_record_of_each_claim():
    records = json.loads(COMMITTED.read_text(encoding="utf-8"))["records"]
    assert all(r.get("key") and r.get("rule") for r in records)
    assert _duplicates(records) == []


@pytest.mark.parametrize("claim", CHEAP)
def test_a_checks_keys_are_unique_and_do_not_depend_on_the_seed(claim):
    def keys(seed: int) -> list[str]:
        return [r.key for check in registry.checks([claim]) for r in check.run(seed, "quick")]

    first = keys(0)
    assert len(first) == len(set(first)) and first == keys(1)


def test_record_by_key_finds_a_record_or_names_the_claim_and_the_key():
    results = Results(verify={"records": [{"claim": "B2", "key": "attained", "measured": 0.125}]})
    assert record_by_key(results, "B2", "attained")["measured"] == 0.125
    with pytest.raises(ResultsError, match=r"^verify results: no record of claim B2 with key 'reached'$"):
        record_by_key(results, "B2", "reached")
    twice = Results(verify={"records": [{"claim": "B2", "key": "attained"}] * 2})
    with pytest.raises(ResultsError, match="2 records of claim B2 with key 'attained'"):
        record_by_key(twice, "B2", "attained")
