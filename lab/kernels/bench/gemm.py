"""One-thread GEMM of given products, timed: the rate NumPy's BLAS reaches on a timing's own dense products.

`gemm_seconds(products)` times each product Z = X Wᵀ ((rows, inner) × (inner, cols)) and its transpose
product Zᵀ X, as a training step's forward and backward pass make them, with BLAS on one thread and
standard normal data, and returns the best of several rounds of all of them. A replication timing calls
it around each model's runs beside `lab.kernels.bench.peak`, so a record gives its dense products both at
the peak multiply-add rate and at the rate the machine's GEMM reaches on their shapes.
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from lab.core import validate
from lab.core.errors import InputError

DTYPES = ("float64", "float32")


def gemm_flops(products: list[tuple[int, int, int, str]]) -> float:
    """The FLOP of `gemm_seconds`'s products: 2·2·rows·inner·cols each (a multiply-add counts as two)."""
    return float(sum(4 * rows * inner * cols for rows, inner, cols, _ in products))


def gemm_seconds(products: list[tuple[int, int, int, str]], rounds: int = 5) -> float:
    """The best of `rounds` timings of every product (rows, inner, cols, dtype) as X Wᵀ and (X Wᵀ)ᵀ X on
    one BLAS thread, in seconds."""
    validate.integer(rounds, "rounds", low=1)
    if not isinstance(products, list | tuple) or not products:
        raise InputError(f"products must be a non-empty list of (rows, inner, cols, dtype), got {products!r}")
    rng = np.random.default_rng(0)
    operands = []
    for k, product in enumerate(products):
        if not isinstance(product, tuple | list) or len(product) != 4:
            raise InputError(f"products[{k}] must be (rows, inner, cols, dtype), got {product!r}")
        rows, inner, cols, dtype = product
        for name, size in (("rows", rows), ("inner", inner), ("cols", cols)):
            validate.integer(size, f"products[{k}] {name}", low=1)
        validate.choice(dtype, f"products[{k}] dtype", DTYPES)
        x, w = rng.standard_normal((rows, inner)), rng.standard_normal((cols, inner))
        operands.append((x.astype(dtype), w.astype(dtype)))
    with threadpool_limits(1, "blas"):
        _products(operands)  # BLAS's first call of a shape out of the clock
        return min(_timed(operands) for _ in range(rounds))


def _products(operands: list[tuple[np.ndarray, np.ndarray]]) -> None:
    for x, w in operands:
        z = x @ w.T
        z.T @ x


def _timed(operands: list[tuple[np.ndarray, np.ndarray]]) -> float:
    start = time.perf_counter()
    _products(operands)
    return time.perf_counter() - start
