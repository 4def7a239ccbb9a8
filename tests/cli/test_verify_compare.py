"""`verify --compare FILE` end to end: a fresh run of a cheap claim (A1) beside a copy of the committed
records with planted changes; bad files exit 2 in one line before any compute."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.cli.main import EXIT_BAD_INPUT, main
from lab.cli.verify import read_committed
from lab.core import registry

COMMITTED = Path(__file__).resolve().parents[2] / "results" / "verify.json"


def _planted(tmp_path, change, claims=("A1",)):
    """A copy of the committed file, its records of `claims` only, after `change(records by key)`."""
    data = json.loads(COMMITTED.read_text(encoding="utf-8"))
    data["records"] = [r for r in data["records"] if r["claim"] in claims]
    change({r["key"]: r for r in data["records"] if r["claim"] == "A1"}, data)
    path = tmp_path / "committed.json"
    path.write_text(json.dumps(data))
    return path


def _table_row(out, key):
    (row,) = [
        line for line in out.split("## Compared with")[1].splitlines() if line.startswith(f"| A1 | {key} |")
    ]
    return row


def test_planted_changes_are_reported_and_only_a_verdict_or_a_missing_record_fails(tmp_path, capsys):
    planted = {}

    def plant(records, data):
        records["noise-orthonormal"]["measured"] *= 1 + 1e-6  # beyond rounding
        planted["measured"] = records["noise-orthonormal"]["measured"]
        records["noise-one-hot"]["ci"][0] *= 1 + 1e-12  # within rounding
        data["records"].remove(records["roles-one-hot"])  # the fresh run's record is new

    path = _planted(tmp_path, plant, claims=("A1", "B1"))  # B1 is not run: not missing
    fresh = tmp_path / "fresh.json"
    assert main(["verify", "--only", "A1", "--quiet", "--compare", str(path), "--json", str(fresh)]) == 0
    written = json.loads(fresh.read_text())
    assert set(written["environment"]) == {
        "cpu",
        "simd",
        "numba_cpu",
        "blas",
        "blas_threads",
        "numba_threads",
    }
    (measured,) = [r["measured"] for r in written["records"] if r["key"] == "noise-orthonormal"]
    out = capsys.readouterr().out
    assert "3 records of claims not run not compared" in out and "0 missing" in out
    row = _table_row(out, "noise-orthonormal")
    assert f"| differs | measured: {planted['measured']!r} → {measured!r} |" in row
    assert "| equal within rounding | ci[0]: " in _table_row(out, "noise-one-hot")
    assert "floating point, relative 1e-09" in _table_row(out, "noise-one-hot")
    assert "| new |" in _table_row(out, "roles-one-hot")


def test_a_planted_verdict_change_exits_1(tmp_path, capsys):
    def plant(records, data):
        records["control-unscaled-noise"] |= {"verdict": "holds", "outcome": "MISSED"}

    assert main(["verify", "--only", "A1", "--quiet", "--compare", str(_planted(tmp_path, plant))]) == 1
    row = _table_row(capsys.readouterr().out, "control-unscaled-noise")
    assert "| holds → violated | MISSED → detected |" in row


def test_a_record_the_run_no_longer_makes_is_missing_and_exits_1(tmp_path, capsys):
    def plant(records, data):
        data["records"].append(records["roles-one-hot"] | {"key": "roles-retired"})

    assert main(["verify", "--only", "A1", "--quiet", "--compare", str(_planted(tmp_path, plant))]) == 1
    assert "| missing |" in _table_row(capsys.readouterr().out, "roles-retired")


def test_a_file_from_before_the_environment_field_is_one_to_compare_with(tmp_path):
    data = json.loads(COMMITTED.read_text())
    data.pop("environment", None)
    older = tmp_path / "older.json"
    older.write_text(json.dumps(data))
    read = read_committed(str(older), 0, "quick")
    assert "environment" not in read and read["records"]


def _damaged(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: _damaged(tmp, "cut.json", COMMITTED.read_text()[:500]), "not valid JSON"),
        (lambda tmp: _damaged(tmp, "list.json", "[1, 2]"), "not the output of `python -m lab verify --json`"),
        (lambda tmp: _damaged(tmp, "run.json", json.dumps({"runs": [], "config": {}})), "field 'records'"),
        (  # another lab version's records: "passed" where this lab writes a verdict
            lambda tmp: _damaged(
                tmp,
                "old.json",
                json.dumps(
                    {"records": [{"claim": "A1", "key": "k", "passed": True}], "seed": 0, "tier": "quick"}
                ),
            ),
            "record 0: field",
        ),
        (lambda tmp: str(tmp / "absent.json"), "missing"),
        (lambda tmp: str(_planted(tmp, lambda r, d: d.update(seed=3))), "seed 3"),
        (lambda tmp: str(_planted(tmp, lambda r, d: d["records"].append(d["records"][0]))), "more than one"),
    ],
)
def test_a_file_that_is_no_verify_file_to_compare_with_exits_2_before_any_compute(
    make, message, tmp_path, capsys, registered
):
    ran = []
    registered(registry.Check("test.spy", ("A1",), lambda seed, tier: ran.append(1) or []))
    path = make(tmp_path)
    assert main(["verify", "--only", "A1", "--quiet", "--compare", path]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith(f"python -m lab: error: --compare: {path}")
    assert message in err and not ran


def test_the_comparison_is_written_as_json_the_docs_read_and_render(tmp_path, capsys):
    import shutil

    from lab.docs.render import render_all
    from lab.docs.results import load_comparison

    def plant(records, data):
        records["noise-orthonormal"]["measured"] *= 1 + 1e-6

    committed = _planted(tmp_path, plant)
    results = tmp_path / "results"
    shutil.copytree(COMMITTED.parent, results, ignore=shutil.ignore_patterns("runs", "*.sqlite"))
    written = results / "reproducing" / "planted.json"
    argv = ["verify", "--only", "A1", "--quiet", "--compare", str(committed), "--compare-json", str(written)]
    assert main(argv) == 0
    comparison = load_comparison(written)
    assert comparison["counts"]["differs"] == 1 and not comparison["failed"]
    (row,) = comparison["rows"]
    assert (row["key"], row["status"], row["changes"][0]["where"]) == (
        "noise-orthonormal",
        "differs",
        "measured",
    )
    sweeps = Path(__file__).resolve().parents[2] / "sweeps"
    page = render_all(results, sweeps)["reproducing.md"]
    assert "### `results/reproducing/planted.json`" in page
    assert "| A1 | noise-orthonormal | differs | measured |" in page


def test_compare_json_without_compare_is_refused_in_one_line(tmp_path, capsys):
    assert main(["verify", "--only", "A1", "--compare-json", str(tmp_path / "c.json")]) == EXIT_BAD_INPUT
    assert "--compare-json needs --compare FILE" in capsys.readouterr().err
