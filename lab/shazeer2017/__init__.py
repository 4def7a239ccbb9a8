"""Shazeer et al. 2017: noisy top-k gating, Importance, the smooth load estimator and the balancing losses."""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "gating",
]
