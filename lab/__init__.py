"""moe-lab's science: Def. 3.1 data, the MoE layer of Chen et al. 2022, exact gradients, kernels."""

__version__ = "0.1.0"
