"""Makkuva et al. 2020: the gated regression MoE, the losses L4 and L_log, their fits and Fig. 1."""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "fig1_experiment",
    "fit",
    "gated_regression",
    "losses",
]
