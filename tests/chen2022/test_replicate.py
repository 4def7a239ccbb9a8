"""Replication targets: expand/run_one, the Markdown/JSON/PNG reports, resuming from the run store."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from lab.chen2022 import replicate as R
from lab.chen2022 import runs
from lab.chen2022.replicate_analysis import ANALYSIS_NAME, digest, replicate_analysis
from lab.chen2022.replicate_report import (
    PAIRED_CELLS,
    SUMMARY_STATISTICS,
    cell_pairs,
    cell_statistics,
    format_cells,
)
from lab.core import registry
from lab.core.errors import InputError
from lab.core.keys import task_key
from lab.core.store import SweepStore
from lab.sweeps.sweep import task_code

pytestmark = pytest.mark.usefixtures("without_figures")  # only the test marked `figures` looks at them


def test_targets_are_registered():
    assert {"table1", "table3", "table7", "table10", "table11"} <= set(registry.replications())


@pytest.mark.parametrize(
    "target,count",
    [
        ("table1", 2 * 4 * 3),
        ("table3", 4 * 6 * 3),
        ("table7", 3 * 6 * 3),
        ("table10", 6 * 3),
        ("table11", 4 * 3),
    ],
)
def test_expand_grid_sizes(target, count):
    configs = R.expand(target, [1, 2, 3, 4], 3, 5, "paper")
    assert len(configs) == count
    assert {c["seed"] for c in configs} == {5, 6, 7}
    assert set(runs.target_settings(target)) == {c["setting"] for c in configs}
    json.dumps(configs)  # JSON-able
    assert len({R.run_key(c) for c in configs}) == count


def test_table1_runs_are_table3_runs():
    """Table 1's configs are a subset of Table 3's, so their run files are shared."""
    t1 = {R.run_key(c) for c in R.expand("table1", [1, 2], 2, 0, "paper")}
    t3 = {R.run_key(c) for c in R.expand("table3", [1, 2], 2, 0, "paper")}
    assert t1 < t3


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"target": "table9"}, "target"),
        ({"settings": [4]}, "settings"),
        ({"seeds": 0}, "seeds"),
        ({"seed": -1}, "seed"),
        ({"variant": "pytorch"}, "variant"),
        ({"tier": "huge"}, "tier"),
    ],
)
def test_expand_refuses_bad_input(kwargs, match):
    args = {"target": "table1", "settings": [1], "seeds": 1, "seed": 0, "variant": "paper"} | kwargs
    with pytest.raises(ValueError, match=match):
        R.expand(**args)


def test_run_one_refuses_bad_config():
    with pytest.raises(ValueError, match="model"):
        R.run_one({"variant": "paper", "setting": 1, "seed": 0, "tier": "quick", "activation": "cubic"})
    with pytest.raises(ValueError, match="model"):
        R.run_one(
            {"model": "moe", "variant": "paper", "setting": 1, "seed": 0, "tier": "quick", "activation": "x"}
        )


@pytest.fixture
def tiny(monkeypatch):
    """Shrink the quick tier and give every run 12 steps, so a whole target runs in seconds."""
    monkeypatch.setitem(R.TIER_SIZES, "quick", (120, 120))
    expand = R.expand
    monkeypatch.setattr(R, "expand", lambda *a, **k: [c | {"steps": 12} for c in expand(*a, **k)])


def test_run_one_is_deterministic_and_records_the_fields(tiny):
    for config in R.expand("table1", [1], 1, 3, "paper", tier="quick"):
        a, b = R.run_one(config), R.run_one(config)
        for key in (
            "model",
            "variant",
            "setting",
            "seed",
            "test_accuracy",
            "dispatch_entropy",
            "steps",
            "seconds",
        ):
            assert key in a
        assert a["test_accuracy"] == b["test_accuracy"] and a["steps"] == 12
        if a["model"].startswith("moe"):
            assert a["dispatch_entropy"] == b["dispatch_entropy"]
            assert a["test_accuracy"] == a["test_accuracy_noise_free"]
            assert len(a["professions"]) == 8 and sum(a["profession_sizes"]) == 8
            assert sum(a["load"]) == pytest.approx(120)


def test_run_one_reference_code_variant(tiny):
    """The authors'-code variant end to end: bias column, two logits, noisy test accuracy reported."""
    for config in R.expand("table1", [2], 1, 0, "reference-code", tier="quick"):
        record = R.run_one(config)
        assert record["variant"] == "reference-code"
        if record["model"].startswith("moe"):
            assert record["test_accuracy"] == record["test_accuracy_noisy"]
            assert record["test_accuracy_routing"] == "noisy"


