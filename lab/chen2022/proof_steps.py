"""The steps of Theorem 4.2's proof (Chen et al. 2022, App. D–E, with App. C's and F's lemmas), as data."""

from __future__ import annotations

from dataclasses import dataclass

# Where in the proof a step applies; a step that holds at every t is listed where the proof uses it.
STAGES = (
    "data",
    "initialization",
    "exploration (t ≤ T1)",
    "router learning (T1 < t ≤ T2)",
    "generalization",
)

CATEGORIES = {
    "explicit": "constants explicit or derivable (Hoeffding, Bernstein, exact identities): checkable as a "
    "premise with a negative control",
    "rate": "a rate in σ0, η or t is stated: fit the exponent with an interval",
    "undecidable": "only Õ(d^−c) with a tiny c: no verdict is possible at reachable d; report the value and "
    "its trend",
    "definition": "defines an object the later steps use; nothing to bound",
}

# The paper's sections, in the order the text presents them.
SECTIONS = ("App. C", "App. D", "App. E", "App. E.1", "App. E.2", "App. E.3", "App. F")


@dataclass(frozen=True)
class ProofStep:
    """One numbered step: `lemma` is the paper's number, `kind` its environment (Lemma, Definition, ...)."""

    lemma: str
    kind: str
    section: str
    statement: str
    quantity: str
    stage: str
    category: str
    why: str
    checked_by: str | None = None


