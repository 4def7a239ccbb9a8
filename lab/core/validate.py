"""Argument checks shared by every public function that dispatches to a backend, and by the kernels.

A function that can run on the Numba or the NumPy backend checks its arguments with these helpers
BEFORE it picks a kernel, so both backends refuse the same input with the same error. Each helper
returns the checked value (an `int`, a `float` or an `np.ndarray`) and raises

* `TypeError` for a value of the wrong kind: a bool or a float where an integer belongs, a string
  where a number belongs, an array of booleans, complex numbers, strings or objects where real
  numbers belong, an integer array where floats are needed;
* `lab.core.errors.InputError` (a ValueError) for a value of the right kind outside what is allowed:
  a shape, a range, NaN or infinity, an index outside [0, M), an unknown code.

Every message starts with the parameter's name and says what is allowed, e.g.
"routes must be integers in [0, M=3), got values in [-1, 2]". The helpers never copy a valid
float32 or float64 array: a checked array is the array that was passed (integer arrays are
converted to float64 where reals are asked for, unless `cast=False` keeps them as they are), so
checking changes no number.

The science packages (each paper's, and `lab.core.stats`) check
every public function's arguments here, once, at the entry point; their internal callers call the
private, unchecked implementations, so a hot loop never pays twice. Costs: O(1) for types, dtypes,
shapes and scalars; one pass (a sum, falling back to `np.isfinite` only when the sum is not finite)
for finiteness; one min/max pass for ranges and index arrays. Elementwise functions (`logistic_loss`,
`softplus`, ...) check only the dtype, which is O(1), and document that NaN propagates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Integral, Real

import numpy as np

from lab.core.errors import InputError

SEED_RANGE = (0, 2**64)  # seeds are the 64-bit keys of the counter-based noise (`lab.kernels._shared`)
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))

__all__ = [
    "FLOAT_DTYPES",
    "SEED_RANGE",
    "all_finite",
    "array",
    "choice",
    "code",
    "flag",
    "generator",
    "index_array",
    "instance",
    "integer",
    "integers",
    "probabilities",
    "real",
    "same_shape",
    "seed",
]


def _range_text(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"in [{low}, {high}]"
    if low is not None:
        return f">= {low}"
    if high is not None:
        return f"<= {high}"
    return ""


def integer(value: object, name: str, low: int | None = None, high: int | None = None) -> int:
    """`value` as an int: a Python or NumPy integer (not a bool) with low <= value <= high."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral | np.integer):
        allowed = f"an integer {_range_text(low, high)}".rstrip()
        raise TypeError(f"{name} must be {allowed}, got {type(value).__name__} {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise InputError(f"{name} must be an integer {_range_text(low, high)}, got {value}")
    return value


def seed(value: object, name: str = "seed") -> int:
    """A seed of the counter-based noise: a Python or NumPy integer in [0, 2**64)."""
    low, high = SEED_RANGE
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral | np.integer):
        raise TypeError(f"{name} must be an integer in [0, 2**64), got {type(value).__name__} {value!r}")
    value = int(value)
    if not low <= value < high:
        raise InputError(f"{name} must be an integer in [0, 2**64), got {value}")
    return value


def real(
    value: object,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    nonzero: bool = False,
) -> float:
    """`value` as a finite float: a Python or NumPy real number (not a bool) in the given interval
    (and, with nonzero, not 0: a divisor such as a normalising constant)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    value = float(value)
    if (
        not math.isfinite(value)
        or (low is not None and (value < low or (low_open and value == low)))
        or (high is not None and (value > high or (high_open and value == high)))
    ):
        left, right = "(" if low_open else "[", ")" if high_open else "]"
        interval = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
        raise InputError(f"{name} must be a finite number in {interval}, got {value}")
    if nonzero and value == 0.0:
        raise InputError(f"{name} must be a finite non-zero number, got 0")
    return value


def flag(value: object, name: str) -> bool:
    """A bool (Python or NumPy); anything else, even 0 or "no", is a TypeError."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")
    return bool(value)


