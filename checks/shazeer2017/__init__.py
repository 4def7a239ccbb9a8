"""Checks of Shazeer et al. 2017: noisy top-k gating and the load estimator (C1-C3)."""

from pathlib import Path

from lab.core.descriptions import load_paper

PAPER = load_paper(Path(__file__).with_name("paper.toml"))  # the paper, as data
