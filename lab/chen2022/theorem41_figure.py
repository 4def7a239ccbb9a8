"""Theorem 4.1's figure, drawn from claim B2's verify records: the floor ω/8 against what attains it.

Declared as a claim figure (`FIGURE`): `python -m lab verify --json results/verify.json` draws it into
`results/figures/` (`lab.core.claim_figures`).

Panel (a): for each discrete law of (α, γ) of `optimum-above-floor`, the exact optimum of the
patch-additive class (`lab.chen2022.patch_optimum`) against the proven floor ω/8 (on the diagonal when
attained), and the marginal-overlap guess Σ min(p_α, p_γ)/8 (the negative control) beside it. Panel
(b): for each law uniform on intervals (`attained`, `partial-*`), the witnesses' held-out errors with
their Clopper–Pearson intervals against ω/8 (and against 1/8, the equal-law floor).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.core import plots
from lab.core.registry import ClaimFigure

CLAIM = "B2"


def _by_key(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in records if r["claim"] == CLAIM}


def _uniform_witnesses(found: dict[str, dict[str, Any]]) -> list[tuple[str, float, float, list[float]]]:
    """(label, ω/8, witness error, its interval) for `attained` and every `partial-*` premise."""
    rows = []
    if "attained" in found:
        extra = found["attained"]["extra"]
        rows.append(("α, γ equal laws", 0.125, extra["relu_witness_error"], extra["relu_witness_ci"]))
    for key, record in sorted(found.items()):
        if key.startswith("partial-") and record["kind"] == "premise":
            extra = record["extra"]
            omega = extra["overlap_mass"]
            rows.append(
                (key.removeprefix("partial-"), omega / 8, extra["witness_error"], extra["witness_ci"])
            )
    return rows


def draw(records: list[dict[str, Any]], path: Path) -> Path:
    """The two panels from B2's records (a verify run's `records`), written to `path`."""
    plt = plots.pyplot()
    found = _by_key(records)
    laws = found["optimum-above-floor"]["extra"]["laws"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    floors = [law["floor"] for law in laws]
    top = max(max(floors), max(law["marginal_overlap"] / 8 for law in laws)) * 1.1
    left.plot([0, top], [0, top], color="0.6", lw=1, label="optimum = ω/8")
    left.scatter(floors, [law["optimum"] for law in laws], s=40, label="exact optimum (MIP)", zorder=3)
    left.scatter(floors, [law["marginal_overlap"] / 8 for law in laws], marker="x", color="C3",
                 label="marginal-overlap guess (control)", zorder=3)  # fmt: skip
    left.set_xlabel("proven floor ω/8")
    left.set_ylabel("error")
    left.set_title(f"(a) {len(laws)} discrete laws of (α, γ), K = 2", fontsize=9)
    left.legend(fontsize=7, loc="upper left")
    rows = _uniform_witnesses(found)
    for i, (_, floor, error, ci) in enumerate(rows):
        right.errorbar([i], [error], yerr=[[error - ci[0]], [ci[1] - error]], fmt="o", color="C0", capsize=4,
                       label="witness error (CI)" if i == 0 else None)  # fmt: skip
        right.hlines(floor, i - 0.3, i + 0.3, color="C1", lw=2, label="ω/8" if i == 0 else None)
    right.axhline(0.125, color="0.6", ls="--", lw=1, label="1/8")
    right.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=7)
    level = found["attained"]["extra"]["interval"]["level"] if "attained" in found else None
    right.set_title(
        f"(b) laws uniform on intervals ({level:.0%} Clopper–Pearson)" if level else "(b)", fontsize=9
    )
    right.set_ylabel("error")
    right.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    plots.save_figure(fig, path)
    return path


FIGURE = ClaimFigure("theorem41.png", CLAIM, draw)
