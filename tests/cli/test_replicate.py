"""`replicate --jobs`: runs trained in parallel processes are the runs `replicate` trains one by one."""

from __future__ import annotations

import json
import os
import threading

from lab.chen2022 import replicate as R
from lab.cli.main import main
from lab.cli.replicate import _watch_parent, chen_configs, train_in_parallel


def test_runs_trained_in_parallel_equal_runs_trained_in_turn(monkeypatch, replicate_args, tmp_path):
    expand = R.expand  # 12 steps a run; the spawned workers get the configs, steps included
    monkeypatch.setattr(R, "expand", lambda *a, **k: [c | {"steps": 12} for c in expand(*a, **k)])
    # table1's runs in parallel; a target without Chen et al. runs is left to its own command
    args = replicate_args(targets=["table1", "makkuva-fig1"], settings=[1], seeds=1, jobs=2)
    train_in_parallel(args, chen_configs(args))
    configs = R.expand("table1", [1], 1, tier="quick")
    stored = sorted((tmp_path / "runs").glob("*.json"))
    assert [p.stem for p in stored] == sorted(R.run_key(c) for c in configs)
    for config in configs:
        record = json.loads((tmp_path / "runs" / f"{R.run_key(config)}.json").read_text())
        again = R.run_one(config)
        assert {k: v for k, v in record.items() if k not in ("seconds", "code", "versions")} == {
            k: v for k, v in again.items() if k != "seconds"
        }
        assert record["code"] == R.run_code()


def test_a_worker_leaves_when_its_parent_is_gone():
    left = []
    _watch_parent(os.getppid() + 1, poll=0.0, leave=left.append)  # not our parent: as after a kill
    assert left == [1]


def test_a_worker_stays_while_its_parent_lives():
    left = []
    watch = threading.Thread(target=_watch_parent, args=(os.getppid(), 0.01, left.append), daemon=True)
    watch.start()
    watch.join(0.2)
    assert watch.is_alive() and left == []


def test_jobs_must_be_a_positive_integer(capsys):
    assert main(["replicate", "table1", "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err
