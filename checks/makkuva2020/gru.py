"""Sec. 2, eq. (4) of Makkuva et al. 2020 (D6): a GRU step as a depth-2 hierarchical MoE.

Cases come from `checks.strategies.makkuva.gru_cases`; the largest gap is found by
`checks.search.hypothesis_maximum` without target() steering.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from checks.search import hypothesis_maximum
from checks.strategies.makkuva import gru_cases
from lab.core.descriptions import load_claims, load_findings
from lab.core.records import Record, upper_bound_record
from lab.core.registry import register
from lab.makkuva2020.gated_regression import (
    gru_gates,
    gru_step,
    hierarchical_moe_step,
    hierarchical_moe_update,
)

DESCRIPTIONS = load_claims(Path(__file__).with_suffix(".toml"))  # what its claims say, as data
FINDINGS = load_findings(Path(__file__).with_suffix(".findings.toml"))  # where the paper and the lab part


def _gap(case, gate: str, reset: str = "before") -> float:
    """max over coordinates of |GRU step − eq. (4)| for one case with `gate` ("binary", "sigmoid") gates."""
    params, x, h = case
    step = gru_step(params, x, h, gate, reset=reset)
    return float(np.max(np.abs(step - hierarchical_moe_step(params, x, h, gate))))


def bernoulli_gap(case) -> float:
    """|E over independent Bernoulli gates of binary eq. (4) − eq. (4) with sigmoid gates|, enumerated."""
    params, x, h = case
    z, r = gru_gates(params, x, h, "sigmoid")
    m = h.size
    mean = np.zeros(m)
    for bits in range(4**m):
        b = np.array([(bits >> j) & 1 for j in range(2 * m)], dtype=float)
        bz, br = b[:m], b[m:]
        weight = np.prod(np.where(bz == 1, z, 1 - z)) * np.prod(np.where(br == 1, r, 1 - r))
        mean += weight * hierarchical_moe_update(params, x, h, bz, br)
    return float(np.max(np.abs(mean - hierarchical_moe_step(params, x, h, "sigmoid"))))


def _largest_gap(strategy, measure, examples: int, seed: int) -> tuple[float, object]:
    """Largest `measure(case)` over unsteered Hypothesis cases (seeded), with its case (eq. 4)."""
    best = hypothesis_maximum(lambda case: {"gap": measure(case)}, strategy, examples, seed, steer=False)
    return best["gap"]


@register("D6", name="checks.makkuva.check_d6")
def check_d6(seed: int, tier: str) -> list[Record]:
    """Sec. 2, eq. (4): a binary-gated GRU step as a depth-2 hierarchical MoE; what holds with sigmoids."""
    examples = 50 if tier == "quick" else 500
    params = {
        "examples": examples,
        "entries": "[-2, 2]",
        "sizes": "1..4",
        "act": "tanh",
        "generator": "Hypothesis",
    }
    generic, case = _largest_gap(gru_cases(), lambda c: _gap(c, "binary"), examples, seed)
    params_c, x_c, h_c = case
    example = {
        "m": h_c.size,
        "reset_gate": gru_gates(params_c, x_c, h_c, "binary")[1],
        "W_h": params_c.W_h,
        "h": h_c,
    }
    records = [
        upper_bound_record(
            claim="D6",
            key="reset-after",
            statement="reset-after GRU, h̃ = g(U_h x + r ⊙ (W_h h)), binary gates: equals eq. (4) exactly",
            kind="premise",
            params={**params, "reset": "after"},
            measured=_largest_gap(gru_cases(), lambda c: _gap(c, "binary", "after"), examples, seed)[0],
            bound=0.0,
            note="coordinate i is g(U_h x + r_i (W_h h))_i, which is eq. (4)'s mixture for r_i in {0, 1}",
        ),
        Record(
            claim="D6",
            key="reset-before",
            statement="a GRU step with binary gates equals the hierarchical MoE of eq. (4) (any weights)",
            kind="premise",
            params=params,
            measured=generic,
            bound=0.0,
            verdict="holds" if generic == 0.0 else "violated",
            rule="upper",
            finding=(
                "eq. (4) does not follow from the GRU Sec. 2 displays: for the reset-before form it writes, "
                "g(U_h x + W_h (r ⊙ h)), coordinate i agrees with eq. (4) only if "
                "sum_j (W_h)_ij (r_j - r_i) h_j = 0 (a scalar state, a diagonal W_h or a reset gate constant "
                "across coordinates); eq. (4) is exact for the reset-after form g(U_h x + r ⊙ (W_h h))"
            ),
            extra={"worst_case": example},
        ),
    ]
    restricted = {
        r: _largest_gap(gru_cases(r), lambda c: _gap(c, "binary"), examples, seed)[0]
        for r in ("scalar", "diagonal", "constant-reset")
    }
    records.append(
        upper_bound_record(
            claim="D6",
            key="restricted-state",
            statement="binary gates: GRU = eq. (4) exactly if the state is scalar, W_h diagonal or r uniform",
            kind="premise",
            params={**params, "restrictions": list(restricted)},
            measured=max(restricted.values()),
            bound=0.0,
            extra={"max_gap": restricted},
        )
    )
    records.append(
        upper_bound_record(
            claim="D6",
            key="sigmoid-bernoulli-average",
            statement="sigmoid gates: eq. (4) = its binary version averaged over independent Bernoulli gates",
            kind="premise",
            params={**params, "method": "exact enumeration of the 4^m gate patterns", "rtol": 1e-12},
            measured=_largest_gap(gru_cases(max_dim=3), bernoulli_gap, examples, seed)[0],
            bound=0.0,
            rtol=1e-12,
        )
    )
    records.append(
        upper_bound_record(
            claim="D6",
            key="control-sigmoid-gate",
            statement="sigmoid gates: the GRU step itself equals eq. (4) (must be detected as false)",
            kind="negative-control",
            params=params,
            measured=_largest_gap(gru_cases(), lambda c: _gap(c, "sigmoid"), examples, seed)[0],
            bound=0.0,
            note="g(U_h x + W_h (r ⊙ h)) ≠ the r-average of g; only the Bernoulli-expectation form holds",
        )
    )
    return records
