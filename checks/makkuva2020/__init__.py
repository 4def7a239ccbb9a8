"""Checks of Makkuva et al. 2020: L4 landscape (D1, D2) and robustness (D5), Fig. 1 (D3, D4), GRU (D6)."""
