"""lab.makkuva2020.fig1's replication target without the optional plots extra: reports, no figure."""

import json
from dataclasses import replace

from lab.cli.main import main
from lab.core import plots
from lab.makkuva2020 import fig1


def test_without_matplotlib_the_json_and_table_are_written_and_the_figure_skipped(
    tmp_path, monkeypatch, capsys
):
    tiny = replace(
        fig1.TIER_CONFIGS["quick"],
        sgd_steps=40,
        em_n=2000,
        em_iters=3,
        log_T=5,
        log_per_step=200,
        sign_n=2000,
        record_every=20,
    )
    monkeypatch.setitem(fig1.TIER_CONFIGS, "quick", tiny)
    monkeypatch.setattr(plots, "available", lambda: False)
    out, js = tmp_path / "out", tmp_path / "fig1.json"
    argv = [
        "replicate",
        "makkuva-fig1",
        "--tier",
        "quick",
        "--seeds",
        "2",
        "--out",
        str(out),
        "--json",
        str(js),
    ]
    assert main(argv) == 0
    assert (out / "makkuva_fig1.md").exists() and len(json.loads(js.read_text())["runs"]) == 2
    assert not (out / "makkuva_fig1.png").exists()
    assert capsys.readouterr().err.count('pip install "moe-lab[plots]"') == 1
