"""Table 11's plain-GD rate sweeps read beside the paper (lab.chen2022.sweep_studies): where the paper's
pattern shows only partly, and which rows a stopping rule (not divergence) ended early."""

from lab.chen2022.sweep_studies import gd_rate_study


def _group(eta, lb, done, accuracy=None, diverged=None, steps=None):
    metrics = {}
    if accuracy is not None:
        metrics["test_accuracy"] = {"mean": accuracy, "std": 0.1}
    if diverged:
        metrics["diverged_at"] = {"n": diverged, "min": 40.0}
    if steps:
        metrics["steps"] = {"min": float(steps[0]), "max": float(steps[1])}
    return {"fields": {"eta": eta, "load_balancing": lb}, "done": done, "metrics": metrics}


def test_a_rate_where_some_runs_with_lb_finish_and_every_run_without_diverges_shows_the_pattern_partly():
    report = {
        "groups": [
            _group(1.0, "switch", 5, accuracy=99.0, steps=(1500, 1500)),
            _group(1.0, "none", 5, accuracy=99.0, steps=(1500, 1500)),
            _group(10.0, "switch", 5, accuracy=99.8, diverged=3, steps=(460, 1500)),
            _group(10.0, "none", 5, diverged=5, steps=(40, 60)),
        ]
    }
    study = gd_rate_study(report)
    assert study["pattern"] == [] and study["both"] == [1.0]
    assert [row["eta"] for row in study["partial"]] == [10.0]
    assert study["stopped_early"] == []  # the short rows diverged: no stopping rule ended them


def test_rows_that_stayed_finite_but_stopped_before_the_longest_run_are_named():
    report = {
        "groups": [
            _group(0.1, "switch", 3, accuracy=51.0, steps=(501, 501)),
            _group(0.1, "none", 3, accuracy=50.0, steps=(501, 501)),
            _group(10.0, "switch", 3, accuracy=77.0, steps=(74, 83)),
            _group(10.0, "none", 3, accuracy=77.0, steps=(60, 88)),
        ]
    }
    early = gd_rate_study(report)["stopped_early"]
    assert sorted((row["eta"], row["load_balancing"]) for row in early) == [(10.0, "none"), (10.0, "switch")]
