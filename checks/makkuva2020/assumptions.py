"""Assumptions shared by the checks of Makkuva et al. 2020 (D1–D6); the paper leaves them open.

Every check states them in its params:
* regularisers μ = 0.05, λ = 4, δ = 2 — they satisfy the derived conditions λ·min π > μ > 0 and
  0 < δ < 4λ·min π (`lab.makkuva2020.losses`); δ = 2 rather than a small value because δ is the only
  restoring force outside span(A*) and sets SGD's noise floor there;
* ‖a_i*‖ = 1; W* convention w_k* = 0, compared after re-referencing to the estimate's last
  expert; "recovered" means E_reg ≤ 0.05 (correlation ≥ 0.95 with every true regressor).
BLAS is pinned to one thread inside the checks: on the shared 2-core machine a two-thread
OpenBLAS made the skinny (n × 10) products up to 20× slower.
"""

from __future__ import annotations

import functools

from threadpoolctl import threadpool_limits

from lab.makkuva2020.losses import L4Regularisers

REG = L4Regularisers(mu=0.05, lam=4.0, delta=2.0)
SGD_LR = 0.006
EPS_REC = 0.05
LEVEL = 0.99
ASSUMPTIONS = {
    "mu": REG.mu,
    "lam": REG.lam,
    "delta": REG.delta,
    "unit_regressors": True,
    "w_k": "0 (re-referenced to the estimate's last expert)",
}


def one_blas_thread(func):
    """Run `func` with BLAS pinned to one thread (see the module docstring)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with threadpool_limits(limits=1, user_api="blas"):
            return func(*args, **kwargs)

    return wrapper
