"""The replicate analysis: statistics over several summaries of one folder, which `python -m lab replicate`
rewrites beside them (`OUT/analysis.json`, `lab.chen2022.replicate.write_analysis`) every time it writes
a summary, from every summary the folder holds. Its fields (format `ANALYSIS_FORMAT`):

- `summaries`: by file name, the digest of the summary text it was computed from (the docs refuse an
  analysis whose summaries changed since);
- `precision`: per target, variant and arithmetic with a full-tier float64 and float32 summary (their
  names), the runs paired by cell, setting and seed (same data, seeds and W⁽⁰⁾, only the experts'
  precision differs): per cell and setting the two means, the mean paired difference (float32 − float64)
  with its `level` Student-t interval, the float64 seed sd and whether the interval holds 0 (`rows`,
  `agree`); per cell over its settings, the gaps |float32 − float64| (median, largest, how many exceed
  `moved_by` points) beside the median gap between two float64 seeds (`rounding`), and the widest pair;
- `stalled`: the stated-model nonlinear-MoE runs of the full-tier Table 1 and Table 3 summaries, a run
  of both tables counted once (a seed's float64 and float32 runs are two runs): how many end below
  `below` % (their rate with its `level` Clopper–Pearson interval), the lowest, the median of the others,
  and per precision alone (`by_dtype`, since a seed's two precisions are twins, not independent runs);
- `same_init`: per variant, the span of Table 10's cell means (same-init MoEs), beside the paper's span,
  and how many cells' means agree with the paper's by `cell_agreement`;
- `agreement`: per variant with a full-tier float64 Table 3 summary (else Table 1), each cell and setting
  against the paper's mean ± sd "over ten random experiments" (Table 1's caption; `PAPER_RUNS`): the
  `level` Welch interval of lab − paper mean (a one-sample Student-t interval of the lab's mean where the
  paper prints no sd), whether it holds 0 (`mean_agrees`), and where the paper prints an sd, the `level`
  F interval of the ratio lab sd ÷ paper sd and whether it holds 1 (`spread_agrees`). A cell agrees with
  the paper when both hold (the lab's rule: the paper defines no test of reproduction).
"""

from __future__ import annotations

import hashlib
import itertools
import json

import numpy as np
from scipy import stats

from lab.chen2022.replicate_report import PAIR_LEVEL, accuracy_by_seed, cell_statistics, paired_difference
from lab.chen2022.runs import ARITHMETIC, VARIANT_NAMES
from lab.chen2022.tables import TARGETS
from lab.core.stats import clopper_pearson

ANALYSIS_NAME = "analysis.json"  # beside the summaries
ANALYSIS_FORMAT = "moe-lab replicate analysis 1"
STALL_BELOW = 95.0  # test accuracy (%) under which a nonlinear-MoE run counts as stalled
STALL_LEVEL = 0.95  # two-sided level of the stalled rate's Clopper–Pearson interval
MOVED_BY = 1.0  # points of test accuracy: a float32 / float64 pair further apart counts as moved
AGREEMENT_LEVEL = 0.95  # two-sided level of the Welch and F intervals of a cell against the paper
PAPER_RUNS = 10  # Table 1's caption: "Over ten random experiments, we report the average value ± sd"


def describe(payload: dict) -> tuple[str, str, str, str, str]:
    """A summary's target, variant, tier, dtype and arithmetic (summaries from before the last two are
    dense float64)."""
    config = payload["config"]
    arithmetic = (config.get("dtype", "float64"), config.get("arithmetic", "dense"))
    return config["target"], config["variant"], config["tier"], *arithmetic


