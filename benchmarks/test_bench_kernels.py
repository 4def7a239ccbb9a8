"""Each Numba kernel at the paper's size (n = 16,000, P = 4, d = 50, M = 8, J = 16) beside its NumPy twin."""

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from lab.kernels import BACKENDS, backend

N, P, D, M, J = 16_000, 4, 50, 8, 16
IMPLEMENTATIONS = {name: backend(name) for name in BACKENDS}
twins = IMPLEMENTATIONS["numpy"]
CUBIC = 0


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(N, P, D)) / np.sqrt(D)
    W = rng.normal(size=(M, J, D)) * 0.3
    routes = rng.integers(0, M, N)
    coef = rng.normal(size=N) / N
    f, z = twins.routed_forward(x, W, routes, CUBIC)
    return {"x": x, "W": W, "routes": routes, "coef": coef, "f": f, "z": z, "h": rng.normal(size=(N, M))}


def _warm(fn):
    fn()  # compile (Numba) before timing
    return fn


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_routed_forward(benchmark, record_rate, problem, impl):
    benchmark.group = "routed_forward"
    mod, p = IMPLEMENTATIONS[impl], problem
    f, z = benchmark(_warm(lambda: mod.routed_forward(p["x"], p["W"], p["routes"], CUBIC)))
    np.testing.assert_allclose(f, p["f"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(z, p["z"], rtol=1e-9, atol=1e-12)
    record_rate("routed_forward", 2.0 * N * P * J * D)


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_routed_backward(benchmark, record_rate, problem, impl):
    benchmark.group = "routed_backward"
    mod, p = IMPLEMENTATIONS[impl], problem
    grad = benchmark(_warm(lambda: mod.routed_backward(p["x"], p["z"], p["routes"], p["coef"], M, CUBIC)))
    np.testing.assert_allclose(
        grad, twins.routed_backward(p["x"], p["z"], p["routes"], p["coef"], M, CUBIC), rtol=1e-9, atol=1e-14
    )
    record_rate("routed_backward", 2.0 * N * P * J * D)


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_routed_step(benchmark, record_rate, problem, impl):
    benchmark.group = "routed_step"
    mod, p = IMPLEMENTATIONS[impl], problem
    f, grad = benchmark(_warm(lambda: mod.routed_step(p["x"], p["W"], p["routes"], p["coef"] * N, CUBIC)))
    np.testing.assert_allclose(f, p["f"], rtol=1e-9, atol=1e-12)
    assert np.all(np.isfinite(grad))
    record_rate("routed_step", 4.0 * N * P * J * D)


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_dense_forward(benchmark, record_rate, problem, impl):
    benchmark.group = "dense_forward"
    mod, p = IMPLEMENTATIONS[impl], problem
    out = benchmark(_warm(lambda: mod.dense_forward(p["x"], p["W"], CUBIC)))
    np.testing.assert_allclose(out[np.arange(N), p["routes"]], p["f"], rtol=1e-9, atol=1e-12)
    record_rate("dense_forward", 2.0 * N * P * M * J * D)


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_perturbed_argmax(benchmark, problem, impl):
    benchmark.group = "perturbed_argmax"
    mod, p = IMPLEMENTATIONS[impl], problem
    routes = benchmark(_warm(lambda: mod.perturbed_argmax(p["h"], 7, 0, 0.0, 1.0)))
    np.testing.assert_array_equal(routes, twins.perturbed_argmax(p["h"], 7, 0, 0.0, 1.0))
    benchmark.extra_info["kernel"] = "perturbed_argmax"
    benchmark.extra_info["draws_x_experts"] = N * M


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_routing_counts(benchmark, problem, impl):
    benchmark.group = "routing_counts"
    mod, p = IMPLEMENTATIONS[impl], problem
    counts = benchmark(_warm(lambda: mod.routing_counts(p["h"][0], 200_000, 3, 0, 0.0, 1.0)))
    np.testing.assert_array_equal(counts, twins.routing_counts(p["h"][0], 200_000, 3, 0, 0.0, 1.0))
    benchmark.extra_info["kernel"] = "routing_counts"
    benchmark.extra_info["draws_x_experts"] = 200_000 * M


@pytest.mark.parametrize("impl", ["numba", "numpy"])
@pytest.mark.parametrize("product", ["router_logits", "router_gradient"])
def test_router_products(benchmark, record_rate, problem, impl, product):
    """h = sΘ and sᵀ∂L/∂h with s the patch sums, one-thread BLAS beside Numba's threads as in training."""
    benchmark.group = product
    mod, p = IMPLEMENTATIONS[impl], problem
    s, other = p["x"].sum(axis=1), p["W"][:, 0, :].T if product == "router_logits" else p["h"]
    with threadpool_limits(1, "blas"):
        out = benchmark(_warm(lambda: getattr(mod, product)(s, other)))
        np.testing.assert_allclose(out, getattr(twins, product)(s, other), rtol=1e-10, atol=1e-10)
    record_rate(product, 2.0 * N * D * M)


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_softmax_logit_gradient(benchmark, problem, impl):
    """∂L/∂h of the softmax gate (E.1), Algorithm 1's router step between the gate and ∇Θ."""
    benchmark.group = "softmax_logit_gradient"
    mod, p = IMPLEMENTATIONS[impl], problem
    pi, c = twins.softmax_gate(p["h"], p["routes"])[1], np.linspace(-1.0, 1.0, N)
    dh = benchmark(_warm(lambda: mod.softmax_logit_gradient(pi, p["routes"], c)))
    np.testing.assert_array_equal(dh, twins.softmax_logit_gradient(pi, p["routes"], c))


@pytest.mark.parametrize("impl", ["numba", "numpy"])
def test_softmax_gate(benchmark, problem, impl):
    benchmark.group = "softmax_gate"
    mod, p = IMPLEMENTATIONS[impl], problem
    g, pi = benchmark(_warm(lambda: mod.softmax_gate(p["h"], p["routes"])))
    np.testing.assert_array_equal(g, pi[np.arange(N), p["routes"]])
    np.testing.assert_allclose(pi, twins.softmax_gate(p["h"], p["routes"])[1], rtol=1e-12, atol=1e-15)
    benchmark.extra_info["kernel"] = "softmax_gate"
