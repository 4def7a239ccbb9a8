"""A sweep report's figure: its task's own (`TaskType.figure`), drawn from the report alone, else bars."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lab.chen2022.proof_chain import PROOF_CHAIN_FITTED, RATE_PANELS, proof_chain_figure
from lab.chen2022.searches import NOISE_COLOURS, tightness_figure
from lab.chen2022.sweep_studies import GD_RATE_SWEEPS, gd_rate_figure
from lab.cli.main import main
from lab.core import plots
from lab.core.tasks import register_task
from lab.sweeps.report import draw_figure

RESULTS = Path(__file__).resolve().parents[2] / "results"
pytestmark = pytest.mark.skipif(not plots.available(), reason="matplotlib is not installed")


def _committed(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def _titles(fig) -> list[str]:
    titles = [ax.get_title() for ax in fig.axes]
    plots.pyplot().close(fig)
    return titles


def test_the_proof_chain_figure_has_one_panel_per_fitted_quantity():
    """Theorem 4.2's rates against d: one panel per quantity the report fits, E.3's ratio among them."""
    fig = proof_chain_figure(_committed("proof_chain/proof_chain"))
    assert _titles(fig) == [label for _, label, _, _ in RATE_PANELS]
    assert {key for key, *_ in RATE_PANELS} == set(PROOF_CHAIN_FITTED)


@pytest.mark.parametrize(("name", "how"), GD_RATE_SWEEPS)
def test_each_gd_rate_sweep_draws_its_own_panel(name, how):
    assert _titles(gd_rate_figure(_committed(f"sweeps/{name}"))) == [
        f"Table 11, plain GD, {how} (dashed: the paper's rows)"
    ]


def test_the_tightness_figure_draws_each_noise_family_beside_both_bounds(tmp_path):
    """Lemma 5.1's constant against M: κM² and 2κ as lines in both panels, each family's best constant."""
    report = _committed("sweeps/tightness")
    fig = tightness_figure(report)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    paper = fig.axes[0].get_lines()[0].get_ydata()
    assert len(_titles(fig)) == 2
    Ms = sorted({r["params"]["M"] for r in report["runs"]})
    assert list(paper) == [M**2 for M in Ms]
    assert labels[:2] == ["paper: κM² (Lemma 5.1)", "lab: 2κ (proven for every M)"]
    assert [lab.split(":")[0] for lab in labels[2:]] == list(NOISE_COLOURS)
    assert draw_figure(report, tmp_path / "t.png") == tmp_path / "t.png"


def test_another_replicate_sweep_draws_the_bar_chart(tmp_path):
    report = _committed("sweeps/table10_sigma0")
    assert report["task"] == "replicate" and gd_rate_figure(report) is None
    assert draw_figure(report, tmp_path / "t.png") == tmp_path / "t.png"
    assert (tmp_path / "t.png").read_bytes().startswith(b"\x89PNG")


DRAWN: list[str] = []


def _figure(report):
    DRAWN.append(report["sweep"])
    fig, _ = plots.pyplot().subplots()
    return fig


@register_task("test-figure", defaults={"x": 1}, figure=_figure)
def _task(params):
    return {"v": params["x"]}


def test_the_writer_draws_the_tasks_figure(tmp_path, registered):
    registered(_task)
    DRAWN.clear()
    spec = tmp_path / "s.toml"
    store = (tmp_path / "s.sqlite").as_posix()
    spec.write_text(f'[sweep]\ntask = "test-figure"\nstore = "{store}"\n[grid]\nx = [1, 2]\n')
    assert main(["sweep", "run", str(spec), "--sequential", "--quiet"]) == 0
    assert main(["sweep", "report", str(spec), "--out", str(tmp_path / "out")]) == 0
    assert DRAWN == ["s"] and (tmp_path / "out" / "s.png").is_file()
    assert "![s](s.png)" in (tmp_path / "out" / "s.md").read_text()


def test_sweep_figure_redraws_a_committed_report_without_its_store(tmp_path, capsys, monkeypatch):
    report = tmp_path / "proof_chain.json"
    shutil.copy(RESULTS / "proof_chain" / "proof_chain.json", report)
    assert main(["sweep", "figure", str(report)]) == 0
    assert (tmp_path / "proof_chain.png").read_bytes().startswith(b"\x89PNG")
    assert capsys.readouterr().out == f"wrote {tmp_path / 'proof_chain.png'}\n"
    assert main(["sweep", "figure", str(tmp_path / "none.json")]) == 2
    assert capsys.readouterr().err.strip() == f"python -m lab: error: {tmp_path / 'none.json'}: missing"
    monkeypatch.setattr(plots, "available", lambda: False)
    assert main(["sweep", "figure", str(report)]) == 2
    assert 'pip install "moe-lab[plots]"' in capsys.readouterr().err
