"""The claims catalogue: what each claim says, where the paper says it, and how the lab tests it.

This is prose kept as data. Measured numbers never appear here: the verdict tables under each
claim are rendered from `results/verify.json`, and the check names from the registry.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Paper:
    key: str
    short: str
    cite: str
    title: str
    scope: str


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    title: str
    reference: str
    statement: str
    premise: str
    controls: str
    also: str = ""


PAPERS = {
    "chen2022": Paper(
        "chen2022",
        "Chen et al. 2022",
        "Chen, Deng, Wu, Gu and Li (2022)",
        "Towards Understanding the Mixture-of-Experts Layer in Deep Learning",
        "The data model with K clusters, the top-1 MoE layer with noisy routing, Algorithm 1, "
        "Theorem 4.1 (a single CNN cannot beat an error of 1/8), Theorem 4.2 (the nonlinear MoE "
        "learns the cluster structure) and the lemmas of Appendices C-E.",
    ),
    "makkuva2020": Paper(
        "makkuva2020",
        "Makkuva et al. 2020",
        "Makkuva, Oh, Kannan and Viswanath (2020)",
        "Learning in Gated Neural Networks",
        "The gated regression MoE, the moment loss L4 that recovers the regressors, the "
        "log-likelihood L_log that then recovers the gates, Fig. 1 and the GRU reading of eq. (4).",
    ),
    "shazeer2017": Paper(
        "shazeer2017",
        "Shazeer et al. 2017",
        "Shazeer, Mirhoseini, Maziarz, Davis, Le, Hinton and Dean (2017)",
        "Outrageously Large Neural Networks: The Sparsely-Gated Mixture-of-Experts Layer",
        "Noisy top-k gating, the importance and load balancing losses and the smooth load estimator.",
    ),
}

_READ_DATA = "The lab's samples of the settings (and a one-hot variant with other K, P, d, σ_p)."

CLAIMS = (
    Claim(
        "A1",
        "chen2022",
        "The data distribution",
        "Def. 3.1 (Sec. 3.1); settings 1-4 of App. A.2",
        "A sample from cluster k holds exactly one feature patch yαv_k, one cluster-centre patch βc_k "
        "and one feature-noise patch εγv_k' with k' ≠ k; the other P − 3 patches are Gaussian "
        "N(0, σ_p²/d · I); the 2K signal vectors are orthonormal.",
        _READ_DATA + " Every patch is compared with its role exactly; the noise variance is judged "
        "by a chi-square interval.",
        "Two mutated samplers: one draws k' independently of k (so k' = k happens), one forgets the "
        "1/d in the noise variance. Both must be caught.",
    ),
    Claim(
        "A5",
        "chen2022",
        "Exact gradients of the perturbed loss",
        "eqs. (E.1), (E.2) (App. E) of the loss (3.3)",
        "The router gradient (E.1) and the expert gradient (E.2) are the exact derivatives of the "
        "loss (3.3) at fixed routes.",
        "Both formulas, in NumPy and in the Numba kernels, against complex-step derivatives (no "
        "cancellation error), at the initial scale and at a generic point, for two activations.",
        "(E.2) without the gate value π_m, the slip that is easiest to make, must be detected.",
    ),
    Claim(
        "B1",
        "chen2022",
        "Theorem 4.1: the orbit identity",
        "Theorem 4.1, proof in App. B",
        "For a sample with ε = −y, the four points App. B builds from it have margins (label · F) "
        "that sum to exactly zero, for every F(x) = Σ_p f(x⁽ᵖ⁾) whatever the per-patch f.",
        "Many per-patch f: both witnesses, a linear CNN, random CNNs with each activation, "
        "polynomials, thresholds, signs and lookup tables. The residual is judged against the "
        "rounding bound of the sum.",
        "Two F that are not patch-additive: a product over patches of a tanh CNN, and a routed MoE. "
        "Both must break the identity.",
    ),
    Claim(
        "B2",
        "chen2022",
        "Theorem 4.1: the 1/8 error floor",
        'Theorem 4.1; Table 7 ("optimal 87.5 %")',
        "If the laws of α and γ are equal, every patch-additive F errs with probability at least 1/8.",
        "The smallest Monte-Carlo error over the same family of f, with a Clopper-Pearson interval "
        "corrected for the number of f, on three distributions with D_α = D_γ. Beyond the theorem: "
        "whether 1/8 is attained, and the floor ω/8 when D_α and D_γ only partly overlap (ω is the "
        "mass of the part of the law of (α, γ) that is symmetric under α ↔ γ).",
        "D_α ≠ D_γ, where a linear CNN beats 1/8 and the floor must be reported as not holding; the "
        "attainment test must reject the linear CNN; under partial overlap 1/8 and the guess built "
        "from the marginal overlap must both fail.",
        "[Finding: the floor is attained](../findings.md#error-floor).",
    ),
    Claim(
        "B3",
        "chen2022",
        "Single CNNs stay below the floor",
        "Tables 7 and 8",
        "A trained single CNN (linear, cubic, ReLU, CELU, GELU or tanh, 128 filters) stays at or "
        "below 87.5 % test accuracy on setting 3, where D_α = D_γ.",
        "One CNN per activation trained on setting 3; the upper end of the accuracy's interval is "
        "compared with 87.5 %.",
        "γ much weaker than α (the theorem's premise broken), where a CNN must go above 87.5 %; and "
        "a ReLU CNN read out as (3.1)'s plain sum, which sits at chance and must not count as "
        "evidence for the bound.",
        "[Finding: the readout of non-odd activations](../findings.md#single-cnns).",
    ),
    Claim(
        "B4",
        "chen2022",
        "Lemma 5.1 / C.1: routing is Lipschitz",
        "Lemma 5.1, Lemma C.1 (App. C)",
        "With iid routing noise whose density is at most κ, the routing probabilities "
        "p_m(h) = P(argmax_j {h_j + r_j} = m) satisfy ‖p(h) − p(ĥ)‖∞ ≤ κM²‖h − ĥ‖∞.",
        "Exact p (no Monte Carlo) for uniform, Gaussian and Gumbel noise; Hypothesis pairs steered "
        "towards the worst ratio, M up to 64. Also the lab's sharper constant 2κ and a search for "
        "the best constant.",
        "Plain argmax (no noise) and a uniform noise of vanishing width judged with κ = 1: routing "
        "jumps and the bound must fail.",
        "[Finding: the constant is loose](../findings.md#routing-constant).",
    ),
    Claim(
        "B5",
        "chen2022",
        "Lemma C.3: swapping two experts",
        "Lemma C.3 (App. C)",
        "|p_m − p_m'| ≤ κM²|h_m − h_m'| for any two experts m, m'.",
        "As B4, over Hypothesis logits, for the three noise families; also the sharper 2κ.",
        "Plain argmax, and non-identical noise (expert 0 with a narrower uniform): at exact ties "
        "p_m ≠ p_m' and the bound must fail.",
        "[Finding: the constant is loose](../findings.md#routing-constant).",
    ),
    Claim(
        "B6",
        "chen2022",
        "Lemma C.4: experts out of reach are never chosen",
        "Lemma C.4 (App. C)",
        "With Unif[a, b] noise, an expert whose logit is at least b − a below the largest is "
        "chosen with probability exactly 0.",
        "Exact p for several uniform widths, many experts exactly at the gap; the perturbed-argmax "
        "kernel over many draws (a Clopper-Pearson bound on its frequency).",
        "Gaussian noise of the same variance, and a gap just inside the width: p_m > 0 must be found.",
    ),
    Claim(
        "B7",
        "chen2022",
        "Lemma E.1: router gradients sum to zero",
        "Lemma E.1 (App. E)",
        "Σ_m ∇_{θ_m} L = 0 at every step, so Σ_m θ_m stays at its initial value 0 along Algorithm 1.",
        "The gradient at random points, and the sum along whole runs of Algorithm 1, with and "
        "without a load-balancing loss; judged against a stated round-off budget.",
        "Per-expert sigmoid gates, the authors' gate h + r, and a gradient with its softmax term "
        "dropped: the sum must drift.",
    ),
    Claim(
        "B8",
        "chen2022",
        "Lemma D.4: every cluster has a profession at initialization",
        "Lemma D.4, third bullet (App. D)",
        "At initialization P(|M_k| ≥ 1 for every k) ≥ 1 − K(1 − 1/K)^M, where M_k is the set of "
        "experts whose best filter aligns with v_k (Def. D.3).",
        "Monte Carlo over Gaussian initializations with a Clopper-Pearson interval; the exact value "
        "for iid uniform professions is reported beside it.",
        "Identical initialization of every expert: all experts share one profession, the other M_k "
        "are empty and the bound must fail.",
    ),
    Claim(
        "B9",
        "chen2022",
        "Theorem 4.2: the nonlinear MoE learns the clusters",
        "Theorem 4.2; Tables 1 and 3",
        "Algorithm 1 trains the nonlinear MoE (M = 8, J = 16) to a small test error; every expert in "
        "M_k is accurate on cluster Ω_k, and the router sends Ω_k into M_k.",
        "Nonlinear MoEs trained under the theorem's conditions (σ0 = d^(-1/3), η_r = M²η), test error "
        "with a Clopper-Pearson interval; per-profession accuracy and dispatch from the trained model.",
        "A router that is not trained, and linear experts (the paper's own contrast): the error must "
        "exceed the bound.",
        "[Finding: two parts do not reproduce](../findings.md#theorem-4-2); the tables are "
        "[replications](../replications.md).",
    ),
    Claim(
        "B10",
        "chen2022",
        "Lemma E.4: the router starts near uniform",
        "Lemma E.4 (App. E), the exploration stage",
        "While ‖h‖∞ is small, max_m |P(route = m) − 1/M| ≤ M²‖h‖∞.",
        "Exact routing probabilities along the early steps of an Algorithm 1 run; also the lab's "
        "sharper form κ(max h − min h).",
        "Plain argmax, and non-identical noise: routing is far from uniform at h ≈ 0 and the bound "
        "must fail.",
        "[Finding: a sharper form](../findings.md#exploration).",
    ),
    Claim(
        "B11",
        "chen2022",
        "Table 11: normalized GD and load balancing",
        "Table 11",
        "With M = 32, normalized gradient descent for the experts or a load-balancing loss succeeds; "
        "plain gradient descent without load balancing fails.",
        "Not a `verify` check: it is the replication target `table11`.",
        "None of its own; the paper's contrast (plain GD without load balancing) is one of its cells.",
        "[Replications](../replications.md#table11) and [findings](../findings.md#tables-10-11).",
    ),
    Claim(
        "B12",
        "chen2022",
        "Dispatch entropy",
        "eq. (6.1) (Sec. 6)",
        "The dispatch entropy is 0 exactly when each expert receives at most one cluster, and it "
        "never exceeds log K.",
        "Hypothesis-generated dispatch count tables searched for a counterexample.",
        "The entropy of the expert load (a plausible misreading of (6.1)) must be caught.",
    ),
    Claim(
        "B13",
        "chen2022",
        "Theorem 4.2's proof: the steps with explicit constants",
        "Lemmas D.1, D.2, D.5, E.2, E.10, E.11, E.15, 5.2, F.1, F.2 (App. D-F)",
        "Each step's inequality with its constants written out (Hoeffding, Bernstein, a Gaussian tail, "
        "an exact worst case); the probabilistic ones hold with probability at least 1 − δ.",
        "Probabilistic steps as a failure rate over independent instances, its Clopper-Pearson interval "
        "against δ = 0.05; deterministic ones exactly on many gate outputs; F.1 by Monte Carlo per (M, G); "
        "Lemma 5.2 on monitored runs at T1 under the theorem's conditions.",
        "Each step breaks its own premise: labels all +1 (D.1), un-normalized noise (D.2), a 3σ0 "
        "initialization (D.5), one routing draw shared by every sample (E.2), Unif[0, 3] noise (E.10), "
        "a gate softmax(10h) and nearly noiseless routing (E.11, E.15), a common factor (F.1), "
        "x0 below S(1 + G)y0 (F.2), untrained experts (5.2).",
        "[The catalogue of steps](#proof-steps); [the proof along runs](../findings.md#proof-chain).",
    ),
    Claim(
        "B14",
        "chen2022",
        "Theorem 4.2's proof: the rates and the Õ(d^−c) steps, reported",
        "Lemmas E.3-E.9, E.12-E.14, E.16-E.18 (App. E)",
        "Rates in σ0 with hidden polylog factors (E.3, E.4, E.6-E.8, E.12, E.13), and bounds of order "
        "Õ(d^−c) with c ≤ 0.005 (E.5, E.9, E.14, E.16-E.18): no verdict is possible at a reachable d.",
        "Monitored runs of Algorithm 1 under the theorem's conditions: the σ0 exponents at d = 50 over "
        "σ0 ∈ [d^(−1/3), d^(−0.01)], the d exponents at σ0 = d^(−1/3), each with a 95 % interval beside "
        "the stated rate; a step whose stage (T1, T2] is empty says so.",
        "None: a report states a measurement and its category, never a verdict.",
        "[The catalogue of steps](#proof-steps); [the proof along runs](../findings.md#proof-chain).",
    ),
    Claim(
        "C1",
        "shazeer2017",
        "Noisy top-k gating",
        "Sec. 2.1, eqs. (3)-(5)",
        "G(x) = Softmax(KeepTopK(H(x), k)) has exactly k non-zero gates, they sum to 1, and they "
        "keep the order of H.",
        "Hypothesis logits with ties and huge gaps, for the NumPy gate and the Numba kernel; ties "
        "go to the lower index.",
        "A gate keeping every H at or above the k-th largest (too many on ties) and a softmax "
        "without the max shift (overflow): both must be caught.",
        "[Finding: exactly k holds for the support](../findings.md#shazeer).",
    ),
    Claim(
        "C2",
        "shazeer2017",
        "The smooth load estimator",
        "Sec. 4 and App. A, P(x, i)",
        "P(x, i) = Φ(((xW_g)_i − kth_excluding(H(x), k, i)) / Softplus((xW_noise)_i)) is the "
        "probability, over expert i's own noise with the others held fixed, that i is in the top k. "
        "Noisy top-1 with a constant noise scale is Lemma C.1's Gaussian family of Chen et al.",
        "Monte Carlo resampling ξ_i only, every pair inside its Clopper-Pearson interval "
        "(Bonferroni); the two-expert closed form Φ(Δh/(s√2)).",
        "The plain k-th largest (not excluding i), and the closed form without √2: both must fall "
        "outside the intervals.",
    ),
    Claim(
        "C3",
        "shazeer2017",
        "Balancing losses and their gradients",
        "Sec. 4, eqs. (6)-(10); App. A",
        "The importance and load losses w · CV(·)² and their gradients with respect to W_g and "
        "W_noise are as derived.",
        "Complex-step derivatives along random directions, judged against a stated number of ulps.",
        "The load loss with the threshold held constant (its gradient path dropped) must be detected.",
    ),
    Claim(
        "D1",
        "makkuva2020",
        "The population form of L4",
        "eqs. (6) and (7)",
        "For Gaussian inputs and regressors orthogonal to the gating parameters, the sample loss L4 "
        "of eq. (6) converges to the quartic polynomial of eq. (7) at the rate n^(-1/2). The "
        "normalising constants are derived from Hermite moments.",
        "|L4 − eq. (7)| against n with intervals; the fitted rate must contain −1/2 and 0 must lie "
        "in the interval at the largest n. The paper's and the Hermite constant of Q4 are compared.",
        "A regressor along a gating vector and a Gaussian-mixture input: the gap must be detected; "
        "under the mixture the Q4 constant has an exact effect that must be detected.",
        "[Findings](../findings.md#makkuva).",
    ),
    Claim(
        "D2",
        "makkuva2020",
        "Theorem 1: the landscape of L4",
        "Theorems 1 and 2",
        "Every approximate local minimum of L4 is the true regressor matrix up to permutation, sign "
        "and a known scaling, and gradient methods from random inits recover it.",
        "Gradient descent on eq. (7) from many random inits for k = 2, 3 (every end point a "
        "second-order stationary point, every one global); online SGD on eq. (6).",
        "A wrong-sign μ (spurious minima must appear) and no λ term (the loss is unbounded below and "
        "descent ends at a degenerate point).",
        "[Findings](../findings.md#makkuva).",
    ),
    Claim(
        "D3",
        "makkuva2020",
        "Theorems 3 and 4: L_log recovers the gates",
        "Theorems 3 and 4, eq. (8)",
        "Projected gradient descent on L_log, with the regressors fixed at the L4 estimate and "
        "sample splitting, converges geometrically to the gating parameters.",
        "The error path from several inits: a fitted contraction factor with its interval below 1, "
        "beside the factor predicted from the Hessian; the error plateau must shrink with more data.",
        "A projection radius that does not contain the target: convergence must fail.",
        "[Findings](../findings.md#makkuva).",
    ),
    Claim(
        "D4",
        "makkuva2020",
        "Fig. 1: L4 + L_log against ℓ2-SGD and EM",
        "Fig. 1, Sec. 4",
        "From the same inits, SGD on the ℓ2 loss and EM end with larger regression and gating errors "
        "than L4 followed by L_log.",
        "The three methods from the same inits and data; the claim holds for a baseline when, in at "
        "least one init, L4 + L_log recovers and the baseline ends stuck (the 99% interval of that "
        "rate excludes 0).",
        "L_log fed a regressor with the wrong sign (only the gating error can see it): the rule must fail.",
        "[Finding: EM does not get stuck](../findings.md#makkuva); the figure is a "
        "[replication](../replications.md#makkuva-fig1).",
    ),
    Claim(
        "D5",
        "makkuva2020",
        "Sec. 4.1: relaxed assumptions",
        "Sec. 4.1",
        "Recovery still works with gating vectors uniform on the sphere (not orthogonal to the "
        "regressors) and with inputs from a two-Gaussian mixture.",
        "SGD on L4 in both relaxed settings, over fresh random instances; the recovery rate's 99% "
        'Clopper–Pearson interval must lie above 1/2 ("typically recovers").',
        "A mixture whose means sit along a regressor (far from Gaussian there): non-recovery must "
        "be detected.",
        "[Findings](../findings.md#makkuva).",
    ),
    Claim(
        "D6",
        "makkuva2020",
        "Sec. 2: a GRU step as a hierarchical MoE",
        "eq. (4), Sec. 2",
        "A GRU step with binary gates equals a depth-2 hierarchical mixture of experts.",
        "Hypothesis weights and states of sizes 1-4: the general identity, the restricted cases where "
        "it is exact, and the Bernoulli-average form for sigmoid gates.",
        "The sigmoid GRU step itself read as eq. (4): must be detected as unequal.",
        "[Finding: eq. (4) is not an identity](../findings.md#makkuva).",
    ),
)

BY_ID = {c.id: c for c in CLAIMS}

# Substrate objects of Chen et al. that are covered by unit tests rather than a `verify` check.
SUBSTRATE = (
    (
        "A2",
        "the expert f_m = Σ_j Σ_p σ(⟨w_{m,j}, x⁽ᵖ⁾⟩) and its activations (eq. (3.1))",
        "tests/chen2022/test_model.py",
    ),
    ("A3", "the MoE output with top-1 noisy routing (Sec. 3.2, eq. (3.3))", "tests/chen2022/test_model.py"),
    (
        "A4",
        "Algorithm 1: normalized GD for experts, GD for the router (Sec. 3.3)",
        "tests/chen2022/test_training.py",
    ),
    ("A6", "test accuracy, dispatch entropy, professions M_k, expert load", "tests/chen2022/test_metrics.py"),
)


def paper_of(claim_id: str, module: str | None = None) -> str | None:
    """The paper a claim belongs to: from the catalogue, else the check's module, else the lab's letter
    (A-D followed by a number); None for a claim of none of the lab's papers (a plugin's)."""
    if claim_id in BY_ID:
        return BY_ID[claim_id].paper
    if module:
        for key in PAPERS:
            if f".{key}." in f".{module}.":
                return key
    if len(claim_id) < 2 or not claim_id[1:].isdigit():
        return None
    return {"A": "chen2022", "B": "chen2022", "C": "shazeer2017", "D": "makkuva2020"}.get(claim_id[0].upper())