@pytest.mark.figures
def test_replicate_target_writes_reports_and_resumes(tiny, replicate_args, tmp_path, monkeypatch):
    args = replicate_args(settings=[1], seeds=2)
    assert R.run_target("table1", args) == 0
    table = (tmp_path / "table1.md").read_text()
    assert "99.46 ± 0.55" in table and "moe (nonlinear)" in table
    payload = json.loads((tmp_path / "table1.json").read_text())
    assert {"runs", "config", "versions"} <= set(payload)
    assert len(payload["runs"]) == 8 and all("curves" not in r for r in payload["runs"])
    assert (tmp_path / "table1_entropy.png").stat().st_size > 0
    assert (tmp_path / "table1_curves_moe_nonlinear.png").stat().st_size > 0
    assert (tmp_path / "table1.png").read_bytes().startswith(b"\x89PNG")  # the table as a figure
    calls = []
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: calls.append(config))
    assert R.run_target("table1", args) == 0  # everything is kept: no run is repeated
    assert calls == []
    assert json.loads((tmp_path / "table1.json").read_text())["runs"] == payload["runs"]


def test_variants_write_separate_reports(tiny, replicate_args, tmp_path):
    """One output directory for both variants: reference-code reports never overwrite the stated model's."""
    assert R.report_stem("table1", "paper") == "table1"
    assert R.run_target("table1", replicate_args(settings=[1], seeds=1, variant="reference-code")) == 0
    assert "variant `reference-code`" in (tmp_path / "table1_reference-code.md").read_text()
    assert json.loads((tmp_path / "table1_reference-code.json").read_text())["config"]["variant"] == (
        "reference-code"
    )
    assert not (tmp_path / "table1.md").exists()


def test_format_table_shows_mean_std_paper_and_difference():
    records = [
        {"model": "moe (nonlinear)", "setting": 1, "test_accuracy": acc, "dispatch_entropy": 0.1, "steps": 10}
        | R.TARGETS["table1"][-1].params
        for acc in (99.0, 100.0)
    ]
    text = R.format_table("table1", records)
    assert "99.50 ± 0.71" in text and "+0.04" in text and "99.46 ± 0.55" in text and "+0.002" in text


def test_a_summary_stores_its_cells_statistics(tiny, replicate_args, tmp_path):
    assert R.run_target("table1", replicate_args(settings=[1], seeds=2)) == 0
    payload = json.loads((tmp_path / "table1.json").read_text())
    assert payload["cells"] == cell_statistics("table1", payload["runs"])
    assert [(c["setting"], c["runs"]) for c in payload["cells"]] == [(1, 2)] * 4
    assert format_cells("table1", payload["cells"]) in (tmp_path / "table1.md").read_text()
    assert payload["pairs"] == []  # table1 pairs no cells


