"""Chen et al. 2022: the data model, the MoE layer, routing, Theorem 4.1 and Algorithm 1.

Def. 3.1 data, the MoE layer and its gradients, routing (Lemma 5.1), the patch-wise classifiers
of Theorem 4.1, Algorithm 1, the single-CNN baselines and the replicated tables.
"""

__all__ = [  # the public modules, each a one-line docstring away from what it holds
    "baselines",
    "data",
    "data_views",
    "declarations",
    "linear_optimum",
    "load_balancing",
    "metrics",
    "model",
    "patch_functions",
    "patch_optimum",
    "patchwise",
    "plan",
    "proof_chain",
    "proof_monitors",
    "recertify",
    "replicate",
    "replicate_analysis",
    "replicate_report",
    "replicate_runs",
    "routing",
    "routing_coupling",
    "routing_exact",
    "routing_tightness",
    "runs",
    "searches",
    "structured",
    "sweep_studies",
    "sweep_tasks",
    "tables",
    "theorem41_figure",
    "theorem_sets",
    "timing",
    "training",
]