PROOF_STEPS = (
    ProofStep(
        "C.1",
        "Lemma",
        "App. C",
        "For iid routing noise whose density is at most κ, the routing probabilities "
        "p_m(h) = P(argmax_m′ {h_m′ + r_m′} = m) satisfy ‖p(h) − p(ĥ)‖∞ ≤ κM²‖h − ĥ‖∞ for any two gate "
        "outputs h, ĥ ∈ ℝ^M. It extends Lemma 5.1 (Unif[0, 1] noise, κ = 1).",
        "‖p(h) − p(ĥ)‖∞ against κM²‖h − ĥ‖∞",
        "exploration (t ≤ T1)",
        "explicit",
        "κM² is an explicit constant and p is computable exactly, so the bound is a premise with negative "
        "controls (plain argmax, vanishing noise width).",
        "B4",
    ),
    ProofStep(
        "C.3",
        "Lemma",
        "App. C",
        "With Unif[0, 1] routing noise any two experts satisfy |p_m − p_m′| ≤ M²|h_m − h_m′| (swap h_m and "
        "h_m′ and apply Lemma 5.1).",
        "|p_m − p_m′| against M²|h_m − h_m′|",
        "router learning (T1 < t ≤ T2)",
        "explicit",
        "The constant M² is explicit and p is computable exactly.",
        "B5",
    ),
    ProofStep(
        "C.4",
        "Lemma",
        "App. C",
        "With Unif[0, 1] routing noise, an expert whose gate output is at least 1 below the largest "
        "(h_m ≤ max_m′ h_m′ − 1) is never chosen.",
        "P(route = m) for an expert with h_m ≤ max_m′ h_m′ − 1 (exactly 0)",
        "router learning (T1 < t ≤ T2)",
        "explicit",
        "An exact statement (probability exactly 0) with no hidden constant.",
        "B6",
    ),
    ProofStep(
        "D.1",
        "Lemma",
        "App. D",
        "With probability ≥ 1 − δ, for every cluster k the training set's sums concentrate: "
        "Σ_{i∈Ω_k} y_i β_i³ and Σ_{i∈Ω_k} y_i ε_i γ_i³ are Õ(√n), so are Σ y_i α_i and Σ ε_i γ_i "
        "over Ω⁺_{k,k′} and over Ω⁻_{k,k′}, while Σ_{i∈Ω_k} α_i³ = E[α³]n/K + Õ(√n) and "
        "Σ_{i∈Ω_k} β_i = E[β]n/K + Õ(√n).",
        "the ten sums of (D.1)–(D.3) minus their means, divided by √n",
        "data",
        "explicit",
        "Hoeffding on variables bounded by C1 ≤ α, β, γ ≤ C2 gives explicit constants (Õ hides the range "
        "times √log(K/δ)); the proof's union bound (δ/8K per sum, over k only) does not count the sums "
        "indexed by k′, a harmless factor K.",
        "B13",
    ),
    ProofStep(
        "D.2",
        "Lemma",
        "App. D",
        "If d = Ω(log(4nP/δ)), with probability ≥ 1 − δ every training noise patch has ‖ξ_{i,p}‖₂ = O(1) "
        "(‖ξ‖₂² ≤ 2 in the proof), and its inner products with every v_k, every c_k and every other noise "
        "patch are Õ(d^−1/2).",
        "‖ξ_{i,p}‖₂, and √d · max |⟨v_k, ξ_{i,p}⟩|, |⟨c_k, ξ_{i,p}⟩|, |⟨ξ_{i,p}, ξ_{i′,p′}⟩|",
        "data",
        "explicit",
        "Bernstein's inequality with the constants written in the proof, e.g. "
        "|⟨ξ_{i,p}, ξ_{i′,p′}⟩| ≤ 2σ_p²√(log(12n²P²/δ)/d).",
        "B13",
    ),
    ProofStep(
        "D.3",
        "Definition",
        "App. D",
        "Each expert m gets a profession (k∗_m, j∗_m) = argmax_{j,k} ⟨v_k, w_{m,j}⁽⁰⁾⟩, fixed by the "
        "initialization; M_k = {m : k∗_m = k} is the set of experts of profession k.",
        "the professions (k∗_m, j∗_m) and the sets M_k, from W⁽⁰⁾",
        "initialization",
        "definition",
        "A definition: nothing to bound; every later step is stated in terms of k∗_m, j∗_m and M_k.",
    ),
    ProofStep(
        "D.4",
        "Lemma",
        "App. D",
        "If M ≥ Θ(K log(K/δ)) and J ≥ Θ(log(M/δ)), with probability ≥ 1 − δ: every expert's best "
        "alignment ⟨w_{m,j∗_m}⁽⁰⁾, v_{k∗_m}⟩ exceeds all its other ⟨w_{m,j}⁽⁰⁾, v_k⟩ by a factor "
        "1/(1 − δ/(3MJ²K²)), it is at least 0.01σ0, and every M_k is non-empty.",
        "per expert: second-best over best ⟨w_{m,j}⁽⁰⁾, v_k⟩, best over σ0; and min_k |M_k|",
        "initialization",
        "explicit",
        "All three bullets have explicit constants (1 − δ/(3MJ²K²), 0.01σ0, 1 − K(1 − 1/K)^M); B8 checks "
        "the third; the proof asks J ≥ Θ(K⁻¹log(M/δ)) where the statement says J ≥ Θ(log(M/δ)).",
        "B8",
    ),
    ProofStep(
        "D.5",
        "Lemma",
        "App. D",
        "Given Lemma D.2's event, with probability ≥ 1 − δ every initial filter has "
        "|⟨w_{m,j}⁽⁰⁾, v⟩| ≤ Õ(σ0) for every v among the v_k, the c_k and the training noise patches "
        "ξ_{i,p}.",
        "max |⟨w_{m,j}⁽⁰⁾, v⟩| / σ0 over m, j and v ∈ {v_k} ∪ {c_k} ∪ {ξ_{i,p}}",
        "initialization",
        "explicit",
        "A Gaussian tail and a union bound: Õ(σ0) is σ0‖v‖₂√(2 log(2nPMJ/δ)), derivable.",
        "B13",
    ),
    ProofStep(
        "E.1",
        "Lemma",
        "App. E",
        "At every step Σ_m ∇_{θ_m} L⁽ᵗ⁾ = 0, so Σ_m θ_m⁽ᵗ⁾ stays at Σ_m θ_m⁽⁰⁾, which is 0 under the zero "
        "initialization of the router.",
        "‖Σ_m ∇_{θ_m} L⁽ᵗ⁾‖ and ‖Σ_m θ_m⁽ᵗ⁾ − Σ_m θ_m⁽⁰⁾‖ along a run",
        "router learning (T1 < t ≤ T2)",
        "explicit",
        "An exact identity (0 up to round-off) with no hidden constant; E.18 uses it at T2.",
        "B7",
    ),
    ProofStep(
        "E.2",
        "Lemma",
        "App. E",
        "With probability ≥ 1 − 1/d over the routing noise, for all t ≤ d¹⁰⁰ the projections of the routed "
        "gradients on every v_k and c_k are within Õ(n^−1/2(σ0 + ηt)²) of their expectation over the routes "
        "for each w_{m,j}, and within Õ(n^−1/2(σ0 + ηt)³) for each θ_m.",
        "|⟨∇L⁽ᵗ⁾, v⟩ − E_r⟨∇L⁽ᵗ⁾, v⟩| for ∇ over w_{m,j} and θ_m, v ∈ {v_k} ∪ {c_k}",
        "exploration (t ≤ T1)",
        "explicit",
        "Hoeffding over independent routing draws: with the per-example bound |A_i| measured at the "
        "current parameters and the expectation computed from exact routing probabilities, the constants "
        "are explicit.",
        "B13",
    ),
    ProofStep(
        "E.3",
        "Lemma",
        "App. E.1",
        "For t ≤ T1 = ⌊η⁻¹σ0^0.5⌋ every filter's projections on v_k, c_k and ξ_{i,p} are O(σ0^0.5), every "
        "expert output is Õ(σ0^1.5), |ℓ′_{i,t} − 1/2| ≤ Õ(σ0^1.5) and ‖θ_m‖₂ ≤ Õ(σ0^1.5); hence "
        "‖h(x_i)‖∞ = Õ(σ0^1.5) and π_m(x_i) = 1/M + Õ(σ0^1.5).",
        "max |⟨w_{m,j}⁽ᵗ⁾, ·⟩|, max |f_m(x_i)|, the largest gap between |ℓ′_{i,t}| and 1/2, ‖θ_m⁽ᵗ⁾‖₂, "
        "‖h(x_i)‖∞, max |π_m − 1/M|",
        "exploration (t ≤ T1)",
        "rate",
        "Powers of σ0 (0.5 and 1.5) with polylog factors hidden: fit the exponents over runs at several σ0; "
        "the proof writes ℓ′ = 1/(e^s + 1) (positive) where E.17 uses ℓ′ = −Θ(1), so read it as |ℓ′|.",
        "B14",
    ),
    ProofStep(
        "E.4",
        "Lemma",
        "App. E.1",
        "For t ≤ T1 the router is near uniform: max_m |P(m_{i,t} = m) − 1/M| = Õ(σ0^1.5) for every training "
        "example (Lemma E.3's bound on ‖h‖∞ through Lemma 5.1).",
        "max_{i,m} |P(m_{i,t} = m) − 1/M| for t ≤ T1",
        "exploration (t ≤ T1)",
        "rate",
        "The σ0^1.5 rate inherits Lemma E.3's hidden constant; the step from ‖h‖∞ to the routing "
        "probabilities is Lemma 5.1's explicit M², which is what B10 checks along a run.",
        "B10",
    ),
    ProofStep(
        "E.5",
        "Lemma",
        "App. E.1",
        "For t ≤ T1, ⟨∇_{w_{m,j}} L, v_k⟩ = −(E[α³] + Õ(d^−0.005))/(2KM²) · σ′(⟨w_{m,j}, v_k⟩) + Õ(σ0^2.5), "
        "while the projections on c_k and ξ_{i,p} are Õ(d^−0.005)σ′(⟨w_{m,j}, ·⟩) + Õ(σ0^2.5); a matching "
        "bound on ‖∇_{w_{m,j}} L‖₂ follows.",
        "⟨∇_{w_{m,j}} L, v_k⟩ / σ′(⟨w_{m,j}, v_k⟩) against −E[α³]/(2KM²); the same ratios for c_k, ξ_{i,p}",
        "exploration (t ≤ T1)",
        "undecidable",
        "The leading coefficient E[α³]/(2KM²) is explicit and can be reported, but the error terms are "
        "Õ(d^−0.005) (above 0.9 for every d below 10⁹); the txt's derivation drops the minus sign and "
        "writes σ′(⟨w, c_k⟩) where v_k is meant.",
        "B14",
    ),
    ProofStep(
        "E.6",
        "Lemma",
        "App. E.1",
        "For t ≤ T1 each expert grows only its profession direction: ⟨w_{m,j∗_m}, v_{k∗_m}⟩ = O(σ0^0.5), "
        "while every other ⟨w_{m,j}, v_k⟩ and every ⟨w_{m,j}, c_k⟩, ⟨w_{m,j}, ξ_{i,p}⟩ stays Õ(σ0).",
        "⟨w_{m,j∗_m}⁽ᵗ⁾, v_{k∗_m}⟩ / σ0^0.5, and the other projections over σ0",
        "exploration (t ≤ T1)",
        "rate",
        "Powers of σ0 (0.5 and 1) with polylog factors from Lemma F.2's G⁻¹ = 3M² log d; the proof verifies "
        "x0 ≥ S(1 + G⁻¹)y0 from App. D, which Lemma D.4's gap does not give (see F.2).",
        "B14",
    ),
    ProofStep(
        "E.7",
        "Lemma",
        "App. E.1",
        "Let T⁽ᵐ⁾ be the first step with ‖∇_{W_m} L⁽ᵗ⁾‖_F ≥ σ0^1.8; then T⁽ᵐ⁾ = Õ(η⁻¹σ0^0.8) < 0.01T1, and "
        "for T⁽ᵐ⁾ < t ≤ T1 the profession filter's gradient lies along v_{k∗_m}: its projection on v_{k∗_m} "
        "is at least (1 − σ0^0.1)‖∇_{W_m} L⁽ᵗ⁾‖_F in size.",
        "T⁽ᵐ⁾ against η⁻¹σ0^0.8; |⟨∇_{w_{m,j∗_m}} L, v_{k∗_m}⟩| / ‖∇_{W_m} L‖_F after T⁽ᵐ⁾",
        "exploration (t ≤ T1)",
        "rate",
        "A rate in η and σ0 (T⁽ᵐ⁾ ∝ η⁻¹σ0^0.8): fit both exponents; the proof cites a Lemma F.5 that is not "
        "in the text, writes T_m for T⁽ᵐ⁾, and needs −⟨∇, v⟩ for its sign.",
        "B14",
    ),
    ProofStep(
        "E.8",
        "Lemma",
        "App. E.1",
        "For t < T1 Lemma E.6's four bounds hold, and in addition ⟨w_{m,j∗_m}, v_{k∗_m}⟩ ≥ (1 − σ0^0.1)ηt "
        "once t ≥ T1/2: the profession filter moves at nearly the full normalized step.",
        "⟨w_{m,j∗_m}⁽ᵗ⁾, v_{k∗_m}⟩ / (ηt) for T1/2 ≤ t < T1, with E.6's quantities",
        "exploration (t ≤ T1)",
        "rate",
        "Linear growth in ηt with a shortfall of order σ0^0.1: fit the slope and the shortfall's exponent; "
        "the proof only reaches (1 − O(σ0^0.1)), weaker than the statement's constant 1.",
        "B14",
    ),
    ProofStep(
        "E.9",
        "Proposition",
        "App. E.2",
        "For T1 ≤ t ≤ T2 = ⌊η⁻¹M⁻²⌋: (E.8) |f_m(x_i) − f_m(x̂_i)| ≤ O(d^−0.001), with x̂ keeping only the "
        "feature signal and feature noise; (E.9) ‖h(x_i) − h(x̄_i)‖∞ ≤ O(d^−0.001), with x̄ keeping only the "
        "cluster-centre patch; (E.10) P(m_{i,t} = m) and π_m(x_i) are Ω(1/M) for every i ∈ Ω_{k∗_m}.",
        "|f_m(x_i) − f_m(x̂_i)|, ‖h(x_i) − h(x̄_i)‖∞, and min P(m_{i,t} = m), π_m(x_i) over i ∈ Ω_{k∗_m}",
        "router learning (T1 < t ≤ T2)",
        "undecidable",
        "Its bounds are O(d^−0.001) (above 0.97 for every d below 10¹³), so no verdict at reachable d; "
        "equation (E.9) inside it shares the number with the proposition, and E.18 calls it Lemma E.9.",
        "B14",
    ),
    ProofStep(
        "E.10",
        "Lemma",
        "App. E.2",
        "For T1 ≤ t ≤ T2, |f_m(x_i; W⁽ᵗ⁾)| = O(1) since normalized steps move each filter by at most "
        "ηT2 = M⁻², and the chosen expert's gate value is π_{m_{i,t}}(x_i) ≥ 1/(eM) since by Lemma C.4 its "
        "logit is within 1 of the largest.",
        "max |f_m(x_i; W⁽ᵗ⁾)|, and min_i π_{m_{i,t}}(x_i) against 1/(eM)",
        "router learning (T1 < t ≤ T2)",
        "explicit",
        "1/(eM) is explicit and holds at every step with Unif[0, 1] noise; the O(1) on |f_m| is derivable "
        "from ‖w⁽ᵗ⁾ − w⁽⁰⁾‖₂ ≤ ηt and Lemma D.5.",
        "B13",
    ),
    ProofStep(
        "E.11",
        "Lemma",
        "App. E.2",
        "With δ_Θ = max_i ‖h(x̄_i; Θ) − h(x_i; Θ)‖∞ and m̄_{i,t} the expert routed from h(x̄_i): "
        "|π_m(x_i) − π_m(x̄_i)| = O(δ_Θ) and |P(m_{i,t} = m) − P(m̄_{i,t} = m)| = O(M²δ_Θ) for every m, i.",
        "|π_m(x_i) − π_m(x̄_i)| / δ_Θ and |P(m_{i,t} = m) − P(m̄_{i,t} = m)| / (M²δ_Θ)",
        "router learning (T1 < t ≤ T2)",
        "explicit",
        "Deterministic inequalities for any Θ: the softmax part has a derivable constant (near 2 for small "
        "δ_Θ) and the routing part is Lemma 5.1's M²; the proof writes Õ(δ_Θ) where the statement has "
        "O(M²δ_Θ).",
        "B13",
    ),
    ProofStep(
        "E.12",
        "Lemma",
        "App. E.2",
        "If Proposition E.9 holds on [T1, T], then on [T1, T + 1] the profession filter keeps growing, "
        "⟨w_{m,j∗_m}, v_{k∗_m}⟩ ≥ (1 − O(σ0^0.1))ηt, and every other projection on v_k, c_k and ξ_{i,p} "
        "stays Õ(σ0): the experts keep what they learned while exploring.",
        "⟨w_{m,j∗_m}⁽ᵗ⁾, v_{k∗_m}⟩ / (ηt), and the other projections over σ0, for T1 ≤ t ≤ T2",
        "router learning (T1 < t ≤ T2)",
        "rate",
        "Rates in ηt and σ0 (slope ηt, shortfall σ0^0.1, the rest Õ(σ0)); the lemma is one step of the "
        "induction on Proposition E.9.",
        "B14",
    ),
    ProofStep(
        "E.13",
        "Lemma",
        "App. E.2",
        "If Proposition E.9 holds on [T1, T], then on [T1, T + 1] |f_m(x_i) − f_m(x̂_i)| = Õ(σ0³), and "
        "y_i f_m(x̂_i) = Σ_j [α_i³σ(⟨w_{m,j}, v_k⟩) ± γ_i³σ(⟨w_{m,j}, v_k′⟩)], + on Ω⁺_{k,k′} and − on "
        "Ω⁻_{k,k′}.",
        "max |f_m(x_i) − f_m(x̂_i)| against σ0³, for T1 ≤ t ≤ T2",
        "router learning (T1 < t ≤ T2)",
        "rate",
        "A power of σ0 (σ0³) with a hidden factor in J and P (the proof's O(J) should also count the P − 3 "
        "noise patches).",
        "B14",
    ),
    ProofStep(
        "E.14",
        "Lemma",
        "App. E.2",
        "If Proposition E.9 holds on [T1, T], then on [T1, T + 1] the router sees only the cluster centre: "
        "δ_Θ⁽ᵗ⁾ = max_i ‖h(x̄_i) − h(x_i)‖∞ = Õ(d^−0.005), and max |⟨θ_m, v_k⟩|, max |⟨θ_m, ξ_{i,p}⟩| are "
        "Õ(d^−0.005).",
        "δ_Θ⁽ᵗ⁾, max |⟨θ_m⁽ᵗ⁾, v_k⟩| and max |⟨θ_m⁽ᵗ⁾, ξ_{i,p}⟩|, for T1 ≤ t ≤ T2",
        "router learning (T1 < t ≤ T2)",
        "undecidable",
        "Only Õ(d^−0.005); moreover the proof's recursion gives δ_Θ ≤ exp(C1η_r t)(δ_Θ⁽⁰⁾ + C2/C1) with "
        "C1η_r t of order M² at t = T2, an exp(O(M²)) factor that Õ does not usually hide.",
        "B14",
    ),
    ProofStep(
        "E.15",
        "Lemma",
        "App. E.2",
        "At every step, within a profession (m, m′ ∈ M_k, i ∈ Ω_k) the gate values differ by at most 2Δ_Θ "
        "and the routing probabilities by O(M²)Δ_Θ, where "
        "Δ_Θ = max_k max_{m,m′∈M_k} max_{i∈Ω_k} |h_m(x_i) − h_m′(x_i)|.",
        "max |π_m − π_m′| / Δ_Θ and max |P(m_{i,t} = m) − P(m_{i,t} = m′)| / (M²Δ_Θ) within a profession",
        "router learning (T1 < t ≤ T2)",
        "explicit",
        "Both constants are explicit (2 for the gates, M² through Lemma C.3) and the inequalities hold at "
        "every step.",
        "B13",
    ),
    ProofStep(
        "E.16",
        "Lemma",
        "App. E.2",
        "If Proposition E.9 holds on [T1, T], then Δ_Θ⁽ᵗ⁾ ≤ Õ(d^−0.001) on [T1, T + 1]: the router treats "
        "the experts of one profession almost equally.",
        "Δ_Θ⁽ᵗ⁾ = max_k max_{m,m′∈M_k} max_{i∈Ω_k} |h_m(x_i) − h_m′(x_i)|, for T1 ≤ t ≤ T2",
        "router learning (T1 < t ≤ T2)",
        "undecidable",
        "Only Õ(d^−0.001), and the proof reuses E.14's recursion with the same exp(O(M²)) factor.",
        "B14",
    ),
    ProofStep(
        "E.17",
        "Lemma",
        "App. E.2",
        "If Proposition E.9 holds on [T1, T], then for m ∉ M_k and t ∈ [T1, T] with "
        "⟨θ_m, c_k⟩ ≥ max_m′ ⟨θ_m′, c_k⟩ − 1, the router gradient has "
        "⟨∇_{θ_m} L⁽ᵗ⁾, c_k⟩ ≥ Ω(η³t³/(KM³)) + Õ(d^−0.005), so gradient steps push ⟨θ_m, c_k⟩ down.",
        "⟨∇_{θ_m} L⁽ᵗ⁾, c_k⟩ for m ∉ M_k within 1 of the best on c_k, against η³t³/(KM³)",
        "router learning (T1 < t ≤ T2)",
        "undecidable",
        "The t³ term is at most K⁻¹M⁻⁹ for t ≤ T2, far below the unsigned Õ(d^−0.005) term at reachable d, "
        "so the bound is vacuous there (the t-exponent can still be reported); the proof's last display "
        "mixes ≥ and ≤ and cites an (E.20) that is not in the text.",
        "B14",
    ),
    ProofStep(
        "E.18",
        "Lemma",
        "App. E.2",
        "Proposition E.9 holds for all T1 ≤ t ≤ T2, and at T2 every expert outside M_k trails the best on "
        "c_k: ⟨θ_m, c_k⟩ ≤ max_m′ ⟨θ_m′, c_k⟩ − Ω(K⁻¹M⁻⁹) for m ∉ M_k.",
        "max_m′ ⟨θ_m′, c_k⟩ − ⟨θ_m, c_k⟩ at T2 for m ∉ M_k, against K⁻¹M⁻⁹",
        "router learning (T1 < t ≤ T2)",
        "undecidable",
        "It contains Proposition E.9 (O(d^−0.001)), and its gap K⁻¹M⁻⁹ carries a hidden constant beside "
        "Õ(d^−0.005) terms that dwarf it at reachable d: report the measured gap and its trend in M.",
        "B14",
    ),
    ProofStep(
        "5.2",
        "Lemma",
        "App. E.3",
        "Under Theorem 4.2's conditions, with probability 1 − o(1), every expert m ∈ M_k at the end of "
        "exploration (t = T1) errs with probability o(1) on its cluster Ω_k and with probability Ω(1/K) on "
        "every other cluster. Stated in Sec. 5, proved in App. E.3.",
        "per expert m ∈ M_k, the test error of f_m at T1 on Ω_k and on each Ω_k′, k′ ≠ k",
        "generalization",
        "explicit",
        "The proof's bounds are explicit, at most 1/d on Ω_k and at least (1 − 1/d)/(2(K − 1)) on Ω_k′ "
        "(the mass of Ω⁻_{k′,k}), but both need the σ0^1.5 margin to beat hidden Õ(σ0³) terms.",
        "B13",
    ),
    ProofStep(
        "F.1",
        "Lemma",
        "App. F",
        "For M iid N(0, 1) variables ordered a⁽¹⁾ ≥ a⁽²⁾ ≥ …, P(a⁽²⁾ ≥ (1 − G)a⁽¹⁾) ≤ GM²: the two largest "
        "are rarely within a factor 1 − G of each other.",
        "P(a⁽²⁾ ≥ (1 − G)a⁽¹⁾) against GM²",
        "initialization",
        "explicit",
        "A statement about Gaussians with the explicit constant GM², checkable by Monte Carlo with an "
        "interval (the proof writes ρ for the N(0, σ0²) density where N(0, 1) is meant).",
        "B13",
    ),
    ProofStep(
        "F.2",
        "Lemma",
        "App. F",
        "For positive sequences with x_{t+1} ≥ x_t + ηC_t x_t², y_{t+1} ≤ y_t + SηC_t y_t², steps of size at "
        "most η, x0 ≥ S(1 + G)y0 and η small enough, y stays O(y0/G) until x first reaches any A > x0. "
        "Quoted from Allen-Zhu and Li (2020c), Lemma C.19, adapted to normalized steps.",
        "y at the first t with x_t ≥ A, against y0/G (in E.6: a competing projection when the profession "
        "one reaches σ0^0.5)",
        "exploration (t ≤ T1)",
        "explicit",
        "A deterministic statement whose O(·) is derivable from (F.1)–(F.2), though the txt carries "
        "leftovers of the source (an exponent q − 1, x0 for y0 in b′), and E.6 checks "
        "x0 ≥ S(1 + G⁻¹)y0 where this statement asks x0 ≥ S(1 + G)y0.",
        "B13",
    ),
)
