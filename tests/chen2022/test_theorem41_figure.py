"""Theorem 4.1's figure draws from B2's committed records, and its panels hold the records' values."""

import json
from pathlib import Path

import pytest

from lab.chen2022 import theorem41_figure
from lab.core import plots

RECORDS = json.loads((Path(__file__).parents[2] / "results" / "verify.json").read_text())["records"]


def test_the_uniform_laws_panel_reads_each_witness_and_its_floor():
    rows = theorem41_figure._uniform_witnesses(theorem41_figure._by_key(RECORDS))
    assert rows[0][0] == "α, γ equal laws" and len(rows) >= 3
    for _, floor, error, (low, high) in rows:
        assert 0 < floor <= 0.125 and low <= error <= high


@pytest.mark.skipif(not plots.available(), reason="matplotlib is an extra")
def test_it_draws_a_png_from_the_committed_records(tmp_path):
    path = theorem41_figure.draw(RECORDS, tmp_path / theorem41_figure.FIGURE.name)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