def digest(text: str) -> str:
    """The digest an analysis names a summary's text by."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _finite(value: float) -> float | None:
    return value if np.isfinite(value) else None


def precision_pair(target: str, names: tuple[str, str], wide: dict, narrow: dict) -> dict:
    """One float64 summary (`wide`) against its float32 twin (`narrow`), run by run (see the module)."""
    rows, rounding, widest = [], {}, None
    for cell in TARGETS[target]:
        for setting in sorted(cell.paper):
            a, b = (accuracy_by_seed(p["runs"], cell, setting) for p in (wide, narrow))
            seeds = sorted(set(a) & set(b))
            if not seeds:
                continue
            x, y = [a[s] for s in seeds], [b[s] for s in seeds]
            mean, low, high = paired_difference(x, y)
            rows.append(
                {
                    "cell": cell.label,
                    "setting": setting,
                    "seeds": len(seeds),
                    "float64": float(np.mean(x)),
                    "float32": float(np.mean(y)),
                    "difference": mean,
                    "interval": [_finite(low), _finite(high)],
                    "seed_sd": float(np.std(x, ddof=1)) if len(x) > 1 else None,
                    "agree": bool(low <= 0.0 <= high),
                }
            )
            gaps, seed_gaps = rounding.setdefault(cell.label, ([], []))
            for seed in seeds:
                gaps.append(abs(b[seed] - a[seed]))
                if widest is None or gaps[-1] > widest["gap"]:
                    widest = {"cell": cell.label, "setting": setting, "seed": seed} | {
                        "float64": a[seed],
                        "float32": b[seed],
                        "gap": gaps[-1],
                    }
            seed_gaps += [abs(a[one] - a[other]) for one, other in itertools.combinations(seeds, 2)]
    return {
        "target": target,
        "float64": names[0],
        "float32": names[1],
        "level": PAIR_LEVEL,
        "rows": rows,
        "agree": sum(row["agree"] for row in rows),
        "moved_by": MOVED_BY,
        "rounding": [
            {
                "cell": label,
                "pairs": len(gaps),
                "median": float(np.median(gaps)),
                "largest": max(gaps),
                "moved": sum(gap > MOVED_BY for gap in gaps),
                "seed_median": float(np.median(seed_gaps)) if seed_gaps else None,
            }
            for label, (gaps, seed_gaps) in rounding.items()
        ],
        "widest": widest,
    }


def precision(summaries: dict[str, dict]) -> list[dict]:
    """Per target, variant and arithmetic with both full-tier precisions, `precision_pair` (each float32
    summary paired only with the float64 summary of its own variant and arithmetic)."""
    pairs = []
    for target, variant, arithmetic in itertools.product(TARGETS, VARIANT_NAMES, ARITHMETIC):
        pick = {}
        for name, payload in sorted(summaries.items()):
            found, kind, tier, dtype, how = describe(payload)
            if (found, kind, tier, how) == (target, variant, "full", arithmetic):
                pick[dtype] = name
        if {"float64", "float32"} <= set(pick):
            names = (pick["float64"], pick["float32"])
            pair = precision_pair(target, names, *(summaries[name] for name in names))
            pairs.append(pair | {"variant": variant, "arithmetic": arithmetic})
    return pairs


def stalled_runs(summaries: dict[str, dict]) -> dict | None:
    """How often a stated-model nonlinear-MoE run of the full-tier Table 1 and 3 summaries stalls (module)."""
    found: dict[tuple, float] = {}  # one run is one (setting, seed, dtype, arithmetic)
    names = set()
    for name, payload in sorted(summaries.items()):
        target, variant, tier, dtype, arithmetic = describe(payload)
        if target in ("table1", "table3") and variant == "paper" and tier == "full":
            for r in payload["runs"]:
                if r["model"] == "moe (nonlinear)":
                    found[r["setting"], r["seed"], dtype, arithmetic] = r["test_accuracy"]
                    names.add(name)
    runs = list(found.values())
    if not runs:
        return None
    low = [acc for acc in runs if acc < STALL_BELOW]
    others = [acc for acc in runs if acc >= STALL_BELOW]
    by_dtype = {}  # a seed's float64 and float32 runs are twins, not independent: each precision alone
    for dtype in sorted({key[2] for key in found}):
        mine = [acc for key, acc in found.items() if key[2] == dtype]
        stalled = sum(acc < STALL_BELOW for acc in mine)
        by_dtype[dtype] = {
            "runs": len(mine),
            "stalled": stalled,
            "interval": list(clopper_pearson(stalled, len(mine), STALL_LEVEL)),
        }
    return {
        "summaries": sorted(names),
        "below": STALL_BELOW,
        "runs": len(runs),
        "stalled": len(low),
        "rate": len(low) / len(runs),
        "level": STALL_LEVEL,
        "interval": list(clopper_pearson(len(low), len(runs), STALL_LEVEL)),
        "lowest": min(runs),
        "median_others": float(np.median(others)) if others else None,
        "by_dtype": by_dtype,
    }


def same_init_levels(summaries: dict[str, dict]) -> dict | None:
    """Per variant with a full-tier Table 10 summary (the first by name), the span of its cell means, the
    cells and the fewest seeds of one; beside the span of the paper's Table 10."""
    levels = []
    for variant in VARIANT_NAMES:
        names = [n for n, p in sorted(summaries.items()) if describe(p)[:3] == ("table10", variant, "full")]
        cells = cell_statistics("table10", summaries[names[0]]["runs"]) if names else []
        if cells:
            means = [c["test_accuracy"]["mean"] for c in cells]
            # each cell against the paper's mean ± sd, as `agreement` judges Tables 1 and 3
            agree = [row["mean_agrees"] for row in agreement_rows("table10", summaries[names[0]]["runs"])]
            levels.append(
                {
                    "variant": variant,
                    "summary": names[0],
                    "low": min(means),
                    "high": max(means),
                    "cells": len(cells),
                    "seeds": min(c["runs"] for c in cells),
                    "mean_agrees": sum(agree),
                    "judged": len(agree),
                }
            )
    papers = [paper[0] for cell in TARGETS["table10"] for paper in cell.paper.values()]
    return {"levels": levels, "paper": [min(papers), max(papers)]} if levels else None


