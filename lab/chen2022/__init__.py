"""Chen et al. 2022: the data model, the MoE layer, routing, Theorem 4.1 and Algorithm 1.

Def. 3.1 data, the MoE layer and its gradients, routing (Lemma 5.1), the patch-wise classifiers
of Theorem 4.1, Algorithm 1, the single-CNN baselines and the replicated tables.
"""
