"""Claim SW1: N·Σ f_i P_i = 1 when top-1 dispatch is balanced (f_i = 1/N), whatever the router's P."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from checks.search import hypothesis_maximum
from lab.core.records import Record, upper_bound_record
from lab.core.registry import register
from switch_aux_loss.loss import auxiliary_loss, balanced_logits, crowded, router_probabilities

CLAIM = "SW1"
STATEMENT = "Switch eq. (4): N·Σ f_i P_i = 1 under balanced top-1 dispatch (max |loss − 1| over inputs)"
ROUND_OFF = 1e-12  # a mean of at most 128 probabilities, times N <= 16: far below this
# (N experts, tokens per expert, logit scale, generator seed)
INSTANCES = st.tuples(st.integers(2, 16), st.integers(1, 8), st.floats(0.1, 10.0), st.integers(0, 2**32 - 1))


def deviation(instance: tuple[int, int, float, int], *, broken: bool) -> dict[str, float]:
    """|N·Σ f_i P_i − 1| on balanced logits (`broken`: expert 1's tokens crowded onto expert 0)."""
    n_experts, per_expert, scale, seed = instance
    logits = balanced_logits(np.random.default_rng(seed), n_experts, per_expert, scale)
    if broken:
        logits = crowded(logits, per_expert)
    return {"deviation": abs(auxiliary_loss(router_probabilities(logits)) - 1.0)}


def largest_deviation(seed: int, examples: int, *, broken: bool) -> Record:
    """The record of the largest deviation Hypothesis finds in `examples` seeded inputs."""
    found = hypothesis_maximum(lambda x: deviation(x, broken=broken), INSTANCES, examples, seed)
    value, (n_experts, per_expert, scale, _) = found["deviation"]
    return upper_bound_record(
        claim=CLAIM,
        key="control-crowded-expert" if broken else "balanced",
        statement=("mutant: one expert's tokens crowded onto another: " if broken else "") + STATEMENT,
        kind="negative-control" if broken else "premise",
        params={"examples": examples, "worst_N": n_experts, "worst_per_expert": per_expert},
        measured=value,
        bound=0.0,
        rtol=ROUND_OFF,
        note=f"worst input: N={n_experts}, {per_expert} tokens per expert, logit scale {scale:.3g}",
    )


@register(CLAIM, name="switch_aux_loss.balanced_dispatch")
def verify_balanced_dispatch(seed: int, tier: str) -> list[Record]:
    examples = 200 if tier == "quick" else 2_000
    return [largest_deviation(seed, examples, broken=False), largest_deviation(seed, examples, broken=True)]
