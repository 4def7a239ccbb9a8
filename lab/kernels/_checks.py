"""Argument checks of the kernels, run once per call in Python by both backends before any arithmetic.

Every kernel name that `lab.kernels.backend` serves is a plain Python function that first calls the
check of the same name here, then runs the jitted loop (`X.py`) or the NumPy formulas (`X_numpy.py`).
So an unknown activation or noise code, a negative count, a seed outside [0, 2**64), an expert
index outside [0, M) or arrays of mismatched shapes raise the same TypeError or ValueError on both
backends, instead of reading outside an array or falling through to another branch inside a
jitted loop. The checks cost O(1), plus one min/max pass over index arrays (routes, noise
indices) and, for the gate, over the raw noise logits: no pass over the big float arrays, and
nothing inside a jitted loop. Finiteness of the data is checked by the public functions
(`lab.chen2022.model`, `lab.shazeer2017.gating`, `lab.makkuva2020.losses`), not here.

Each check returns the arguments as the kernels take them: arrays unchanged (integer arrays where
reals are allowed become float64), codes and counts as Python ints, seeds as Python ints in
[0, 2**64); `numba_seed` maps a seed to the int64 with the same 64 bits for the jitted code.
"""

from __future__ import annotations

import numpy as np

from lab.core import validate
from lab.core.errors import InputError
from lab.kernels._shared import NOISE_CODES
from lab.kernels.activations import ACTIVATION_CODES

SOFTPLUS_UNDERFLOW = -745.0  # Softplus(ρ) is exactly 0 in double precision for ρ below this


def numba_seed(seed: int) -> int:
    """The int64 with the bits of a seed in [0, 2**64): the jitted `uint64(seed)` gives the seed back."""
    return seed - 2**64 if seed >= 2**63 else seed


def _act(act):
    return validate.code(act, "act", ACTIVATION_CODES)


def _noise_args(code, a, b, name="noise_code"):
    return validate.code(code, name, NOISE_CODES), validate.real(a, "a"), validate.real(b, "b")


def _patches(x, W=None):
    """x (n, P, d) in float32/float64 and, if given, W (M, J, d) with the same d."""
    x = validate.array(x, "x", ndim=3, labels="(n, P, d)", floats=True, finite=False)
    if W is None:
        return x, None
    W = validate.array(W, "W", ndim=3, labels="(M, J, d)", finite=False)
    if W.shape[2] != x.shape[2]:
        raise InputError(f"W must have shape (M, J, d) with d = x.shape[2] = {x.shape[2]}, got {W.shape}")
    return x, W


def _per_sample(value, name, n):
    a = validate.array(value, name, ndim=1, labels="(n,)", finite=False)
    validate.same_shape(name, a, (n,), "(n,)")
    return a


def routed_forward(x, W, routes, act):
    x, W = _patches(x, W)
    return x, W, validate.index_array(routes, "routes", x.shape[0], W.shape[0]), _act(act)


def routed_backward(x, z, routes, coef, M, act):
    x, _ = _patches(x)
    z = validate.array(z, "z", ndim=3, labels="(n, P, J)", floats=True, finite=False)
    if z.shape[:2] != x.shape[:2]:
        raise InputError(f"z must have shape (n, P, J) with (n, P) = {x.shape[:2]} from x, got {z.shape}")
    M = validate.integer(M, "M", low=1)
    routes = validate.index_array(routes, "routes", x.shape[0], M)
    return x, z, routes, _per_sample(coef, "coef", x.shape[0]), M, _act(act)


def routed_step(x, W, routes, margin_scale, act):
    x, W = _patches(x, W)
    routes = validate.index_array(routes, "routes", x.shape[0], W.shape[0])
    return x, W, routes, _per_sample(margin_scale, "margin_scale", x.shape[0]), _act(act)


def dense_forward(x, W, act):
    x, W = _patches(x, W)
    return x, W, _act(act)


def softmax_gate(h, routes):
    h = validate.array(h, "h", ndim=2, labels="(n, M)", floats=True, finite=False, nonempty=(1,))
    return h, validate.index_array(routes, "routes", h.shape[0], h.shape[1])


def softmax_logit_gradient(pi, routes, c):
    pi = validate.array(pi, "pi", ndim=2, labels="(n, M)", floats=True, finite=False, nonempty=(1,))
    routes = validate.index_array(routes, "routes", pi.shape[0], pi.shape[1])
    return pi, routes, _per_sample(c, "c", pi.shape[0]).astype(pi.dtype, copy=False)


