"""Checks of Shazeer et al. 2017: noisy top-k gating and the load estimator (C1-C3)."""