def test_the_writer_stores_every_statistic_and_the_analysis(tiny, replicate_args, tmp_path, monkeypatch):
    """Each summary stores `SUMMARY_STATISTICS` over its runs and the analysis beside it is rewritten from
    every summary (float32 paired with float64, the stalled runs)."""
    monkeypatch.setitem(R.TIER_SIZES, "full", R.TIER_SIZES["quick"])
    for fields in ({}, {"dtype": "float32"}, {"variant": "reference-code"}):
        assert R.run_target("table1", replicate_args(settings=[1], tier="full", **fields)) == 0
    texts = {p.name: p.read_text() for p in sorted(tmp_path.glob("table1*.json"))}
    summaries = {name: json.loads(text) for name, text in texts.items()}
    for payload in summaries.values():
        for name, statistic in SUMMARY_STATISTICS.items():
            assert payload[name] == json.loads(
                json.dumps(statistic(payload["config"]["target"], payload["runs"]))
            )
    (linear,) = summaries["table1.json"]["linear_singles"]
    assert (linear["filters"], linear["runs"], linear["lr"]) == (128, 2, 0.01)
    stopping = summaries["table1_reference-code.json"]["stopping"]
    assert [row["cell"] for row in stopping] == [
        c.label for c in R.TARGETS["table1"] if c.model.startswith("single")
    ]
    assert summaries["table1.json"]["stopping"] == []  # the stated model's singles run every step
    analysis = json.loads((tmp_path / ANALYSIS_NAME).read_text())
    assert analysis["summaries"] == {name: digest(text) for name, text in texts.items()}
    written = {k: v for k, v in analysis.items() if k not in ("format", "summaries")}
    assert written == json.loads(json.dumps(replicate_analysis(summaries)))
    (pair,) = analysis["precision"]
    assert (pair["float64"], pair["float32"], pair["variant"]) == (
        "table1.json",
        "table1_float32.json",
        "paper",
    )
    assert [row["seeds"] for row in pair["rows"]] == [2] * 4 and len(pair["rounding"]) == 4
    assert analysis["stalled"]["runs"] == 4  # setting 1, two seeds, each in float64 and in float32
    assert analysis["same_init"] is None  # no Table 10 summary


def test_a_table3_summary_pairs_its_single_cnns_by_seed():
    first, second = (c for c in R.TARGETS["table3"] if c.label in PAIRED_CELLS["table3"])
    records = [
        {"model": cell.model, "setting": 1, "seed": seed, "test_accuracy": acc} | cell.params
        for cell, accs in ((first, (90.0, 92.0, 91.0)), (second, (88.0, 91.0, 87.0)))
        for seed, acc in enumerate(accs)
    ]
    (pair,) = cell_pairs("table3", records)
    assert (pair["setting"], pair["seeds"], pair["first_mean"], pair["second_mean"]) == (
        1,
        3,
        91.0,
        88.66666666666667,
    )
    assert pair["difference"] == pytest.approx(-7 / 3)
    diff = np.array([-2.0, -1.0, -4.0])
    half = stats.t.ppf(0.975, 2) * diff.std(ddof=1) / np.sqrt(3)
    assert pair["interval"] == pytest.approx([diff.mean() - half, diff.mean() + half])
    payload = {"config": {"target": "table3"}, "runs": records}
    assert json.loads(R.summary_text(payload | {"pairs": [pair]}))["pairs"] == [pair]
    assert cell_pairs("table3", records[:1] + records[3:4]) == []  # one paired seed: no interval


def _store(out, sql: str, *args) -> None:
    """Change the run store of `out` behind the lab's back (as other code or a damaged disk would)."""
    with sqlite3.connect(R.store_path(out)) as db:
        db.execute(sql, args)
    db.close()


def _forget_store(out) -> None:
    """Remove the run store of `out` (git ignores it: a fresh clone has none)."""
    for path in out.glob(f"{R.STORE_NAME}*"):
        path.unlink()


def test_a_run_lands_in_the_sweep_store_keyed_and_stamped_as_a_sweep_row(tiny, replicate_args, tmp_path):
    args = replicate_args(settings=[1], seeds=1)
    assert R.run_target("table1", args) == 0
    configs = R.target_configs("table1", args)
    assert task_code("replicate") == R.run_code()  # one staleness rule: the fingerprint of the run's science
    with SweepStore(R.store_path(tmp_path), readonly=True) as store:
        rows = store.rows(task_key("replicate", config) for config in configs)
    assert [row.params for row in rows] == configs
    for row, config in zip(rows, configs, strict=True):
        assert (row.task, row.status, row.code) == ("replicate", "done", R.run_code())
        assert row.result["versions"]["numpy"]
        again = json.loads(json.dumps(R.run_one(config)))  # as stored: lists, not tuples
        record = R.store_record(row)
        assert {k: v for k, v in record.items() if k not in ("seconds", "code", "versions")} == {
            k: v for k, v in again.items() if k != "seconds"
        }
    assert not (tmp_path / "runs").exists()


