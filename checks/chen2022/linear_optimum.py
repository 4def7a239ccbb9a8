"""Theorem 4.1 (B2): the best linear CNN found, bias-free and with a bias b, on setting 3 and Table 7's law.

The science (exact accuracy by quadrature, the global search, the sampled check) is in
`lab.chen2022.linear_optimum`. Per law and class: the optimum found (a report), and the premise that
its exact accuracy lies in the Clopper–Pearson interval of its accuracy on data drawn by `sample`. The
controls plant the formula whose noise patches are projected off the signals' span (not Def. 3.1's) at
Table 7's law, where the noise moves the accuracy by more than the interval's width; the same
comparison must refute it.
"""

from __future__ import annotations

import time

import numpy as np

from checks.chen2022.error_floor import describe_law
from lab.chen2022.data import DataConfig, UniformRange, setting
from lab.chen2022.linear_optimum import linear_accuracy, sampled_correct, search_optimum
from lab.core.records import Record, report_record
from lab.core.registry import register
from lab.core.stats import DEFAULT_LEVEL, clopper_pearson, interval_basis

LAWS = {  # setting 3 as App. A.2 states it (the lab's), and as Table 7's caption states it
    "setting-3": setting(3),
    "table7-caption": DataConfig(alpha=UniformRange(1.0, 2.0), gamma=UniformRange(1.0, 2.0)),
}
CLASSES = {"linear-cnn": False, "linear-cnn-bias": True}  # key prefix: with a scalar bias b
CONTROL_LAWS = ("table7-caption",)  # where dropping the noise moves the accuracy beyond the CI
# differential evolution's popsize and maxiter, local starts; samples per (law, class). The quick tier's
# search finds the full tier's optima at seeds 0-3 (a smaller one did not, at some seeds)
SEARCH = {
    "quick": {"popsize": 6, "maxiter": 12, "starts": 4, "n": 60_000},
    "full": {"popsize": 15, "maxiter": 60, "starts": 32, "n": 400_000},
}
LEVEL = 1.0 - (1.0 - DEFAULT_LEVEL) / (len(LAWS) * len(CLASSES))  # Bonferroni over the premises


def _class_words(with_bias: bool) -> str:
    return "linear CNN ⟨u, s⟩ + b" if with_bias else "bias-free linear CNN ⟨u, s⟩"


def _in_interval(key: str, statement: str, kind: str, value: float, note: str, sampled: dict) -> Record:
    """An accuracy `value` (one formula's) held against the sampled interval of the optimum found
    (`sampled`: its params, measured accuracy, ci and the interval's basis)."""
    ci = sampled["ci"]
    verdict = "holds" if ci[0] <= value <= ci[1] else "violated"
    return Record(
        claim="B2",
        key=key,
        statement=statement,
        kind=kind,
        bound=value,
        verdict=verdict,
        rule="equal",
        note=note,
        **sampled,
    )


@register("B2", name="checks.chen2022.linear_cnn_global_optimum")
def check_linear_cnn_optimum(seed: int, tier: str) -> list[Record]:
    """Thm 4.1's 87.5 % beside the best linear CNN found, per law and class, checked on sampled data."""
    size = SEARCH[tier]
    records = []
    for index, (law, config) in enumerate(LAWS.items()):
        previous = None
        for prefix, with_bias in CLASSES.items():
            start = time.perf_counter()
            rng = np.random.default_rng([seed, index, with_bias])
            found = search_optimum(
                config,
                with_bias,
                int(rng.integers(2**63)),
                size["starts"],
                size["popsize"],
                size["maxiter"],
                start=previous,
            )
            previous = found.coords
            right = sampled_correct(found.coords, config, found.bias, size["n"], rng)
            ci = clopper_pearson(right, size["n"], LEVEL)
            basis = interval_basis("Clopper–Pearson", LEVEL, size["n"])
            sampled = right / size["n"]
            projected = linear_accuracy(found.coords, config, found.bias, noise="projected")
            params = {**describe_law(config), "class": _class_words(with_bias), **size, "level": LEVEL}
            words = f"{_class_words(with_bias)}, law {law}"
            records.append(
                report_record(
                    claim="B2",
                    key=f"{prefix}-optimum-{law}",
                    statement=f"{words}: best accuracy a global search found (a lower bound on the optimum)",
                    category="search",
                    params=params,
                    measured=found.accuracy,
                    seconds=time.perf_counter() - start,
                    note="f = ⟨u, s⟩ (+ b) for every J; accuracy exact up to quadrature over α, β, γ",
                    extra={
                        "coords": found.coords,
                        "bias": found.bias,
                        "evolution_accuracy": found.evolution_accuracy,
                        "local_accuracy": found.local_accuracy,
                        "evaluations": found.evaluations,
                        "quadrature": {
                            "nodes": found.nodes,
                            "accuracy": found.accuracy,
                            "double_nodes_accuracy": linear_accuracy(
                                found.coords, config, found.bias, 2 * found.nodes
                            ),
                        },
                        "projected_noise_accuracy": projected,
                        "sampled_accuracy": sampled,
                        "sampled_ci": ci,
                        "interval": basis,
                    },
                )
            )

            sampled_fields = {"params": params, "measured": sampled, "ci": ci, "extra": {"interval": basis}}
            records.append(
                _in_interval(
                    f"{prefix}-exact-vs-sampled-{law}",
                    f"{words}: exact accuracy at the optimum found lies in the sampled CI",
                    "premise",
                    found.accuracy,
                    "bound: the exact accuracy; measured: on data of `sample`; CI Bonferroni over 4",
                    sampled_fields,
                )
            )
            if law in CONTROL_LAWS:
                records.append(
                    _in_interval(
                        f"control-{prefix}-projected-noise-{law}",
                        f"{words}: the accuracy with the noise off the signals' span is refuted",
                        "negative-control",
                        projected,
                        "a planted formula: ⟨u, ξ⟩ = 0 for u in the span, unlike Def. 3.1's isotropic ξ",
                        sampled_fields,
                    )
                )
    return records
