"""Replication targets: expand/run_one, the Markdown/JSON/PNG reports, resuming from finished runs."""

from __future__ import annotations

import json

import pytest

from lab.chen2022 import replicate as R
from lab.chen2022 import runs
from lab.core import registry


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


def _one_run(tmp_path):
    """One run config of table1 and the path of its stored run file."""
    config = R.expand("table1", [1], 1, 0, "paper", "quick")[0]
    return config, tmp_path / "runs" / f"{R.run_key(config)}.json"


@pytest.mark.parametrize("damage", ["truncated", "a list", "another config"])
def test_a_damaged_run_file_is_named_moved_aside_and_recomputed(tiny, tmp_path, monkeypatch, capsys, damage):
    config, path = _one_run(tmp_path)
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: dict(config, test_accuracy=50.0))
    assert R.load_or_run(config, path.parent, False)[1] is False
    text = {"truncated": path.read_text()[:40], "a list": "[1, 2]", "another config": '{"seed": 99}'}[damage]
    path.write_text(text)
    record, cached = R.load_or_run(config, path.parent, False)
    assert not cached and record["code"] == R.run_code()
    err = capsys.readouterr().err
    assert str(path) in err and "damaged" in err
    assert path.with_name(path.name + ".corrupt").read_text() == text
    assert R.load_or_run(config, path.parent, False)[1] is True  # the recomputed file is sound


def test_a_run_file_from_other_code_is_stale_and_recomputed_unless_kept(tiny, tmp_path, monkeypatch, capsys):
    config, path = _one_run(tmp_path)
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: dict(config, test_accuracy=50.0))
    R.load_or_run(config, path.parent, False)
    stale = json.loads(path.read_text()) | {"code": "from-other-code", "test_accuracy": 1.0}
    path.write_text(json.dumps(stale))
    assert R.load_or_run(config, path.parent, False, keep_stale=True) == (stale, True)
    record, cached = R.load_or_run(config, path.parent, False)
    assert not cached and record["test_accuracy"] == 50.0
    assert "stale" in capsys.readouterr().err


def test_reading_a_run_file_says_why_it_is_not_used_and_changes_nothing(tmp_path, capsys):
    """`stored_record` (also the CLI's "will it train?") only reads: no file moved, nothing printed."""
    config, path = _one_run(tmp_path)
    assert R.stored_record(path, config, False) == (None, "absent")
    path.parent.mkdir(parents=True)
    path.write_text("[1, 2]")
    record, why = R.stored_record(path, config, False)
    assert record is None and why.startswith("damaged") and path.read_text() == "[1, 2]"
    sound = dict(config, test_accuracy=50.0, code=R.run_code())
    path.write_text(json.dumps(sound | {"code": "from-other-code"}))
    assert R.stored_record(path, config, False) == (None, "stale")
    assert R.stored_record(path, config, True) == (sound | {"code": "from-other-code"}, "")
    path.write_text(json.dumps(sound))
    assert R.stored_record(path, config, False) == (sound, "")
    assert capsys.readouterr().err == "" and [p.name for p in path.parent.iterdir()] == [path.name]


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
    assert text.count("\n    {") == len(payload["runs"]) == 4  # one line per run
    for run in payload["runs"]:
        assert "curves" not in run and "versions" not in run and run["code"] == R.run_code()
        assert set(run.get("history", {})) == ({"loss"} if run["model"].startswith("single") else set())
    assert payload["versions"]["numpy"]


def test_a_fresh_clone_re_renders_from_the_summaries_without_training(
    tiny, replicate_args, tmp_path, monkeypatch
):
    args = replicate_args(settings=[1], seeds=2)
    assert R.run_target("table1", args) == 0
    before = json.loads((tmp_path / "table1.json").read_text())
    table = (tmp_path / "table1.md").read_text()
    for path in (tmp_path / "runs").iterdir():  # the run store is git-ignored: a clone has none
        path.unlink()
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: pytest.fail("trained"))
    assert R.run_target("table1", args) == 0
    after = json.loads((tmp_path / "table1.json").read_text())
    assert after["runs"] == before["runs"] and after["versions"] == before["versions"]
    assert (tmp_path / "table1.md").read_text() == table


def _summary_codes(path, code):
    payload = json.loads(path.read_text())
    payload["runs"] = [run | {"code": code} for run in payload["runs"]]
    path.write_text(R.summary_text(payload))


def test_a_summary_run_from_other_code_or_a_damaged_summary_is_not_reused(
    tiny, replicate_args, tmp_path, monkeypatch, capsys
):
    args = replicate_args(settings=[1], seeds=1)
    assert R.run_target("table1", args) == 0
    for path in (tmp_path / "runs").iterdir():
        path.unlink()
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
    runs = sorted((tmp_path / "runs").iterdir())
    for path in runs[:3]:  # three runs only in the summary, as on a fresh clone
        path.unlink()
    for path in runs[3:]:
        path.write_text(json.dumps(json.loads(path.read_text()) | {"code": "from-other-code"}))
    _summary_codes(tmp_path / "table1.json", "from-other-code")
    tampered = json.loads(runs[3].read_text()) | {"test_accuracy": 1.0}
    runs[3].write_text(json.dumps(tampered))

    found = recertify(configs, tmp_path, sample=8)
    assert found.stale == 8 and list(found.differ) == [runs[3].stem]
    assert "test_accuracy" in found.line("now") and "nothing re-stamped" in found.line("now")
    assert all(json.loads(p.read_text())["code"] == "from-other-code" for p in runs[3:])

    runs[3].unlink()  # without the tampered run, two sampled reruns certify the rest
    found = recertify(configs, tmp_path, sample=2)
    assert (found.stale, len(found.sampled), found.differ) == (8, 2, {})
    assert (found.run_files, found.summaries) == (4, 1)
    assert "re-stamped 8 stale runs" in found.line(R.run_code())
    monkeypatch.setattr(R, "run_one", lambda config, progress=False: pytest.fail("trained"))
    assert R.run_target("table1", args) == 0
    assert recertify(configs, tmp_path, sample=2).stale == 0
