"""Expert activations σ of eq. (3.1) and Table 7 with their derivatives σ' (complex-step safe)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import special

CELU_ALPHA = 1.0
_SQRT_HALF = np.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def _positive(z: np.ndarray) -> np.ndarray:
    return np.real(z) > 0


def _gelu(z: np.ndarray) -> np.ndarray:
    return z * 0.5 * (1.0 + special.erf(z * _SQRT_HALF))


def _gelu_prime(z: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + special.erf(z * _SQRT_HALF)) + z * _INV_SQRT_2PI * np.exp(-0.5 * z * z)


def _celu(z: np.ndarray) -> np.ndarray:
    neg = CELU_ALPHA * np.expm1(np.minimum(np.real(z), 0.0) / CELU_ALPHA + 1j * np.imag(z) / CELU_ALPHA)
    return np.where(_positive(z), z, neg if np.iscomplexobj(z) else np.real(neg))


def _celu_prime(z: np.ndarray) -> np.ndarray:
    return np.where(_positive(z), 1.0, np.exp(np.minimum(np.real(z), 0.0) / CELU_ALPHA))


def sech2(z: np.ndarray) -> np.ndarray:
    """tanh' z = sech² z as 4u/(1 + u)², u = e^{−2|z|}: full precision where 1 − tanh² z cancels."""
    u = np.exp(-2.0 * np.abs(z))
    return 4.0 * u / ((1.0 + u) * (1.0 + u))


ACTIVATIONS: dict[str, tuple[Callable, Callable]] = {
    "cubic": (lambda z: z * z * z, lambda z: 3.0 * (z * z)),  # z**3 is a slow pow() call
    "linear": (lambda z: z, lambda z: np.ones_like(z)),
    "relu": (
        lambda z: np.where(_positive(z), z, 0.0 * z),
        lambda z: np.where(_positive(z), 1.0, 0.0),
    ),
    "celu": (_celu, _celu_prime),
    "gelu": (_gelu, _gelu_prime),
    "tanh": (np.tanh, sech2),
}

ACTIVATION_CODES = {name: code for code, name in enumerate(ACTIVATIONS)}
ODD_ACTIVATIONS = frozenset({"cubic", "linear", "tanh"})  # σ(−z) = −σ(z), so ±σ(z) = σ(±z)


def activation(name: str) -> tuple[Callable, Callable]:
    """(σ, σ') for an activation name from Table 7: cubic, linear, relu, celu, gelu, tanh."""
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]
