"""`replicate TARGET --check K`: rerun the first K seeds of each cell of a committed summary and compare.

The summaries here are full-tier float64 ones of tiny runs (120 samples, 12 steps), written by the
replicate target itself; the reruns go through the CLI with the kernel-compiling child switched off."""

from __future__ import annotations

import json

import pytest

from lab.chen2022 import recertify as RC
from lab.chen2022 import replicate as R
from lab.cli import replicate as cli
from lab.cli.main import main

pytestmark = pytest.mark.usefixtures("without_figures")  # none of these tests looks at them

ARGV = ["replicate", "table1", "--quiet", "--check"]
CELL = "single (linear), 128 filters"


@pytest.fixture
def committed(monkeypatch, replicate_args, tmp_path, capsys):
    """A folder holding table1's full-tier float64 summary (setting 1, `seeds` seeds) and nothing else."""
    monkeypatch.setitem(R.TIER_SIZES, "full", (120, 120))
    expand = R.expand
    monkeypatch.setattr(R, "expand", lambda *a, **k: [c | {"steps": 12} for c in expand(*a, **k)])
    monkeypatch.setattr(cli, "compile_in_child", lambda configs: None)

    def write(seeds: int = 2):
        assert R.run_target("table1", replicate_args(settings=[1], seeds=seeds, tier="full")) == 0
        for path in tmp_path.iterdir():
            if path.name != "table1.json":
                path.unlink()
        capsys.readouterr()  # the target's table
        return tmp_path / "table1.json"

    return write


def _folder(path) -> dict:
    return {p.name: p.read_bytes() for p in path.parent.iterdir()}


def _plant(path, seed: int, accuracy: float) -> float:
    """Set the committed accuracy of CELL's run of `seed`; the committed accuracy of seed 0."""
    payload = json.loads(path.read_text())
    runs = [r for r in payload["runs"] if r["model"] == "single (linear)" and r["filters"] == 128]
    next(r for r in runs if r["seed"] == seed)["test_accuracy"] = accuracy
    path.write_text(R.summary_text(payload))
    return next(r for r in runs if r["seed"] == 0)["test_accuracy"]


def _shift(monkeypatch, seed: int, points: float) -> None:
    """Reruns of CELL's run of `seed` come out `points` above what the code computes."""
    run_one = R.run_one

    def shifted(config, progress=False):
        record = run_one(config, progress)
        if config["model"] == "single (linear)" and config["filters"] == 128 and config["seed"] == seed:
            record["test_accuracy"] += points
        return record

    monkeypatch.setattr(R, "run_one", shifted)


def test_identical_reruns_exit_0_and_write_nothing(committed, capsys):
    path = committed()
    before = _folder(path)
    assert main([*ARGV, "1", "--out", str(path.parent)]) == 0
    line, _, table = capsys.readouterr().out.partition("\n\n")
    assert line.startswith(f"check table1: 4 run(s) of {path} retrained under code {R.run_code()}")
    assert "first 1 seed(s) of each of 4 cell×setting(s)" in line
    assert "4 identical to their committed record, 0 not; 0 beyond" in line
    assert RC.CHECK_RULE in line
    rows = table.strip().splitlines()[2:]
    assert len(rows) == 4 and all(row.endswith("| 12 | 12 | identical |") for row in rows)
    assert all("| +0.00000 |" in row and "| no |" in row for row in rows)
    assert _folder(path) == before  # no run store, the summary as it was


def test_a_change_within_the_spread_is_named_but_exits_0_and_one_beyond_exits_1_naming_the_run(
    committed, monkeypatch, capsys
):
    path = committed()
    first = _plant(path, seed=1, accuracy=0.0)  # the cell's committed seeds: first and 0
    sd = first / 2**0.5
    _shift(monkeypatch, seed=0, points=0.9 * sd)
    assert main([*ARGV, "1", "--out", str(path.parent)]) == 0
    out = capsys.readouterr().out
    assert "3 identical to their committed record, 1 not; 0 beyond" in out
    assert "field 'test_accuracy'" in out and f"{sd:.3f} (2)" in out

    _shift(monkeypatch, seed=0, points=0.2 * sd)  # on top: 1.1 sd
    assert main([*ARGV, "1", "--out", str(path.parent)]) == 1
    line = capsys.readouterr().out.splitlines()[0]
    assert "1 not; 1 beyond their cell's seed spread" in line
    assert line.endswith(f"{RC.CHECK_RULE}): {CELL} setting 1 seed 0")


def test_a_cell_with_one_committed_seed_has_no_spread_so_any_change_counts(committed, monkeypatch, capsys):
    path = committed(seeds=1)
    assert main([*ARGV, "3", "--out", str(path.parent)]) == 0
    out = capsys.readouterr().out
    assert "first 3 seed(s)" in out and "4 cell×setting(s) with one committed seed, so no sd" in out
    assert "no sd (1 seed)" in out
    _shift(monkeypatch, seed=0, points=1e-9)
    assert main([*ARGV, "3", "--out", str(path.parent)]) == 1
    assert f"): {CELL} setting 1 seed 0" in capsys.readouterr().out


def _damaged(path) -> None:
    path.write_text(path.read_text()[:-20])


def _unmeasured(path) -> None:
    payload = json.loads(path.read_text())
    del payload["runs"][1]["test_accuracy"]
    path.write_text(R.summary_text(payload))


def _float32(path) -> None:
    payload = json.loads(path.read_text())
    payload["config"]["dtype"] = "float32"
    path.write_text(R.summary_text(payload))


@pytest.mark.parametrize(
    "argv,spoil,message",
    [
        (["makkuva-fig1", "--check", "1"], None, "--check: makkuva-fig1 keeps no training runs"),
        (["table1", "--check", "0"], None, "argument --check: must be an integer >= 1, got 0"),
        (
            ["table1", "--check", "1", "--variant", "reference-code"],
            None,
            "table1_reference-code.json is missing",
        ),
        (["table1", "--check", "1", "--seeds", "3"], None, "it goes without --seeds"),
        (["table1", "--check", "1"], _damaged, "table1.json is damaged (Unterminated"),
        (["table1", "--check", "1"], _unmeasured, "holds no final test accuracy and step count"),
        (["table1", "--check", "1"], _float32, "not {'tier': 'full', 'dtype': 'float64'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_any_run(
    committed, monkeypatch, capsys, argv, spoil, message
):
    path = committed()
    if spoil:
        spoil(path)
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: pytest.fail("trained"))
    monkeypatch.setattr(cli, "compile_in_child", lambda configs: pytest.fail("compiled"))
    assert main(["replicate", *argv, "--quiet", "--out", str(path.parent)]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1 and not captured.out


def test_the_sample_is_the_first_k_seeds_of_each_cell_and_setting(committed):
    path = committed(seeds=3)
    sample = RC.check_sample("table1", "paper", path.parent, 2)
    assert [(cell, config["seed"]) for cell, config, _ in sample.runs] == [
        (cell.label, seed) for cell in R.TARGETS["table1"] for seed in (0, 1)
    ]
    assert {seeds for _, seeds in sample.spread.values()} == {3}
    with pytest.raises(ValueError, match="--check must be an integer >= 1"):
        RC.check_sample("table1", "paper", path.parent, 0)
