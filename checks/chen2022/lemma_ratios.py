"""B13's measures: Theorem 4.2's explicit proof steps (Chen et al. 2022, App. D–F) against their constants.

Each function returns the largest ratio of a lemma's quantity to its bound, with every constant written
out (Hoeffding, Bernstein, a Gaussian tail, an exact worst case), so that a ratio above 1 breaks the
lemma. The catalogue of all steps is `proof_steps.toml`; B13's checks are `proof_lemmas.py`.
"""

from __future__ import annotations

import math

import numpy as np

from lab.chen2022.data import DataConfig, Dataset, Signals
from lab.chen2022.data_views import noise_patches, uniform_moment
from lab.chen2022.model import gate_values, logistic_loss_derivative
from lab.chen2022.routing import Noise, Uniform, routing_probabilities
from lab.kernels.activations import activation


def concentration_sums(data: Dataset, config: DataConfig) -> tuple[np.ndarray, np.ndarray]:
    """Lemma D.1: every sum of (D.1)–(D.3) minus its mean, and the range of one of its n iid terms.

    Ω⁺_{k,k′} (Ω⁻_{k,k′}) are the samples of cluster k with feature noise v_{k′} and y = ε (y = −ε)."""
    K, n = config.K, data.n
    a3 = uniform_moment(config.alpha.low, config.alpha.high, 3)
    b1 = uniform_moment(config.beta.low, config.beta.high, 1)
    amax, bmax, gmax = config.alpha.high, config.beta.high, config.gamma.high
    devs, ranges = [], []
    for k in range(K):
        mine = data.cluster == k
        devs += [
            np.sum(data.y[mine] * data.beta[mine] ** 3),
            np.sum(data.alpha[mine] ** 3) - a3 * n / K,
            np.sum((data.y * data.eps)[mine] * data.gamma[mine] ** 3),
            np.sum(data.beta[mine]) - b1 * n / K,
        ]
        ranges += [2 * bmax**3, amax**3, 2 * gmax**3, bmax]
        for k2 in range(K):
            if k2 == k:
                continue
            pair = mine & (data.noise_cluster == k2)
            for sign in (1, -1):
                part = pair & (data.y == sign * data.eps)
                devs += [np.sum((data.y * data.alpha)[part]), np.sum((data.eps * data.gamma)[part])]
                ranges += [2 * amax, 2 * gmax]
    return np.abs(np.array(devs)), np.array(ranges)


def hoeffding_ratio(data: Dataset, config: DataConfig, delta: float) -> float:
    """Lemma D.1: max over the sums of |sum − mean| / (range·√(n log(2N/δ)/2)), N sums (union bound)."""
    devs, ranges = concentration_sums(data, config)
    radius = ranges * math.sqrt(data.n * math.log(2 * devs.size / delta) / 2)
    return float((devs / radius).max())


def noise_patch_ratio(data: Dataset, signals: Signals, config: DataConfig, delta: float) -> float:
    """Lemma D.2 with its proof's constants: max of ‖ξ‖²/(2σ_p²), |⟨v, ξ⟩| and |⟨ξ, ξ′⟩| over their bounds.

    Bounds (App. D): ‖ξ‖₂² ≤ 2σ_p² (2 at σ_p = 1), |⟨v_k, ξ⟩|, |⟨c_k, ξ⟩| ≤ 2σ_p√(log(6nPK/δ)/d),
    |⟨ξ_{i,p}, ξ_{i′,p′}⟩| ≤ 2σ_p²√(log(12n²P²/δ)/d)."""
    xi = noise_patches(data)
    n, P, d = data.x.shape
    sp, K = config.sigma_p, config.K
    norms = (xi * xi).sum(axis=1) / (2 * sp**2)
    basis = np.vstack([signals.V, signals.C])
    signal_bound = 2 * sp * math.sqrt(math.log(6 * n * P * K / delta) / d)
    gram = xi @ xi.T
    np.fill_diagonal(gram, 0.0)
    pair_bound = 2 * sp**2 * math.sqrt(math.log(12 * n**2 * P**2 / delta) / d)
    return float(max(norms.max(), np.abs(xi @ basis.T).max() / signal_bound, np.abs(gram).max() / pair_bound))


