"""The command line: verify's table, JSON, filtering, exit codes."""

import json
import subprocess
import sys

import pytest

from lab.cli.main import main
from lab.core import registry
from lab.core.records import upper_bound_record


@pytest.mark.slow
def test_verify_only_writes_json(tmp_path, capsys):
    out = tmp_path / "v.json"
    assert main(["verify", "--only", "b7", "--seed", "3", "--json", str(out), "--quiet"]) == 0
    table = capsys.readouterr().out
    assert "| B7 |" in table and "detected" in table
    data = json.loads(out.read_text())
    assert data["seed"] == 3 and {"numpy", "numba", "python"} <= set(data["versions"])
    assert {r["claim"] for r in data["records"]} == {"B7"}
    assert {r["kind"] for r in data["records"]} == {"premise", "negative-control"}


def test_same_seed_same_numbers(tmp_path):
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in paths:
        assert main(["verify", "--only", "A1", "--quiet", "--json", str(path)]) == 0
    measured = [[r["measured"] for r in json.loads(p.read_text())["records"]] for p in paths]
    assert measured[0] == measured[1]


def test_checks_run_in_worker_processes_give_the_records_run_in_turn(tmp_path):
    """`--jobs 2`: each check in a spawned worker that finds it by name; the same records, same order."""
    paths = {jobs: tmp_path / f"{jobs}.json" for jobs in (1, 2)}
    for jobs, path in paths.items():
        assert (
            main(["verify", "--only", "A1,B6,C2", "--jobs", str(jobs), "--quiet", "--json", str(path)]) == 0
        )
    records = [
        [{k: v for k, v in r.items() if k != "seconds"} for r in json.loads(p.read_text())["records"]]
        for p in paths.values()
    ]
    assert records[0] == records[1] and {r["claim"] for r in records[0]} == {"A1", "B6", "C2"}


@pytest.mark.parametrize(
    "argv",
    [
        ["verify", "--only", "Z99"],
        ["verify", "--seed", "-1"],
        ["verify", "--jobs", "0"],
        ["verify", "--tier", "huge"],
        ["nonsense"],
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("python -m lab: error:")


def test_exit_code_reflects_unexpected_records(registered, capsys):
    def broken(seed, tier):
        return upper_bound_record(
            claim="Z1",
            key="k",
            statement="a premise that fails",
            kind="premise",
            params={},
            measured=2.0,
            bound=1.0,
        )

    registered(registry.Check("test.broken", ("Z1",), broken))
    assert main(["verify", "--only", "Z1", "--quiet"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_finding_that_starts_holding_fails(registered, capsys):
    def resolved(seed, tier):
        return upper_bound_record(
            claim="Z2",
            key="k",
            statement="s",
            kind="premise",
            params={},
            measured=0.0,
            bound=1.0,
            finding="did not reproduce",
        )

    registered(registry.Check("test.resolved", ("Z2",), resolved))
    assert main(["verify", "--only", "Z2", "--quiet"]) == 1
    assert "now HOLD" in capsys.readouterr().out


def test_module_entry_point_help():
    result = subprocess.run(
        [sys.executable, "-m", "lab", "--help"], capture_output=True, text=True, check=True
    )
    assert "verify" in result.stdout and "replicate" in result.stdout


def test_rows_show_whole_statements_and_the_parameters_that_tell_them_apart(tmp_path, capsys):
    md = tmp_path / "v.md"
    assert main(["verify", "--only", "A5", "--quiet", "--markdown", str(md)]) == 0
    out = capsys.readouterr().out
    assert md.read_text() == out
    rows = [line for line in out.splitlines() if line.startswith(("| A5 | premise", "| A5 | negative"))]
    assert len(rows) == 7 and len({row.split(" | ")[3] for row in rows}) == 7  # the params tell all apart
    assert "..." not in out and "backend=numba" in rows[1] and "n=40" not in out  # n is the same in all
    assert out.index("## Summary per claim") < out.index("## Details")


def test_progress_counts_checks_on_stderr_and_quiet_is_silent(capsys):
    assert main(["verify", "--only", "A5,A1"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line.split("]")[0] for line in err] == ["[1/2", "[2/2"]
    assert all(line.endswith(" s)") for line in err)
    assert main(["verify", "--only", "A1", "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_workers_take_the_training_checks_first_then_the_longest_the_committed_run_took():
    from lab.cli.verify import committed_seconds, submission_order

    def check(name, claims, training=False):
        return registry.Check(name, claims, lambda seed, tier: [], training_kernels=training)

    committed = {"records": [{"claim": c, "seconds": s} for c, s in [("A", 1.0), ("A", 9.0), ("B", 3.0)]]}
    assert committed_seconds(committed) == {"A": 9.0, "B": 3.0}
    checks = [
        check("short", ("B",)),
        check("unknown", ("Z",)),
        check("long", ("A", "B")),
        check("model", ("B",), True),
    ]
    assert [c.name for c in submission_order(checks, committed_seconds(committed))] == [
        "model",
        "long",
        "short",
        "unknown",
    ]
    assert [c.name for c in submission_order(checks, {})] == ["model", "short", "unknown", "long"]