def perturbed_argmax(h, seed, noise_code, a, b):
    h = validate.array(h, "h", ndim=2, labels="(n, M)", finite=False, nonempty=(1,))
    return h, validate.seed(seed), *_noise_args(noise_code, a, b)


def routing_counts(h, draws, seed, noise_code, a, b):
    h = validate.array(h, "h", ndim=1, labels="(M,)", finite=False, nonempty=(0,))
    return h, validate.integer(draws, "draws", low=0), validate.seed(seed), *_noise_args(noise_code, a, b)


def _patch_sums(s):
    return validate.array(s, "s", ndim=2, labels="(n, d)", floats=True, finite=False, nonempty=(1,))


def router_logits(s, Theta):
    s = _patch_sums(s)
    Theta = validate.array(Theta, "Theta", ndim=2, labels="(d, M)", finite=False, nonempty=(1,))
    validate.same_shape("Theta", Theta, (s.shape[1], Theta.shape[1]), f"(d, M) with d = {s.shape[1]} from s")
    return s, Theta


def router_gradient(s, dh):
    s = _patch_sums(s)
    dh = validate.array(dh, "dh", ndim=2, labels="(n, M)", finite=False, nonempty=(1,))
    validate.same_shape("dh", dh, (s.shape[0], dh.shape[1]), f"(n, M) with n = {s.shape[0]} from s")
    return s, dh


def stream_key(seed):
    return validate.seed(seed)


def noise(key, index, code, a, b):
    key = validate.seed(key, "key")
    index = np.asarray(index)
    if index.dtype.kind not in "iu" or index.ndim != 1:
        raise TypeError(f"index must be a 1-d array of integer draw numbers, got {index.dtype}{index.shape}")
    if index.dtype.kind == "i" and index.size and int(index.min()) < 0:
        raise InputError(f"index must hold draw numbers >= 0, got {int(index.min())}")
    return key, index, *_noise_args(code, a, b, "code")


def _gate_inputs(clean, *others):
    """clean (n, M) in float32/float64 (the outputs' dtype) and real arrays of its shape."""
    clean = validate.array(clean, "clean", ndim=2, labels="(n, M)", floats=True, finite=False, nonempty=(1,))
    out = [clean]
    for name, value in others:
        a = validate.array(value, name, ndim=2, labels="(n, M)", finite=False)
        validate.same_shape(name, a, clean.shape, "(n, M) of clean")
        out.append(a)
    return out


def noisy_top_k_gate_and_load(clean, raw_noise, xi, k):
    clean, raw_noise, xi = _gate_inputs(clean, ("raw_noise", raw_noise), ("xi", xi))
    if raw_noise.size and np.min(raw_noise) <= SOFTPLUS_UNDERFLOW:
        raise InputError(
            f"raw_noise must be > {SOFTPLUS_UNDERFLOW} (below it the noise scale Softplus(raw_noise) "
            f"underflows to 0), got {float(np.min(raw_noise))}"
        )
    return clean, raw_noise, xi, validate.integer(k, "k", low=1, high=clean.shape[1])


def top_k_membership_counts(clean, scale, xi, k, draws, seed, resample_all):
    clean, scale, xi = _gate_inputs(clean, ("scale", scale), ("xi", xi))
    return (
        clean,
        scale,
        xi,
        validate.integer(k, "k", low=1, high=clean.shape[1]),
        validate.integer(draws, "draws", low=0),
        validate.seed(seed),
        validate.flag(resample_all, "resample_all"),
    )


def l4_gradient(A, x, q4, q2, c, c_prime, mu, lam, delta):
    A = validate.array(A, "A", ndim=2, labels="(k, d)", floats=True, finite=False)
    x = validate.array(x, "x", ndim=2, labels="(n, d)", finite=False, nonempty=(0,))
    if x.shape[1] != A.shape[1]:
        raise InputError(f"x must have shape (n, d) with d = A.shape[1] = {A.shape[1]}, got {x.shape}")
    q4, q2 = (_per_sample(q, name, x.shape[0]) for q, name in ((q4, "q4"), (q2, "q2")))
    c, c_prime = (validate.real(v, name) for v, name in ((c, "c"), (c_prime, "c_prime")))
    for value, name in ((c, "c"), (c_prime, "c_prime")):
        if value == 0.0:
            raise InputError(f"{name} must be a finite non-zero number, got 0.0")
    mu, lam, delta = (validate.real(v, name) for v, name in ((mu, "mu"), (lam, "lam"), (delta, "delta")))
    return A, x, q4, q2, c, c_prime, mu, lam, delta