def test_a_stale_run_is_trained_again_unless_kept(tiny, replicate_args, tmp_path, monkeypatch, capsys):
    args = replicate_args(settings=[1], seeds=1)
    assert R.run_target("table1", args) == 0
    config = R.target_configs("table1", args)[0]
    key = task_key("replicate", config)
    result = json.loads(R.stored_rows([config], tmp_path)[R.run_key(config)].result_text)
    _store(
        tmp_path,
        "UPDATE tasks SET code = 'from-other-code', result = ? WHERE key = ?",
        json.dumps(result | {"test_accuracy": 1.0}),
        key,
    )
    (tmp_path / "table1.json").unlink()  # it holds the run from the current code
    calls = []
    run_one = R.run_one
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: calls.append(config) or run_one(config))
    assert R.run_target("table1", replicate_args(settings=[1], seeds=1, keep_stale=True)) == 0
    assert (
        calls == [] and R.held([config], tmp_path, keep_stale=True)[R.run_key(config)]["test_accuracy"] == 1.0
    )
    assert capsys.readouterr().err == ""
    assert R.run_target("table1", args) == 0
    assert calls == [config]
    row = R.stored_rows([config], tmp_path)[R.run_key(config)]
    assert row.code == R.run_code() and row.result["test_accuracy"] == result["test_accuracy"]
    assert "1 run(s) in" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["truncated", "not sqlite"])
def test_a_damaged_run_store_is_named_in_one_line_and_left_untouched(tiny, replicate_args, tmp_path, damage):
    args = replicate_args(settings=[1], seeds=1)
    assert R.run_target("table1", args) == 0
    path = R.store_path(tmp_path)
    with SweepStore(path):  # a checkpoint folds the write-ahead log into the file
        pass
    text = path.read_bytes()[:100] if damage == "truncated" else b"not a database " * 100
    path.write_bytes(text)
    with pytest.raises(InputError, match=str(path)) as info:
        R.run_target("table1", args)
    assert "\n" not in str(info.value) and path.read_bytes() == text


def test_asking_what_is_held_reads_only_and_train_prepares_what_it_trains(tiny, tmp_path, capsys):
    """`held` creates no store and prints nothing; `train` hands `prepare` the runs it will train."""
    configs = R.expand("table1", [1], 1, 0, "paper", "quick")
    assert R.held(configs, tmp_path) == {}
    assert capsys.readouterr().err == "" and list(tmp_path.iterdir()) == []
    asked = []
    records = R.train_missing(configs, tmp_path, prepare=asked.append)
    assert asked == [configs] and sorted(records) == sorted(R.run_key(c) for c in configs)
    assert R.train_missing(configs, tmp_path, prepare=asked.append) == records and asked[1] == []


@pytest.mark.figures  # its own absence of figures
def test_without_matplotlib_reports_are_written_and_figures_skipped(
    tiny, replicate_args, tmp_path, monkeypatch, capsys
):
    from lab.core import plots

    monkeypatch.setattr(plots, "available", lambda: False)
    args = replicate_args(settings=[1], seeds=1, quiet=False)
    assert R.run_target("table1", args) == 0
    assert (tmp_path / "table1.json").exists() and (tmp_path / "table1.md").exists()
    assert not list(tmp_path.glob("*.png"))
    assert capsys.readouterr().err.count('pip install "moe-lab[plots]"') == 1


def test_a_summary_keeps_final_metrics_and_only_the_series_the_docs_read(tiny, replicate_args, tmp_path):
    assert R.run_target("table1", replicate_args(settings=[1], seeds=1)) == 0
    text = (tmp_path / "table1.json").read_text()
    payload = json.loads(text)
    rows = sum(len(payload[name]) for name in SUMMARY_STATISTICS)  # cells and the linear single's row
    assert text.count("\n    {") == rows + len(payload["runs"]) == 4 + 1 + 4  # a line each
    assert '  "pairs": [],\n' in text  # a statistic with no rows: one line
    for run in payload["runs"]:
        assert "curves" not in run and "versions" not in run and run["code"] == R.run_code()
        assert set(run.get("history", {})) == ({"loss"} if run["model"] == "single (linear)" else set())
    assert payload["versions"]["numpy"]