def init_alignment_ratio(W0: np.ndarray, vectors: np.ndarray, sigma0: float, delta: float) -> float:
    """Lemma D.5: max |⟨w⁽⁰⁾_{m,j}, v⟩| / (σ0‖v‖√(2 log(2N/δ))) over the N (filter, vector) pairs.

    ⟨w⁽⁰⁾, v⟩ ~ N(0, σ0²‖v‖²); the Gaussian tail P(|Z| > z) ≤ 2e^{−z²/2} and a union bound over N pairs
    give the constant behind the lemma's Õ(σ0)."""
    filters = W0.reshape(-1, W0.shape[-1])
    z = math.sqrt(2 * math.log(2 * filters.shape[0] * vectors.shape[0] / delta))
    scale = sigma0 * np.linalg.norm(vectors, axis=1) * z
    return float((np.abs(filters @ vectors.T) / scale).max())


def route_gradient_pieces(x, y, W, Theta, V: np.ndarray, act: str = "cubic"):
    """Lemma E.2's per-sample pieces: the projections on V of each sample's gradient contribution.

    Returns (a, b): a[i, m, j, v] = ⟨∇_{w_{m,j}} of sample i when routed to m, v⟩ (E.2), and
    b[i, r, m, v] = ⟨∇_{θ_m} of sample i when routed to r, v⟩ (E.1), each with its 1/n."""
    sigma, sigma_prime = activation(act)
    n = x.shape[0]
    s = x.sum(axis=1)
    pi = gate_values(s @ Theta)  # (n, M)
    z = np.einsum("npd,mjd->npmj", x, W)
    f = sigma(z).sum(axis=(1, 3))  # (n, M)
    lp = logistic_loss_derivative(y[:, None] * pi * f)  # (n, M): ℓ′ if routed to m
    xv = x @ V.T  # (n, P, v)
    coef = lp * pi * y[:, None] / n
    a = coef[:, :, None, None] * np.einsum("npmj,npv->nmjv", sigma_prime(z), xv)
    router = lp * pi * f * y[:, None] / n  # (n, r)
    M = W.shape[0]
    onehot = np.eye(M)[None, :, :] - pi[:, None, :]  # (n, r, m): 1[r = m] − π_m
    b = router[:, :, None, None] * onehot[:, :, :, None] * (s @ V.T)[:, None, None, :]
    return a, b


def route_concentration_ratios(a, b, P_route: np.ndarray, routes: np.ndarray, delta: float) -> np.ndarray:
    """Lemma E.2 by Hoeffding over the n independent routes: per route draw, max |sampled − E| / radius.

    `routes` (draws, n); the expectation uses the exact routing probabilities P_route (n, M). Each
    sample's term has range |a| (expert: routed or not) and max_r b − min_r b (router)."""
    n, M = P_route.shape
    pairs = a[0].size + b[0, 0].size
    log_term = math.log(2 * pairs / delta) / 2
    radius_w = np.sqrt((a**2).sum(axis=0) * log_term)  # (M, J, v)
    radius_t = np.sqrt(((b.max(axis=1) - b.min(axis=1)) ** 2).sum(axis=0) * log_term)  # (M, v)
    mean_w = np.einsum("nm,nmjv->mjv", P_route, a)
    mean_t = np.einsum("nr,nrmv->mv", P_route, b)
    out = []
    for draw in routes:
        hot = np.eye(M)[draw]
        dev_w = np.abs(np.einsum("nm,nmjv->mjv", hot, a) - mean_w) / np.maximum(radius_w, 1e-300)
        dev_t = np.abs(b[np.arange(n), draw].sum(axis=0) - mean_t) / np.maximum(radius_t, 1e-300)
        out.append(max(dev_w.max(), dev_t.max()))
    return np.array(out)