MARGIN_LOSS_CODES = {"logistic": 0, "double-softmax-ce": 1}  # ℓ(m) and ℓ(tanh(m / 2)) of (3.3)


def _structure(signals, offset, signal_index, signal_scale, noise, W=None):
    """A batch of Def. 3.1 as structure: each signal patch is signal_scale · signals[signal_index] + offset.

    noise (n, Q, d) in float32/float64, signals (R, d), offset (d,), signal_index (n, S) integers in
    [0, R), signal_scale (n, S), S + Q >= 1; and, if given, W (M, J, d).
    """
    noise = validate.array(noise, "noise", ndim=3, labels="(n, Q, d)", floats=True, finite=False)
    n, _, d = noise.shape
    signals = validate.array(signals, "signals", ndim=2, labels="(R, d)", finite=False, nonempty=(0,))
    validate.same_shape("signals", signals, (signals.shape[0], d), f"(R, d) with d = {d} from noise")
    offset = validate.array(offset, "offset", ndim=1, labels="(d,)", finite=False)
    validate.same_shape("offset", offset, (d,), f"(d,) with d = {d} from noise")
    index = np.asarray(signal_index)
    R = signals.shape[0]
    if index.dtype.kind not in "iu":
        raise TypeError(
            f"signal_index must be an integer array with entries in [0, R={R}), got dtype {index.dtype}"
        )
    if index.ndim != 2 or index.shape[0] != n:
        raise InputError(
            f"signal_index must have shape (n, S) with n = {n} from noise, got shape {index.shape}"
        )
    if index.size and (int(index.min()) < 0 or int(index.max()) >= R):
        raise InputError(
            f"signal_index must be integers in [0, R={R}), "
            f"got values in [{int(index.min())}, {int(index.max())}]"
        )
    scale = validate.array(signal_scale, "signal_scale", ndim=2, labels="(n, S)", finite=False)
    validate.same_shape("signal_scale", scale, index.shape, "(n, S) of signal_index")
    if index.shape[1] + noise.shape[1] < 1:
        raise InputError(
            "a sample needs at least one patch: got S = 0 signal patches and Q = 0 noise patches"
        )
    if W is None:
        return signals, offset, index, scale, noise, None
    W = validate.array(W, "W", ndim=3, labels="(M, J, d)", finite=False, nonempty=(0,))
    if W.shape[2] != d:
        raise InputError(f"W must have shape (M, J, d) with d = noise.shape[2] = {d}, got {W.shape}")
    return signals, offset, index, scale, noise, W


def structured_forward(signals, offset, signal_index, signal_scale, noise, W, routes, act):
    *structure, W = _structure(signals, offset, signal_index, signal_scale, noise, W)
    return (
        *structure,
        W,
        validate.index_array(routes, "routes", structure[-1].shape[0], W.shape[0]),
        _act(act),
    )


def structured_backward(signals, offset, signal_index, signal_scale, noise, z, routes, coef, M, act):
    *structure, _ = _structure(signals, offset, signal_index, signal_scale, noise)
    n, P = structure[-1].shape[0], structure[2].shape[1] + structure[-1].shape[1]
    z = validate.array(z, "z", ndim=3, labels="(n, S + Q, J)", floats=True, finite=False)
    if z.shape[:2] != (n, P):
        raise InputError(f"z must have shape (n, S + Q, J) with (n, S + Q) = {(n, P)}, got {z.shape}")
    M = validate.integer(M, "M", low=1)
    routes = validate.index_array(routes, "routes", n, M)
    return *structure, z, routes, _per_sample(coef, "coef", n), M, _act(act)


def structured_step(
    signals, offset, signal_index, signal_scale, noise, W, routes, margin_scale, act, loss, readout=None
):
    *structure, W = _structure(signals, offset, signal_index, signal_scale, noise, W)
    n, J = structure[-1].shape[0], W.shape[1]
    routes = validate.index_array(routes, "routes", n, W.shape[0])
    margin_scale = _per_sample(margin_scale, "margin_scale", n)
    if readout is None:
        readout = np.ones(J)
    readout = validate.array(readout, "readout", ndim=1, labels="(J,)")
    validate.same_shape("readout", readout, (J,), f"(J,) with J = {J} from W")
    loss = validate.code(loss, "loss", MARGIN_LOSS_CODES)
    return *structure, W, routes, margin_scale, _act(act), loss, readout


def structured_dense_forward(signals, offset, signal_index, signal_scale, noise, W, act):
    *structure, W = _structure(signals, offset, signal_index, signal_scale, noise, W)
    return *structure, W, _act(act)
