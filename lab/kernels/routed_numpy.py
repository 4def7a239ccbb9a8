"""Plain NumPy twins of the Numba kernels in `lab.kernels.routed`: same signatures, same results.

The twins are the reference the kernels are tested against and benchmarked beside. They use
the straightforward dense formulas of `lab.kernels.dense` and the same counter-based noise, and
they check their arguments with the kernels' own checks (`lab.kernels._checks`), so a bad code,
count, seed, shape or route raises the same error on both backends.
"""

from __future__ import annotations

import numpy as np

from lab.kernels import _checks
from lab.kernels._shared import NOISE_CODES
from lab.kernels.activations import ACTIVATIONS
from lab.kernels.dense import (  # unchecked: the twins' arguments pass `lab.kernels._checks` once
    expert_gradient,
    expert_outputs,
    gate_values,
    logistic_loss_derivative,
    routed_expert_outputs,
)

__all__ = [
    "NOISE_CODES",
    "dense_forward",
    "noise",
    "perturbed_argmax",
    "routed_backward",
    "routed_forward",
    "routed_step",
    "routing_counts",
    "softmax_gate",
    "softmax_logit_gradient",
    "stream_key",
]

_NAMES = list(ACTIVATIONS)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def stream_key(seed: int) -> np.uint64:
    """Key of the noise stream for an integer seed in [0, 2**64) (SplitMix64 of the seed)."""
    seed = _checks.stream_key(seed)
    with np.errstate(over="ignore"):
        return _mix(np.uint64(seed) * _GOLDEN + _GOLDEN)


def _uniform01(key: np.uint64, index: np.ndarray) -> np.ndarray:
    """Counter-based U(0, 1) draws number `index` of the stream `key` (bit-identical to the kernel)."""
    with np.errstate(over="ignore"):
        z = _mix(key + (index.astype(np.uint64) + np.uint64(1)) * _GOLDEN)
    return ((z >> np.uint64(11)).astype(np.float64) + 0.5) / 9007199254740992.0


def noise(key: np.uint64, index: np.ndarray, code: int, a: float, b: float) -> np.ndarray:
    """Twin of `kernels.noise`: draws `index` of stream `key`, uniform [a, b), N(0, a²) or Gumbel(0, a)."""
    key, index, code, a, b = _checks.noise(key, index, code, a, b)
    key, index = np.uint64(key), index.astype(np.uint64)
    if code == 0:
        return a + (b - a) * _uniform01(key, index)
    if code == 1:
        u1 = _uniform01(key, np.uint64(2) * index)
        u2 = _uniform01(key, np.uint64(2) * index + np.uint64(1))
        return a * np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return -a * np.log(-np.log(_uniform01(key, index)))


def routed_forward(x, W, routes, act):
    """Twin of `kernels.routed_forward`: dense forward, then each sample's routed expert."""
    x, W, routes, act = _checks.routed_forward(x, W, routes, act)
    name = _NAMES[act]
    M, J, d = W.shape
    z_all = (x @ W.reshape(M * J, d).T).reshape(x.shape[0], x.shape[1], M, J)
    z = z_all[np.arange(x.shape[0]), :, routes, :]
    f = np.take_along_axis(expert_outputs(x, W, name), routes[:, None], axis=1)[:, 0]
    return f, z


def routed_backward(x, z, routes, coef, M, act):
    """Twin of `kernels.routed_backward` (the sum in (E.2)), from the filters implied by z."""
    x, z, routes, coef, M, act = _checks.routed_backward(x, z, routes, coef, M, act)
    _, sigma_prime = ACTIVATIONS[_NAMES[act]]
    grad = np.zeros((M, z.shape[2], x.shape[2]), dtype=x.dtype)
    for m in range(M):
        mine = routes == m
        grad[m] = np.einsum("npj,npd->jd", sigma_prime(z[mine]) * coef[mine, None, None], x[mine])
    return grad


def dense_forward(x, W, act):
    """Twin of `kernels.dense_forward`: f_m(x_i) for all experts (3.1)."""
    x, W, act = _checks.dense_forward(x, W, act)
    return expert_outputs(x, W, _NAMES[act])


def perturbed_argmax(h, seed, noise_code, a, b):
    """Twin of `kernels.perturbed_argmax`: argmax_m {h_{i,m} + r_{i,m}} with the same noise."""
    h, seed, noise_code, a, b = _checks.perturbed_argmax(h, seed, noise_code, a, b)
    n, M = h.shape
    r = noise(stream_key(seed), np.arange(n * M), noise_code, a, b).reshape(n, M)
    return np.argmax(h + r, axis=1)


def routing_counts(h, draws, seed, noise_code, a, b):
    """Twin of `kernels.routing_counts`: win counts of each expert over `draws` draws for one h."""
    h, draws, seed, noise_code, a, b = _checks.routing_counts(h, draws, seed, noise_code, a, b)
    M = h.shape[0]
    r = noise(stream_key(seed), np.arange(draws * M), noise_code, a, b).reshape(draws, M)
    return np.bincount(np.argmax(h + r, axis=1), minlength=M)


def routed_step(x, W, routes, margin_scale, act):
    """Twin of `kernels.routed_step`: f, then ∇_W of (3.3) by (E.2) with `dense.expert_gradient`."""
    x, W, routes, margin_scale, act = _checks.routed_step(x, W, routes, margin_scale, act)
    name = _NAMES[act]
    f = routed_expert_outputs(x, W, routes, name)
    coef = logistic_loss_derivative(margin_scale * f) * margin_scale / x.shape[0]
    return f, expert_gradient(x, W, routes, coef, name)


def softmax_gate(h, routes):
    """π = softmax(h) and the routed gate values g_i = π_{i, m_i}."""
    h, routes = _checks.softmax_gate(h, routes)
    pi = gate_values(h)
    return pi[np.arange(h.shape[0]), routes], pi


def softmax_logit_gradient(pi, routes, c):
    """Twin of `kernels.softmax_logit_gradient`: ∂L/∂h = c (1[m = m_i] − π) (E.1)."""
    pi, routes, c = _checks.softmax_logit_gradient(pi, routes, c)
    dh = -c[:, None] * pi
    dh[np.arange(pi.shape[0]), routes] += c
    return dh
