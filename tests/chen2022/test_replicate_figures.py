"""A replicated table's figure (`cells_figure`): drawn where its summary is written, redrawn from the
committed summaries alone by `replicate TARGET --figure-only`, which trains nothing and rewrites none."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lab.chen2022 import replicate as R
from lab.chen2022.replicate_report import VARIANT_COLOURS, cells_figure
from lab.cli.main import main
from lab.core import plots

RESULTS = Path(__file__).resolve().parents[2] / "results" / "replicate"
pytestmark = pytest.mark.skipif(not plots.available(), reason="matplotlib is not installed")


def _committed(stem: str) -> dict:
    return json.loads((RESULTS / f"{stem}.json").read_text())


@pytest.mark.parametrize("target", ["table1", "table3", "table7", "table10", "table11"])
def test_each_table_has_one_panel_per_setting_and_one_series_per_committed_variant(target):
    summaries = {v: _committed(R.report_stem(target, v)) for v in VARIANT_COLOURS}
    fig = cells_figure(target, summaries)
    settings = sorted({c["setting"] for c in summaries["paper"]["cells"]})
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == [f"setting {s}" for s in settings]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    plots.pyplot().close(fig)
    assert labels[0] == "paper ± its sd" and [lab.split(":")[0] for lab in labels[1:]] == [
        "lab, variant paper",
        "lab, variant reference-code",
    ]


def test_cells_figure_refuses_an_unknown_target_or_variant():
    with pytest.raises(ValueError, match=r"^target must be one of"):
        cells_figure("table2", {"paper": _committed("table1")})
    with pytest.raises(ValueError, match=r"^summaries must map"):
        cells_figure("table1", {"float32": _committed("table1_float32")})


def test_figure_only_redraws_from_the_committed_summaries_and_rewrites_none(tmp_path, capsys, monkeypatch):
    for stem in ("table11", "table11_reference-code"):
        shutil.copy(RESULTS / f"{stem}.json", tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    monkeypatch.setattr(R, "train_missing", lambda *a, **k: pytest.fail("--figure-only trains nothing"))
    assert main(["replicate", "table11", "--figure-only", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"wrote {tmp_path / 'table11.png'}\n"
    assert (tmp_path / "table11.png").read_bytes().startswith(b"\x89PNG")
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.json")} == before  # no summary, no analysis
    assert main(["replicate", "table7", "--figure-only", "--out", str(tmp_path)]) == 2
    assert "no summary of table7 to draw" in capsys.readouterr().err
    assert main(["replicate", "table11", "--figure-only", "--timing", "t.json", "--out", str(tmp_path)]) == 2
