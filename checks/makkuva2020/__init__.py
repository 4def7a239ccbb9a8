"""Checks of Makkuva et al. 2020: L4 landscape (D1, D2) and robustness (D5), Fig. 1 (D3, D4), GRU (D6)."""

from pathlib import Path

from lab.core.descriptions import load_paper

PAPER = load_paper(Path(__file__).with_name("paper.toml"))  # the paper, as data