def test_a_fresh_clone_re_renders_from_the_summaries_without_training(
    tiny, replicate_args, tmp_path, monkeypatch
):
    args = replicate_args(settings=[1], seeds=2)
    assert R.run_target("table1", args) == 0
    before = json.loads((tmp_path / "table1.json").read_text())
    table = (tmp_path / "table1.md").read_text()
    _forget_store(tmp_path)  # the run store is git-ignored: a clone has none
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: pytest.fail("trained"))
    assert R.run_target("table1", args) == 0
    after = json.loads((tmp_path / "table1.json").read_text())
    assert after["runs"] == before["runs"] and after["versions"] == before["versions"]
    assert (tmp_path / "table1.md").read_text() == table
    assert not R.store_path(tmp_path).exists()


def _summary_codes(path, code):
    payload = json.loads(path.read_text())
    payload["runs"] = [run | {"code": code} for run in payload["runs"]]
    path.write_text(R.summary_text(payload))


def test_a_summary_run_from_other_code_or_a_damaged_summary_is_not_reused(
    tiny, replicate_args, tmp_path, monkeypatch, capsys
):
    args = replicate_args(settings=[1], seeds=1)
    assert R.run_target("table1", args) == 0
    _forget_store(tmp_path)
    _summary_codes(tmp_path / "table1.json", "from-other-code")
    calls = []
    run_one = R.run_one
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: calls.append(1) or run_one(config))
    assert R.run_target("table1", args) == 0 and len(calls) == 4
    (tmp_path / "table1.json").write_text("{")
    assert R.committed_runs(tmp_path) == {}
    assert f"summary {tmp_path / 'table1.json'} is damaged" in capsys.readouterr().err


def test_recertify_re_stamps_stale_runs_only_when_the_sampled_reruns_are_identical(
    tiny, replicate_args, tmp_path, monkeypatch
):
    from lab.chen2022.recertify import recertify

    args = replicate_args(settings=[1], seeds=2)
    assert R.run_target("table1", args) == 0
    configs = R.target_configs("table1", args)
    keys = [task_key("replicate", config) for config in configs]
    for key in keys[:3]:  # three runs only in the summary, as on a fresh clone
        _store(tmp_path, "DELETE FROM tasks WHERE key = ?", key)
    _store(tmp_path, "UPDATE tasks SET code = 'from-other-code'")
    _summary_codes(tmp_path / "table1.json", "from-other-code")
    tampered = R.run_key(configs[3])
    _store(
        tmp_path, "UPDATE tasks SET result = json_set(result, '$.test_accuracy', 1.0) WHERE key = ?", keys[3]
    )

    found = recertify(configs, tmp_path, sample=8)
    assert found.stale == 8 and list(found.differ) == [tampered]
    assert "test_accuracy" in found.line("now") and "nothing re-stamped" in found.line("now")
    assert {row.code for row in R.stored_rows(configs, tmp_path).values()} == {"from-other-code"}

    _store(tmp_path, "DELETE FROM tasks WHERE key = ?", keys[3])  # without it, one rerun a model certifies
    found = recertify(configs, tmp_path, sample=1)
    assert (found.stale, len(found.sampled), found.differ) == (8, 4, {})
    sampled = [config["model"] for config in configs if R.run_key(config) in found.sampled]
    assert sorted(sampled) == sorted({config["model"] for config in configs})  # one run of each model
    assert (found.store_rows, found.summaries) == (4, 1)
    assert "re-stamped 8 stale runs" in found.line(R.run_code())
    assert {row.code for row in R.stored_rows(configs, tmp_path).values()} == {R.run_code()}
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: pytest.fail("trained"))
    assert R.run_target("table1", args) == 0
    assert recertify(configs, tmp_path, sample=2).stale == 0


