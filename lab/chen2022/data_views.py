"""Views of Chen et al.'s data (Def. 3.1) that Theorem 4.2's proof reads (App. D–E), shared by the checks
and the proof-chain monitors: the noise patches ξ, the centre-only router input x̄ and the scales' moments.
"""

from __future__ import annotations

import numpy as np

from lab.chen2022.data import CENTER, Dataset


def uniform_moment(low: float, high: float, power: int) -> float:
    """E[a^power] for a ~ Uniform(low, high)."""
    return (high ** (power + 1) - low ** (power + 1)) / ((power + 1) * (high - low))


def noise_mask(data: Dataset) -> np.ndarray:
    """(n, P), True at the P − 3 noise patches ξ_{i,p}: the patches no signal role took (Def. 3.1)."""
    mask = np.ones(data.x.shape[:2], dtype=bool)
    mask[np.arange(data.n)[:, None], data.positions] = False
    return mask


def noise_patches(data: Dataset) -> np.ndarray:
    """The P − 3 noise patches ξ_{i,p} of every sample, shape (n(P − 3), d)."""
    return data.x[noise_mask(data)]


def centre_router_input(data: Dataset) -> np.ndarray:
    """x̄_i's router input: only the cluster-centre patch β_i c_{k_i} (App. E.2)."""
    return data.x[np.arange(data.n), data.positions[:, CENTER]]
