"""Switch Transformer's router (softmax, top-1 dispatch) and its auxiliary loss N·Σ f_i P_i."""

from __future__ import annotations

import numpy as np


def router_probabilities(logits: np.ndarray) -> np.ndarray:
    """p_i(x) = softmax(h(x))_i per token: a (tokens, N) array whose rows sum to 1."""
    logits = np.asarray(logits, dtype=float)
    if logits.ndim != 2 or logits.shape[1] < 2 or logits.shape[0] < 1:
        raise ValueError(f"logits must be a (tokens >= 1, N >= 2) array, got shape {logits.shape}")
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def dispatch_fractions(probabilities: np.ndarray) -> np.ndarray:
    """f_i: the fraction of tokens whose top-1 expert is i."""
    n_experts = probabilities.shape[1]
    return np.bincount(probabilities.argmax(axis=1), minlength=n_experts) / probabilities.shape[0]


def auxiliary_loss(probabilities: np.ndarray) -> float:
    """N·Σ_i f_i P_i, eq. (4) without the coefficient α."""
    n_experts = probabilities.shape[1]
    return float(n_experts * dispatch_fractions(probabilities) @ probabilities.mean(axis=0))


def balanced_logits(rng: np.random.Generator, n_experts: int, per_expert: int, scale: float) -> np.ndarray:
    """Random logits whose top-1 dispatch sends exactly `per_expert` tokens to every expert.

    Each block of `per_expert` tokens gets Gaussian logits of standard deviation `scale`, its own
    expert's logit then raised above the others by a positive margin."""
    if n_experts < 2 or per_expert < 1 or not scale > 0:
        raise ValueError(
            f"need n_experts >= 2, per_expert >= 1 and scale > 0, got {n_experts}, {per_expert}, {scale}"
        )
    logits = rng.normal(0.0, scale, size=(n_experts * per_expert, n_experts))
    owner = np.repeat(np.arange(n_experts), per_expert)
    rows = np.arange(logits.shape[0])
    logits[rows, owner] = logits.max(axis=1) + rng.uniform(0.1, 1.0, size=logits.shape[0]) * scale
    return logits


def crowded(logits: np.ndarray, per_expert: int) -> np.ndarray:
    """The premise broken: expert 1's block of tokens is routed to expert 0 too (dispatch unbalanced)."""
    moved = logits.copy()
    block = slice(per_expert, 2 * per_expert)
    moved[block, 0] = moved[block].max(axis=1) + 1.0
    return moved