def test_recertify_samples_each_code_stamp_apart(tiny, replicate_args, tmp_path):
    """Stale runs from two old codes: a rerun of each model under each, so a re-stamp covers both."""
    from lab.chen2022.recertify import recertify

    args = replicate_args(settings=[1], seeds=2)
    assert R.run_target("table1", args) == 0
    configs = R.target_configs("table1", args)
    _store(tmp_path, "UPDATE tasks SET code = 'old-a'")
    _store(tmp_path, "UPDATE tasks SET code = 'old-b' WHERE json_extract(params, '$.seed') = 1")
    found = recertify(configs, tmp_path, sample=1)
    seeds = sorted(config["seed"] for config in configs if R.run_key(config) in found.sampled)
    assert (found.stale, seeds) == (8, [0, 0, 0, 0, 1, 1, 1, 1])


def test_recertify_against_a_baseline_compares_the_reruns_with_the_baseline_code_not_the_stored_records(
    tiny, replicate_args, tmp_path, monkeypatch
):
    from lab.chen2022 import recertify as RC

    args = replicate_args(settings=[1], seeds=1)
    assert R.run_target("table1", args) == 0
    configs = R.target_configs("table1", args)
    _store(tmp_path, "UPDATE tasks SET code = 'old-code'")
    moved = task_key("replicate", configs[0])  # made on another machine: no rerun here gives its bits
    _store(
        tmp_path, "UPDATE tasks SET result = json_set(result, '$.test_accuracy', 1.0) WHERE key = ?", moved
    )
    shift = {"test_accuracy": 0.0}  # the baseline code's runs here, against the current code's

    def baseline(root, configs):
        return {
            "file": str(root / "x.py"),
            "code": "old-code",
            "records": [R.run_one(c) | shift for c in configs],
        }

    monkeypatch.setattr(RC, "_baseline_child", baseline)
    found = RC.recertify(configs, tmp_path, sample=4, baseline=tmp_path)
    assert found.stale == 4 and len(found.differ) == 4 and "test_accuracy" in found.line("now")
    assert {row.code for row in R.stored_rows(configs, tmp_path).values()} == {"old-code"}

    shift.clear()  # the baseline's code computes what the current code does
    found = RC.recertify(configs, tmp_path, sample=4, baseline=tmp_path)
    assert (found.differ, found.baseline, found.as_stored, found.store_rows) == ({}, "old-code", 3, 4)
    assert "the baseline's old-code (3 equal to their stored record too)" in found.line(R.run_code())
    assert {row.code for row in R.stored_rows(configs, tmp_path).values()} == {R.run_code()}


def test_a_baseline_must_carry_the_stale_runs_code(tiny, replicate_args, tmp_path, monkeypatch):
    from lab.chen2022 import recertify as RC

    args = replicate_args(settings=[1], seeds=1)
    assert R.run_target("table1", args) == 0
    _store(tmp_path, "UPDATE tasks SET code = 'old-code'")
    monkeypatch.setattr(
        RC, "_baseline_child", lambda root, configs: {"file": "", "code": "other", "records": []}
    )
    with pytest.raises(ValueError, match="its run code is other, but the stale runs carry old-code"):
        RC.recertify(R.target_configs("table1", args), tmp_path, sample=1, baseline=tmp_path)


def test_the_baseline_child_runs_the_checkout_it_is_given(tmp_path):
    from lab.chen2022 import recertify as RC

    shutil.copytree(
        Path(R.__file__).parents[2] / "lab", tmp_path / "lab", ignore=shutil.ignore_patterns("__pycache__")
    )  # a checkout of this code
    found = RC._baseline_child(tmp_path, [])
    assert found["code"] == R.run_code() and Path(found["file"]).is_relative_to(tmp_path)


def test_without_dask_jobs_train_in_this_process(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(R, "dask_available", lambda quiet=False: False)
    configs = R.expand("table1", [1], 1, 0, "paper", "quick")
    assert len(R.train_missing(configs, tmp_path, jobs=2)) == len(configs)
    assert {row.worker.split(":")[1] for row in R.stored_rows(configs, tmp_path).values()} == {
        str(os.getpid())
    }
