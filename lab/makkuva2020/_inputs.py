"""Argument checks shared by the public functions of `lab.makkuva2020` (built on `lab.core.validate`).

Each helper returns the checked value, never a copy that changes a number, and raises a TypeError
or `lab.core.errors.InputError` whose message starts with the argument's name.
"""

from __future__ import annotations

import math

import numpy as np

from lab.core import validate
from lab.core.errors import InputError
from lab.kernels.activations import ACTIVATIONS

MIXTURE_TOL = 1e-6  # |Σ π − 1| allowed for mixture weights π = E[p*] (quadrature gives ~1e-15)


def number(value: object, name: str, low: float | None = None, strict: bool = False, why: str = "") -> object:
    """A finite real number (Python or NumPy, not a bool) >= low (> low if strict), returned as it is."""
    allowed = "a finite number" + (f" {'>' if strict else '>='} {low:g}" if low is not None else "") + why
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or (low is not None and (value < low or (strict and value == low))):
        raise InputError(f"{name} must be {allowed}, got {value!r}")
    return value


def constant(value: object, name: str) -> None:
    """A finite non-zero number (the Hermite constants c, c')."""
    if validate.real(value, name) == 0.0:
        raise InputError(f"{name} must be a finite non-zero number, got 0")


def vector(value: object, name: str, d: int | None = None) -> np.ndarray:
    """A finite real vector (d,), d >= 1."""
    a = validate.array(value, name, ndim=1, labels="(d,)", nonempty=(0,), cast=False)
    if d is not None:
        validate.same_shape(name, a, (d,), f"(d,) with d = {d}")
    return a


def rows(value: object, name: str, labels: str, d: int | None = None, nonempty=(0,)) -> np.ndarray:
    """A finite real matrix with `labels` axes, e.g. "(n, d)", and (if given) d columns."""
    a = validate.array(value, name, ndim=2, labels=labels, nonempty=nonempty, cast=False)
    if d is not None:
        validate.same_shape(name, a, (a.shape[0], d), f"{labels} with d = {d}")
    return a


def per_sample(value: object, name: str, n: int) -> np.ndarray:
    a = validate.array(value, name, ndim=1, labels="(n,)", cast=False)
    validate.same_shape(name, a, (n,), "(n,) with n = len(x)")
    return a


def act(value: object) -> str:
    return validate.choice(value, "act", ACTIVATIONS)


def mixture(pi: object, k: int | None = None) -> np.ndarray:
    """Mixture weights π (k,): entries in [0, 1] summing to 1 (within MIXTURE_TOL)."""
    pi = validate.array(pi, "pi", ndim=1, labels="(k,)", nonempty=(0,), cast=False, low=0.0, high=1.0)
    if k is not None:
        validate.same_shape("pi", pi, (k,), f"(k,) with k = {k} from A_star")
    if abs(float(pi.sum()) - 1.0) > MIXTURE_TOL:
        raise InputError(f"pi must be mixture weights summing to 1, got a sum of {float(pi.sum())!r}")
    return pi


def distribution(inputs: object) -> object:
    """An `InputDistribution`: an object with `d`, `sample(n, rng)` and `components()`."""
    if not all(hasattr(inputs, a) for a in ("d", "sample", "components")):
        raise TypeError(
            "inputs must be an InputDistribution (GaussianInput, GaussianMixtureInput: d, sample, "
            f"components), got {type(inputs).__name__}"
        )
    return inputs


def regression(W, A, x, y, sigma, act_name) -> tuple[np.ndarray, ...]:
    """W (k − 1, d), A (k, d), x (n, d), y (n,) real and finite, σ finite > 0, act an activation name."""
    A = rows(A, "A", "(k, d)", nonempty=(0, 1))
    k, d = A.shape
    W = rows(W, "W", "(k - 1, d)", d, nonempty=())
    validate.same_shape("W", W, (k - 1, d), f"(k - 1, d) with (k, d) = {(k, d)} from A")
    x = rows(x, "x", "(n, d)", d)
    y = per_sample(y, "y", x.shape[0])
    number(sigma, "sigma", 0.0, strict=True, why=" for L_log")
    act(act_name)
    return W, A, x, y
