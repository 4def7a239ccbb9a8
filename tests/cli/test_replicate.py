"""`replicate --jobs`: runs trained on the sweep runner's Dask workers are the runs trained in-process."""

from __future__ import annotations

import sqlite3

import pytest

from lab.chen2022 import replicate as R
from lab.cli import replicate as cli
from lab.cli.main import main
from lab.core import registry

pytestmark = pytest.mark.usefixtures("without_figures")  # none of these tests looks at them


@pytest.fixture
def short_runs(monkeypatch):
    """Every Chen et al. run of this test 12 steps long (the workers get the configs, steps included)."""
    expand = R.expand
    monkeypatch.setattr(R, "expand", lambda *a, **k: [c | {"steps": 12} for c in expand(*a, **k)])


def test_runs_trained_in_parallel_equal_runs_trained_in_turn_bit_for_bit(
    short_runs, replicate_args, tmp_path, monkeypatch
):
    pytest.importorskip("distributed")
    # table1's runs; a target without Chen et al. runs is left to its own command
    args = replicate_args(targets=["table1", "makkuva-fig1"], settings=[1], seeds=1)
    stores = cli.run_stores(registry.replications(), args.targets)
    assert list(stores.values()) == [["table1"]]
    configs = next(iter(stores)).configs(["table1"], args)
    assert [c["model"] for c in configs] == [c["model"] for c in R.expand("table1", [1], 1, tier="quick")]
    parallel, in_turn = tmp_path / "parallel", tmp_path / "in-turn"
    records = R.train_missing(configs, parallel, jobs=2)
    assert R.train_missing(configs, in_turn, jobs=1).keys() == records.keys()
    ours, theirs = R.stored_rows(configs, parallel), R.stored_rows(configs, in_turn)
    assert sorted(ours) == sorted(theirs) == sorted(R.run_key(c) for c in configs)
    for key, row in ours.items():
        assert row.code == theirs[key].code == R.run_code() and row.worker != theirs[key].worker
        assert {k: v for k, v in row.result.items() if k != "seconds"} == {
            k: v for k, v in theirs[key].result.items() if k != "seconds"
        }
    monkeypatch.setattr(R, "task_runner", lambda: lambda *a, **k: pytest.fail("trained"))
    assert R.train_missing(configs, parallel, jobs=2) == records  # resumed: nothing left to train


def test_an_out_holding_only_the_summaries_trains_nothing(short_runs, replicate_args, tmp_path, monkeypatch):
    assert R.run_target("table1", replicate_args(settings=[1], seeds=1)) == 0
    summary = (tmp_path / "table1.json").read_text()
    for path in tmp_path.glob(f"{R.STORE_NAME}*"):  # a fresh clone: the summaries, no run store
        path.unlink()
    monkeypatch.setattr(cli, "compile_in_child", lambda configs: pytest.fail("compiled kernels"))
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: pytest.fail("trained"))
    argv = ["replicate", "table1", "--tier", "quick", "--settings", "1", "--seeds", "1", "--quiet"]
    assert main([*argv, "--out", str(tmp_path), "--jobs", "2"]) == 0
    assert not R.store_path(tmp_path).exists()
    assert (tmp_path / "table1.json").read_text().split('"runs"')[1] == summary.split('"runs"')[1]


def test_a_damaged_run_store_is_named_in_one_line(tmp_path, capsys):
    R.store_path(tmp_path).write_bytes(b"not a database " * 100)
    argv = ["replicate", "table1", "--tier", "quick", "--settings", "1", "--seeds", "1", "--quiet"]
    assert main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert str(R.store_path(tmp_path)) in err and len(err.splitlines()) == 1


def test_jobs_must_be_a_positive_integer(capsys, tmp_path):
    assert main(["replicate", "table1", "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err
    with pytest.raises(ValueError, match="jobs"):
        R.train_missing([], tmp_path, jobs=0)


def test_a_baseline_goes_with_recertify_and_must_be_a_checkout(capsys, tmp_path):
    argv = ["replicate", "table1", "--quiet", "--out", str(tmp_path)]
    assert main([*argv, "--baseline", str(tmp_path)]) == 2
    assert "--baseline goes with --recertify" in capsys.readouterr().err
    assert main([*argv, "--recertify", "2", "--baseline", str(tmp_path / "nowhere")]) == 2
    assert "not a checkout of the lab" in capsys.readouterr().err


def test_a_baseline_of_other_code_than_the_stale_runs_is_one_line_and_exit_2(
    short_runs, tmp_path, monkeypatch, capsys
):
    from lab.chen2022 import recertify

    argv = ["replicate", "table1", "--tier", "quick", "--settings", "1", "--seeds", "1", "--quiet"]
    out, baseline = tmp_path / "out", tmp_path / "checkout"
    assert main([*argv, "--out", str(out)]) == 0
    with sqlite3.connect(R.store_path(out)) as db:
        db.execute("UPDATE tasks SET code = 'old-code'")  # runs made by other code
    (baseline / "lab" / "chen2022").mkdir(parents=True)
    monkeypatch.setattr(recertify, "_baseline_child", lambda root, configs: {"code": "other", "records": []})
    assert main([*argv, "--out", str(out), "--recertify", "2", "--baseline", str(baseline)]) == 2
    err = capsys.readouterr().err.strip()
    assert "its run code is other, but the stale runs carry old-code" in err and len(err.splitlines()) == 1
