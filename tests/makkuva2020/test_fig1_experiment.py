"""The `makkuva-fig1` replication target (`fig1_experiment`): table, PNG and JSON, and without matplotlib."""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from lab.cli.main import main
from lab.core import plots
from lab.makkuva2020 import fig1_experiment
from tests.rounding import rounded

FIG1 = Path(__file__).resolve().parents[2] / "results" / "replicate" / "makkuva_fig1.json"


@pytest.fixture
def replicate_tiny(tmp_path, monkeypatch):
    """`python -m lab replicate makkuva-fig1` at a shrunken quick tier; returns (exit code, out, json)."""
    tiny = replace(
        fig1_experiment.TIER_CONFIGS["quick"],
        sgd_steps=40,
        em_n=2000,
        em_iters=3,
        log_T=5,
        log_per_step=200,
        sign_n=2000,
        record_every=20,
    )
    monkeypatch.setitem(fig1_experiment.TIER_CONFIGS, "quick", tiny)
    out, js = tmp_path / "out", tmp_path / "fig1.json"

    def run(*extra: str) -> tuple[int, object, object]:
        argv = ["replicate", "makkuva-fig1", "--tier", "quick", "--seeds", "2", "--out", str(out)]
        return main([*argv, "--json", str(js), *extra]), out, js

    return run


def test_fig1_replication_writes_table_png_and_json(replicate_tiny):
    code, out, js = replicate_tiny("--quiet")
    assert code == 0
    table = (out / "makkuva_fig1.md").read_text()
    assert "Paper's claim" in table and "Lab's reading" in table and "| mean |" in table
    assert (out / "makkuva_fig1.png").read_bytes()[:4] == b"\x89PNG"
    payload = json.loads(js.read_text())
    assert payload["target"] == "makkuva-fig1" and len(payload["runs"]) == 2
    assert payload["means"] == fig1_experiment.mean_errors(payload["runs"])
    em = [run["em"]["e_reg"] for run in payload["runs"]]
    assert payload["means"]["em"]["e_reg"] == pytest.approx(sum(em) / 2)
    assert main(["replicate", "makkuva-fig1", "--seeds", "1", "--out", str(out), "--quiet"]) == 2


def test_the_committed_means_are_the_writers_over_the_committed_runs():
    committed = json.loads(FIG1.read_text())
    assert rounded(committed["means"]) == rounded(fig1_experiment.mean_errors(committed["runs"]))


def test_without_matplotlib_the_json_and_table_are_written_and_the_figure_skipped(
    replicate_tiny, monkeypatch, capsys
):
    monkeypatch.setattr(plots, "available", lambda: False)
    code, out, js = replicate_tiny()
    assert code == 0
    assert (out / "makkuva_fig1.md").exists() and len(json.loads(js.read_text())["runs"]) == 2
    assert not (out / "makkuva_fig1.png").exists()
    assert capsys.readouterr().err.count('pip install "moe-lab[plots]"') == 1


@pytest.mark.skipif(not plots.available(), reason="matplotlib is not installed")
def test_figure_only_redraws_fig1_from_the_committed_file_alone(tmp_path, capsys, monkeypatch):
    """The committed file stores every init's curves: Fig. 1 (a)–(c) is redrawn from it, computing nothing."""
    monkeypatch.setattr(fig1_experiment, "run_fig1", lambda *a, **k: pytest.fail("--figure-only computes"))
    shutil.copy(FIG1, tmp_path / "makkuva_fig1.json")
    before = (tmp_path / "makkuva_fig1.json").read_bytes()
    assert main(["replicate", "makkuva-fig1", "--figure-only", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / fig1_experiment.FIGURE_NAME}\n"
    assert (tmp_path / fig1_experiment.FIGURE_NAME).read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "makkuva_fig1.json").read_bytes() == before
    fig = fig1_experiment._fig1_figure(json.loads(before)["runs"])
    titles = [ax.get_title() for ax in fig.axes]
    curves = [len(ax.get_lines()) for ax in fig.axes]
    plots.pyplot().close(fig)
    inits = len(json.loads(before)["runs"])
    assert titles == [title for title, _, _ in fig1_experiment.FIG1_PANELS]
    assert curves == [3 * (inits + 1), 3 * (inits + 1), inits + 1]  # every init faint, the median bold
    (tmp_path / "makkuva_fig1.json").unlink()
    assert main(["replicate", "makkuva-fig1", "--figure-only", "--out", str(tmp_path)]) == 2
    assert "makkuva_fig1.json: missing" in capsys.readouterr().err
