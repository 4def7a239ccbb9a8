"""Sweep tasks of the searches: routing-tightness (Lemma 5.1) and floor-attainment (Theorem 4.1).

Tiny grids run sequentially (one test on a two-worker Dask cluster); results are bit-identical for
the same params; misspelt or out-of-range fields are refused; negative controls: a constant below
the sharp one is violated, a floor below 1/8 is not attained, 1/8 under partial overlap is violated.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import lab.cli.sweep  # noqa: F401  (registers the `sweep` command and, through it, the search tasks)
from lab.chen2022.declarations import (
    ATTAINMENT_DEFAULTS,
    TIGHTNESS_DEFAULTS,
    floor_attainment,
    routing_tightness,
)
from lab.cli.main import main
from lab.core.store import SweepStore
from lab.core.tasks import task_type
from lab.sweeps.report import build_report
from lab.sweeps.sweep import expand, load_spec, run_sweep
from lab.sweeps.tasks import run_task

SWEEPS = Path(__file__).parents[2] / "sweeps"

TIGHTNESS = """
[sweep]
task = "routing-tightness"
store = "{store}"
[params]
starts = 2
[grid]
noise = ["uniform", "gaussian", "gumbel"]
M = [2, 3]
seed = [0, 1]
"""

ATTAINMENT = """
[sweep]
task = "floor-attainment"
store = "{store}"
[params]
n = 4000
restarts = 2
[grid]
setting = [1, 3]
model = ["witness", "relu-cnn", "lookup-search", "linear-cnn"]
"""


def write_spec(tmp_path: Path, template: str, name: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(template.format(store=(tmp_path / f"{name}.sqlite").as_posix()))
    return path


def stored_results(spec_path: Path) -> dict[str, str]:
    """key -> result JSON text of every task of the spec, from its store."""
    spec = load_spec(spec_path)
    with SweepStore(spec.store) as store:
        rows = store.rows(t.key for t in expand(spec))
    assert all(r.status == "done" for r in rows), [r.error for r in rows if r.status != "done"]
    return {r.key: r.result_text for r in rows}


def result(fn, params: dict) -> dict:
    outcome = run_task(fn, params)
    assert outcome["status"] == "done", outcome["error"]
    return json.loads(outcome["result"])


def test_sweep_cli_registers_the_search_tasks():
    assert task_type("routing-tightness").report is not None
    assert task_type("floor-attainment").report is not None
    sizes = {name: len(expand(load_spec(SWEEPS / f"{name}.toml"))) for name in ("tightness", "attainment")}
    assert sizes == {"tightness": 72, "attainment": 48}


def test_tightness_grid_finds_the_sharp_constants(tmp_path, capsys):
    spec_path = write_spec(tmp_path, TIGHTNESS, "tight")
    assert main(["sweep", "run", str(spec_path), "--sequential", "--quiet"]) == 0
    results = [json.loads(text) for text in stored_results(spec_path).values()]
    assert len(results) == 12
    for r in results:
        assert r["verdict_paper"] == r["verdict_lab"] == r["verdict_tested"] == "holds"
        assert r["witness_over_kappa"] <= r["best_over_kappa"] * (1 + 1e-6)
        if r["exact_over_kappa"] is not None:  # uniform 2, Gumbel e/2: the search reaches L*
            assert abs(r["shortfall"]) < 1e-8
    gaussian_2 = [r["best_over_kappa"] for r in results if r["noise"] == "gaussian" and r["M"] == 2]
    assert gaussian_2 and all(abs(b - math.sqrt(2)) < 1e-8 for b in gaussian_2)
    assert {r["exact_over_kappa"] for r in results if r["noise"] == "gumbel"} == {math.e / 2}
    assert main(["sweep", "report", str(spec_path), "--out", str(tmp_path / "out")]) == 0
    text = (tmp_path / "out" / "tight.md").read_text()
    assert "## Tables of task `routing-tightness`" in text and "| gaussian | 3 | 2 | 2 | 1.544" in text


def test_tightness_is_bit_identical_and_robust_to_the_seed():
    params = {**TIGHTNESS_DEFAULTS, "noise": "gaussian", "M": 5, "starts": 4, "seed": 3}
    first, second = run_task(routing_tightness, params), run_task(routing_tightness, params)
    assert first["result"] == second["result"]
    other = result(routing_tightness, {**params, "seed": 4})  # other random starts, the same maximum
    assert other["best_over_kappa"] == pytest.approx(json.loads(first["result"])["best_over_kappa"], rel=1e-9)


@pytest.mark.parametrize(
    ("noise", "M", "c", "verdict"),
    [
        ("uniform", 2, 1.0, "violated"),  # κ for uniform noise: the sharp constant is 2κ
        ("uniform", 4, 1.99, "violated"),
        ("uniform", 4, 2.0, "holds"),
        ("gaussian", 2, math.sqrt(2) - 1e-4, "violated"),  # L*(2) = √2κ
        ("gaussian", 2, math.sqrt(2) + 1e-4, "holds"),
        ("gumbel", 3, math.e / 2 - 1e-4, "violated"),  # L* = eκ/2 for every M
        ("gumbel", 3, math.e / 2 + 1e-4, "holds"),
    ],
)
def test_tightness_negative_control_constant_below_the_sharp_one_is_violated(noise, M, c, verdict):
    r = result(routing_tightness, {"noise": noise, "M": M, "starts": 3, "c": c})
    assert r["verdict_tested"] == verdict and r["tested_violated"] == (verdict == "violated")
    assert r["verdict_paper"] == r["verdict_lab"] == "holds"
    assert r["witness_over_kappa"] > c if verdict == "violated" else r["witness_over_kappa"] <= c
    assert r["slack_paper"] == pytest.approx(M**2 / r["best_over_kappa"])


def test_attainment_grid_witnesses_attain_and_the_linear_cnn_does_not(tmp_path):
    spec_path = write_spec(tmp_path, ATTAINMENT, "attain")
    summary = run_sweep(load_spec(spec_path), sequential=True, quiet=True)
    assert (summary.done, summary.failed) == (8, 0)
    results = {(r["setting"], r["model"]): r for r in map(json.loads, stored_results(spec_path).values())}
    assert results[3, "witness"]["floor"] == 1 / 8 and results[1, "witness"]["floor"] == pytest.approx(0.075)
    assert results[3, "witness"]["exact_error"] == 1 / 8  # enumerated over (k, k', y, ε)
    for key in ((1, "witness"), (3, "witness"), (3, "relu-cnn"), (3, "lookup-search")):
        assert results[key]["attained"] and results[key]["floor_verdict"] == "holds", key
    for setting in (1, 3):
        linear = results[setting, "linear-cnn"]
        assert not linear["attained"] and linear["ci_low"] > linear["floor"]
    assert results[3, "relu-cnn"]["filters"] == 16 and results[3, "lookup-search"]["edges"]
    spec = load_spec(spec_path)
    with SweepStore(spec.store) as store:
        report = build_report(spec, expand(spec), store)
    assert "| 3 | U(0.5, 2) | U(0.5, 2) | 1 | witness | 1 | 1 | 0.125 |" in report["task_tables"]


def test_attainment_is_bit_identical_and_models_share_the_test_set():
    params = {"setting": 1, "model": "lookup-search", "n": 3000, "restarts": 2, "seed": 5}
    first, second = run_task(floor_attainment, params), run_task(floor_attainment, params)
    assert first["status"] == "done" and first["result"] == second["result"]
    witness = result(floor_attainment, {**params, "model": "witness"})
    searched = json.loads(first["result"])
    assert witness["n"] == searched["n"] and witness["errors"] != searched["errors"]


def test_attainment_negative_controls():
    below = result(floor_attainment, {"setting": 3, "model": "witness", "n": 20_000, "floor": 0.1})
    assert below["floor"] == 0.1 and not below["attained"] and below["floor_verdict"] == "holds"
    partial = result(floor_attainment, {"setting": 1, "model": "witness", "n": 4000, "floor": 0.125})
    assert partial["orbit_floor"] == pytest.approx(0.075) and partial["floor_verdict"] == "violated"
    assert not partial["attained"] and partial["ci_high"] < 0.125


@pytest.mark.parametrize(
    ("task", "text", "field"),
    [
        ("routing-tightness", "noize = 'gumbel'", "'noize'"),
        ("routing-tightness", "startz = 3", "'startz'"),
        ("floor-attainment", "modle = 'witness'", "'modle'"),
        ("floor-attainment", "'alpha.low' = 1.0", "'alpha.low'"),
    ],
)
def test_misspelt_field_is_refused_naming_it(tmp_path, task, text, field):
    path = tmp_path / "bad.toml"
    path.write_text(f'[sweep]\ntask = "{task}"\n[params]\n{text}\n')
    with pytest.raises(ValueError, match=field) as info:
        expand(load_spec(path))
    assert "parameters:" in str(info.value)


@pytest.mark.parametrize(
    ("fn", "params", "field"),
    [
        (routing_tightness, {"noize": "gumbel"}, "'noize'"),
        (routing_tightness, {"noise": "cauchy"}, "noise"),
        (routing_tightness, {"M": 1}, "M must be"),
        (routing_tightness, {"M": 2.0}, "M must be"),
        (routing_tightness, {"starts": 0}, "starts"),
        (routing_tightness, {"c": -1.0}, "c must be"),
        (routing_tightness, {"scale": 0.0}, "scale"),
        (floor_attainment, {"modle": "witness"}, "'modle'"),
        (floor_attainment, {"model": "cnn"}, "model must be"),
        (floor_attainment, {"setting": 5}, "setting"),
        (floor_attainment, {"gamma": [2.0, 1.0]}, "gamma"),
        (floor_attainment, {"alpha": 1.0}, "alpha"),
        (floor_attainment, {"floor": 1.5}, "floor"),
        (floor_attainment, {"n": 0}, "n must be"),
        (floor_attainment, {"level": 1.0}, "level"),
        (floor_attainment, {"ramp": 1.0}, "ramp"),
        (floor_attainment, {"restarts": 0}, "restarts"),
    ],
)
def test_bad_params_are_refused_naming_the_parameter(fn, params, field):
    with pytest.raises(ValueError, match=field):
        fn(params)


def test_defaults_name_every_field_the_tasks_record():
    r = result(floor_attainment, {"n": 500})
    assert {k for k in ATTAINMENT_DEFAULTS if k not in ("alpha", "beta", "gamma", "ramp", "restarts")} <= set(
        r
    )
    t = result(routing_tightness, {"M": 2, "starts": 1})
    assert {k for k in TIGHTNESS_DEFAULTS} <= set(t)


def test_dask_cluster_equals_sequential_bit_for_bit(tmp_path, client):
    """One small two-worker loopback cluster: the search tasks give the same JSON as in-process."""
    text = ATTAINMENT.replace('["witness", "relu-cnn", "lookup-search", "linear-cnn"]', '["lookup-search"]')
    spec = load_spec(write_spec(tmp_path, text, "dask"))
    tight = load_spec(write_spec(tmp_path, TIGHTNESS.replace("seed = [0, 1]", "seed = [0]"), "tdask"))
    for s in (spec, tight):
        on_dask = run_sweep(s, store_path=tmp_path / f"{s.name}-dask.sqlite", client=client, quiet=True)
        assert on_dask.backend.startswith("dask") and on_dask.failed == 0
    for s in (spec, tight):
        run_sweep(s, store_path=tmp_path / f"{s.name}-seq.sqlite", sequential=True, quiet=True)
        keys = [t.key for t in expand(s)]
        with (
            SweepStore(tmp_path / f"{s.name}-dask.sqlite") as a,
            SweepStore(tmp_path / f"{s.name}-seq.sqlite") as b,
        ):
            assert [r.result_text for r in a.rows(keys)] == [r.result_text for r in b.rows(keys)]