def chosen_gate_floor_ratio(h: np.ndarray, noise: Uniform) -> float:
    """Lemma E.10 in its worst case: min over samples and reachable experts of π_m(x)·eM.

    With Unif[a, b] noise expert m can be chosen exactly when h_m > max h − (b − a) (Lemma C.4), so the
    smallest gate any noise draw can pick is the smallest π over that set; E.10 says it is ≥ 1/(eM)."""
    M = h.shape[1]
    pi = gate_values(h)
    reachable = h > h.max(axis=1, keepdims=True) - (noise.high - noise.low)
    return float(np.where(reachable, pi, np.inf).min() * math.e * M)


def centre_gate_ratios(h: np.ndarray, h_centre: np.ndarray, noise: Noise, temperature: float = 1.0):
    """Lemma E.11 per sample: |π_m(x) − π_m(x̄)| / (‖Δh‖∞/2) and |P(m|x) − P(m|x̄)| / (M²‖Δh‖∞), maxima.

    1/2 is the sharp softmax constant (Σ_j |∂π_m/∂h_j| = 2π_m(1 − π_m) ≤ 1/2); M² is Lemma 5.1's.
    `temperature` ≠ 1 evaluates a mutated gate softmax(h/temperature) for the negative control."""
    M = h.shape[1]
    gap = np.abs(h - h_centre).max(axis=1)
    keep = gap > 0
    dpi = np.abs(gate_values(h / temperature) - gate_values(h_centre / temperature)).max(axis=1)
    dp = np.abs(routing_probabilities(h, noise) - routing_probabilities(h_centre, noise)).max(axis=1)
    return float((dpi[keep] / (gap[keep] / 2)).max()), float((dp[keep] / (M**2 * gap[keep])).max())


def pair_gate_ratio(h: np.ndarray, temperature: float = 1.0) -> float:
    """Lemma E.15's gate part: max over samples and pairs m ≠ m′ of |π_m − π_m′| / (2|h_m − h_m′|).

    The lab's sharp constant is 1/2, not 2: (e^a − e^b)/(e^a + e^b) = tanh((a − b)/2)."""
    pi = gate_values(h / temperature)
    dpi = np.abs(pi[:, :, None] - pi[:, None, :])
    dh = np.abs(h[:, :, None] - h[:, None, :])
    keep = dh > 0
    return float((dpi[keep] / (2 * dh[keep])).max())


def top_two_rate(draws: np.ndarray, G: float) -> int:
    """Lemma F.1: how many rows (one draw of M variables each) have a⁽²⁾ ≥ (1 − G)a⁽¹⁾."""
    top = np.sort(draws, axis=1)[:, -2:]
    return int((top[:, 0] >= (1 - G) * top[:, 1]).sum())


def tensor_power_race(x0: float, y0: float, S: float, eta: float, C: np.ndarray, A: float):
    """Lemma F.2's sequences at equality, x_{t+1} = x_t + ηC_t x_t², y_{t+1} = y_t + SηC_t y_t², until x ≥ A.

    Returns (y at the last step with x < A, ε = max ηC_t x_t over those steps). For x0 ≥ S(1 + G)y0 and
    ε < G the recursions give y < (1 + G)y0/(G − ε): 1/x falls by at least ηC_t/(1 + ε) per step and 1/y
    by at most SηC_t. y = inf when y overflows before x reaches A."""
    x, y, eps = x0, y0, 0.0
    for c in C:
        step_x = eta * c * x * x
        if x + step_x >= A:
            return y, eps
        eps = max(eps, eta * c * x)
        if y > 1e100:  # y has run away before x reached A (y² would overflow soon)
            return math.inf, eps
        x, y = x + step_x, y + S * eta * c * y * y
    raise ValueError(f"C must be long enough for x to reach A = {A}; {len(C)} steps were not")
