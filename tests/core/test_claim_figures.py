"""The claims' figures: drawn from a verify file's records into figures/ beside it, by `verify --json` and
again by `verify --figures-only`; a damaged file is one line (exit 2)."""

import json
import shutil
from pathlib import Path

import pytest

from lab.cli.main import main
from lab.core import claim_figures, plots, registry

COMMITTED = Path(__file__).parents[2] / "results" / "verify.json"
pytestmark = pytest.mark.skipif(not plots.available(), reason="matplotlib is an extra")


def test_every_claim_figure_is_registered_with_a_claim_of_the_lab():
    figures = registry.declared("figure")
    assert "theorem41.png" in figures
    assert {f.claim for f in figures.values()} <= registry.known_claims()


def test_only_the_figures_of_claims_the_run_holds_are_drawn(tmp_path):
    records = json.loads(COMMITTED.read_text())["records"]
    others = [r for r in records if r["claim"] != "B2"]
    assert claim_figures.draw(others, tmp_path / "verify.json") == []
    lines = claim_figures.draw(records, tmp_path / "verify.json")
    assert lines == [f"wrote {tmp_path / 'figures' / 'theorem41.png'}"]


def test_figures_only_redraws_from_the_file_and_names_a_damaged_one(tmp_path, capsys):
    shutil.copy(COMMITTED, tmp_path / "verify.json")
    assert main(["verify", "--figures-only", str(tmp_path / "verify.json")]) == 0
    assert (tmp_path / "figures" / "theorem41.png").read_bytes()[:4] == b"\x89PNG"
    (tmp_path / "bad.json").write_text("{")
    assert main(["verify", "--figures-only", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--figures-only" in err and "bad.json" in err