def cell_agreement(lab: list[float], paper_mean: float, paper_sd: float | None) -> dict:
    """One cell and setting against the paper's mean (and sd over `PAPER_RUNS` runs): the Welch interval
    of lab − paper, and the F interval of lab sd ÷ paper sd, both at `AGREEMENT_LEVEL` (module)."""
    x = np.asarray(lab, dtype=float)
    n, mean, sd = x.size, float(x.mean()), float(x.std(ddof=1))
    tail = 0.5 + AGREEMENT_LEVEL / 2
    if paper_sd is None:
        se, df = sd / np.sqrt(n), n - 1
    else:
        a, b = sd**2 / n, paper_sd**2 / PAPER_RUNS
        se = float(np.sqrt(a + b))
        df = (a + b) ** 2 / (a**2 / (n - 1) + b**2 / (PAPER_RUNS - 1))  # Welch–Satterthwaite
    half = float(stats.t.ppf(tail, df) * se)
    row = {
        "runs": n,
        "mean": mean,
        "sd": sd,
        "paper": paper_mean,
        "paper_sd": paper_sd,
        "difference": mean - paper_mean,
        "interval": [mean - paper_mean - half, mean - paper_mean + half],
        "mean_agrees": bool(abs(mean - paper_mean) <= half),
        "sd_ratio": None,
        "sd_ratio_interval": None,
        "spread_agrees": None,
    }
    if paper_sd is not None and paper_sd > 0:
        ratio = sd / paper_sd
        f = stats.f.ppf([tail, 1 - tail], n - 1, PAPER_RUNS - 1)
        low, high = float(ratio / np.sqrt(f[0])), float(ratio / np.sqrt(f[1]))
        row |= {"sd_ratio": ratio, "sd_ratio_interval": [low, high], "spread_agrees": bool(low <= 1 <= high)}
    return row


def agreement_rows(target: str, runs: list[dict]) -> list[dict]:
    """Each cell and setting of `target` with two or more runs, against the paper (`cell_agreement`)."""
    rows = []
    for cell in TARGETS[target]:
        for setting in sorted(cell.paper):
            lab = list(accuracy_by_seed(runs, cell, setting).values())
            if len(lab) > 1:
                rows.append(
                    {"cell": cell.label, "setting": setting} | cell_agreement(lab, *cell.paper[setting][:2])
                )
    return rows


def agreement(summaries: dict[str, dict]) -> dict | None:
    """Per variant, the full-tier float64 Table 3 summary's cells (else Table 1's) against the
    paper, by `cell_agreement` (module)."""
    variants = []
    for variant in VARIANT_NAMES:
        for target in ("table3", "table1"):
            names = [
                n
                for n, p in sorted(summaries.items())
                if describe(p)[:4] == (target, variant, "full", "float64")
            ]
            if names:
                break
        if not names:
            continue
        rows = agreement_rows(target, summaries[names[0]]["runs"])
        variants.append({"variant": variant, "summary": names[0], "rows": rows})
    return {"level": AGREEMENT_LEVEL, "paper_runs": PAPER_RUNS, "variants": variants} if variants else None


def replicate_analysis(summaries: dict[str, dict]) -> dict:
    """The statistics over the summaries (by file name) that the analysis stores (see the module)."""
    return {
        "precision": precision(summaries),
        "stalled": stalled_runs(summaries),
        "same_init": same_init_levels(summaries),
        "agreement": agreement(summaries),
    }


def analysis_text(analysis: dict, texts: dict[str, str]) -> str:
    """The analysis file: its format, the digest of each summary's text (by name), then `analysis`."""
    summaries = {name: digest(text) for name, text in texts.items()}
    payload = {"format": ANALYSIS_FORMAT, "summaries": summaries} | analysis
    return json.dumps(payload, indent=1, allow_nan=False) + "\n"