def code(value: object, name: str, codes: Mapping[str, int]) -> int:
    """An integer code from `codes` (name → code), e.g. an activation or a noise code of the kernels."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral | np.integer):
        raise TypeError(
            f"{name} must be an integer code, one of {_codes_text(codes)}; got {type(value).__name__}"
        )
    value = int(value)
    if value not in codes.values():
        raise InputError(f"{name} must be one of {_codes_text(codes)}; got {value}")
    return value


def _codes_text(codes: Mapping[str, int]) -> str:
    return ", ".join(f"{c} ({n})" for n, c in sorted(codes.items(), key=lambda item: item[1]))


def instance(value: object, name: str, kind: type | tuple[type, ...]) -> object:
    """`value` if it is an instance of `kind`, else a TypeError naming the expected type."""
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise TypeError(f"{name} must be a {names}, got {type(value).__name__}")
    return value


def _as_array(value: object, name: str) -> np.ndarray:
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as exc:  # ragged nested lists, objects NumPy cannot hold
        raise TypeError(f"{name} must be an array of real numbers: {exc}") from None


def _shape_text(ndim: int | tuple[int, ...], labels: str | None) -> str:
    if labels is not None:
        return labels
    if isinstance(ndim, tuple):
        return " or ".join(str(n) for n in ndim) + " dimension(s)"
    return f"{ndim} dimension(s)"


def all_finite(a: np.ndarray) -> bool:
    """True when no entry of `a` is NaN or ±inf: one sum (any NaN or inf makes it non-finite), and
    only if that overflowed, the exact elementwise test."""
    if a.dtype.kind not in "fc" or not a.size:
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(a.sum()):
            return True
    return bool(np.isfinite(a).all())


def array(
    value: object,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    min_ndim: int | None = None,
    labels: str | None = None,
    floats: bool = False,
    finite: bool = True,
    nonempty: Sequence[int] = (),
    complex_ok: bool = False,
    cast: bool = True,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """A real array: not bool, complex, string or object; NaN and ±inf refused unless `finite=False`.

    floats=False: integer arrays become float64 (the value every backend computes with), or stay
    as they are with cast=False; floats=True: the array must already be float32 or float64 (a
    kernel's output has its dtype). Other float widths (float16, longdouble) become float64 (with
    cast=False they are kept). complex_ok=True also lets complex arrays through unchanged (the
    complex-step derivatives of the NumPy formulas). `ndim` fixes the number of axes (one number or
    a tuple of the allowed ones; `labels`, e.g. "(n, P, d)", names them in the message), `min_ndim`
    bounds it below; `nonempty` lists axes that must have length >= 1 (negative axes count from the
    end); `low`/`high` bound every entry (inclusive). A valid float32/float64 (or, with complex_ok,
    complex) array is returned as it is, never copied.
    """
    a = _as_array(value, name)
    kind = a.dtype.kind
    if kind in "iu" and not floats:
        if cast:
            a = a.astype(np.float64)
    elif kind == "f" and a.dtype not in FLOAT_DTYPES:
        if cast:
            a = a.astype(np.float64)
    elif kind == "c" and complex_ok and not floats:
        pass
    elif kind != "f":
        if floats:
            wanted = "float32 or float64"
        elif complex_ok:
            wanted = "real or complex numbers"
        else:
            wanted = "real numbers (integer or float)"
        raise TypeError(f"{name} must be an array of {wanted}, got dtype {a.dtype}")
    if ndim is not None and a.ndim not in (ndim if isinstance(ndim, tuple) else (ndim,)):
        raise InputError(f"{name} must have shape {_shape_text(ndim, labels)}, got shape {a.shape}")
    if min_ndim is not None and a.ndim < min_ndim:
        shape = labels if labels is not None else f"at least {min_ndim} dimension(s)"
        raise InputError(f"{name} must have shape {shape}, got shape {a.shape}")
    for axis in nonempty:
        if a.shape[axis] < 1:
            label = f" {_shape_text(a.ndim, labels)}" if labels else ""
            raise InputError(f"{name} must have length >= 1 along axis {axis}{label}, got shape {a.shape}")
    if finite and not all_finite(a):
        raise InputError(f"{name} must be finite (no NaN or inf)")
    if (low is not None or high is not None) and a.size:
        lo, hi = a.min(), a.max()
        if (low is not None and lo < low) or (high is not None and hi > high):
            interval = f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"
            raise InputError(f"{name} must have entries in {interval}, got values in [{lo}, {hi}]")
    return a


def integers(
    value: object,
    name: str,
    *,
    ndim: int | tuple[int, ...] | None = None,
    labels: str | None = None,
    low: int | None = None,
    high: int | None = None,
    bound: str | None = None,
) -> np.ndarray:
    """An integer array (not bool, not float) with low <= entries < high, returned as it is.

    `bound` names the exclusive upper end in the message, e.g. "K=4": "cluster must be integers in
    [0, K=4), got values in [0, 5]".
    """
    a = _as_array(value, name)
    top = bound if bound is not None else high
    allowed = f"in [{low if low is not None else '-inf'}, {top if top is not None else 'inf'})"
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an array of integers {allowed}, got dtype {a.dtype}")
    if ndim is not None and a.ndim not in (ndim if isinstance(ndim, tuple) else (ndim,)):
        raise InputError(f"{name} must have shape {_shape_text(ndim, labels)}, got shape {a.shape}")
    if a.size:
        lo, hi = int(a.min()), int(a.max())
        if (low is not None and lo < low) or (high is not None and hi >= high):
            raise InputError(f"{name} must be integers {allowed}, got values in [{lo}, {hi}]")
    return a


def probabilities(
    value: object, name: str, *, length: int | None = None, labels: str = "(k,)", tol: float = 1e-6
) -> np.ndarray:
    """Mixture weights: a finite real vector with entries in [0, 1] summing to 1 (within `tol`), of
    `length` entries if given; returned as it is."""
    a = array(value, name, ndim=1, labels=labels, nonempty=(0,), cast=False, low=0.0, high=1.0)
    if length is not None:
        same_shape(name, a, (length,), f"{labels} with {length} entries")
    if abs(float(a.sum()) - 1.0) > tol:
        raise InputError(f"{name} must be weights summing to 1, got a sum of {float(a.sum())!r}")
    return a


def choice(value: object, name: str, options) -> object:
    """`value` if it is one of `options` (strings, e.g. activation names), else an InputError listing them."""
    allowed = ", ".join(repr(o) for o in sorted(options))
    try:
        known = isinstance(value, str) and value in options
    except TypeError:  # unhashable
        known = False
    if not known:
        raise InputError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def generator(value: object, name: str = "rng") -> np.random.Generator:
    """A NumPy `Generator` (np.random.default_rng(seed)); a seed or a legacy RandomState is a TypeError."""
    if not isinstance(value, np.random.Generator):
        kind = type(value).__name__
        raise TypeError(f"{name} must be a numpy.random.Generator (np.random.default_rng(seed)), got {kind}")
    return value


def same_shape(name: str, a: np.ndarray, shape: tuple[int, ...], labels: str | None = None) -> None:
    """InputError unless a.shape == shape; `labels` (e.g. "(n,) with n = len(x)") explains the shape."""
    if a.shape != tuple(shape):
        what = f"{labels}, i.e. {tuple(shape)}" if labels else f"{tuple(shape)}"
        raise InputError(f"{name} must have shape {what}, got shape {a.shape}")


def index_array(value: object, name: str, length: int, M: int) -> np.ndarray:
    """Indices of experts: an integer array of shape (length,) with every entry in [0, M)."""
    a = _as_array(value, name)
    if a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array with entries in [0, M={M}), got dtype {a.dtype}")
    if a.shape != (length,):
        raise InputError(f"{name} must have shape (n,) = ({length},), got shape {a.shape}")
    if a.size:
        low, high = int(a.min()), int(a.max())
        if low < 0 or high >= M:
            raise InputError(f"{name} must be integers in [0, M={M}), got values in [{low}, {high}]")
    return a
