"""Checks of Chen et al. 2022.

Data and gradients (A1, A5), Theorem 4.1 (B1, B2), routing (B4-B6), the exploration stage (B10),
training (B3, B7-B9, B12).
"""

from pathlib import Path

from lab.core.descriptions import load_paper

PAPER = load_paper(Path(__file__).with_name("paper.toml"))  # the paper, as data
