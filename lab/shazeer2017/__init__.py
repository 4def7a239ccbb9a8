"""Shazeer et al. 2017: noisy top-k gating, Importance, the smooth load estimator and the balancing losses."""
