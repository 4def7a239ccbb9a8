"""`python -m lab tightness lemma-5.1`: the best constant of Lemma 5.1 / C.1 found per (noise, M), beside κM².

The search is `lab.chen2022.routing_tightness.search_constant` (L-BFGS-B on the exact Jacobian) plus the
Hypothesis search of `checks.chen2022.routing_smoothness`:
`python -m lab tightness lemma-5.1 --json reports/tightness.json --plot reports/tightness.png`.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable, Iterable

from checks.chen2022.routing_smoothness import (
    FAMILIES,
    TIGHTNESS_M,
    exact_router,
    hypothesis_maximum,
    pair_ratio,
)
from checks.strategies.routing import gate_pairs, tie_pairs
from lab.chen2022.routing import Noise
from lab.chen2022.routing_tightness import exact_constant, proven_constant, search_constant
from lab.cli.main import positive_int, versions
from lab.core.io import write_json_atomic, write_text_atomic
from lab.core.records import jsonable
from lab.core.registry import register_command


def tightness_rows(
    Ms: Iterable[int], noises: Iterable[Noise], starts: int, examples: int, seed: int, quiet: bool = True
) -> list[dict]:
    """One row per (noise, M): κ, κM², the best constant found (optimiser and Hypothesis) and L*."""
    jobs = [(noise, M) for noise in noises for M in Ms]
    progress = _progress(len(jobs), quiet)
    rows = []
    for noise, M in jobs:
        search = search_constant(noise, M, starts, seed)
        best = hypothesis_maximum(
            lambda pair, noise=noise: {"ratio": pair_ratio(exact_router(noise), *pair, 1.0)},
            gate_pairs(M=M, scale=noise.spread),
            examples,
            seed,
            [pair for pair in tie_pairs(noise.spread) if pair[0].size == M],
        )
        ratio = best["ratio"][0]
        found = max(search.constant, ratio)
        exact = exact_constant(noise, M)
        rows.append(
            {
                "noise": noise.name,
                "M": M,
                "kappa": noise.kappa,
                "bound": noise.kappa * M**2,
                "best_constant": found,
                "best_over_kappa": found / noise.kappa,
                "optimiser_constant": search.constant,
                "hypothesis_ratio": ratio,
                "exact_constant": exact,
                "proven_constant": proven_constant(noise),
                "slack": noise.kappa * M**2 / found if found > 0 else None,
                "argmax_h": search.h,
                "noise_params": repr(noise),
            }
        )
        progress(1)
    progress(None)
    return rows


def _progress(total: int, quiet: bool) -> Callable[[int | None], None]:
    """A tqdm bar on stderr when it is a terminal and not --quiet; otherwise nothing."""
    if quiet or not sys.stderr.isatty():
        return lambda step: None
    from tqdm import tqdm

    bar = tqdm(total=total, desc="tightness", file=sys.stderr)
    return lambda step: bar.close() if step is None else bar.update(step)


def tightness_table(rows: list[dict]) -> str:
    """Markdown table of the tightness rows."""
    lines = [
        "| noise | M | κ | κM² (paper) | best constant found | best / κ | L* exact | 2κ (proof) "
        "| slack κM²/best |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        exact = "-" if r["exact_constant"] is None else f"{r['exact_constant']:.6g}"
        slack = "-" if r["slack"] is None else f"{r['slack']:.3g}"
        lines.append(
            f"| {r['noise']} | {r['M']} | {r['kappa']:.4g} | {r['bound']:.4g} | {r['best_constant']:.6g} | "
            f"{r['best_over_kappa']:.4f} | {exact} | {r['proven_constant']:.4g} | {slack} |"
        )
    return "\n".join(lines)


def tightness_plot(rows: list[dict], path: str) -> None:
    """PNG: best constant / κ against M (log scale), beside the paper's M² and the proven 2."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    Ms = sorted({r["M"] for r in rows})
    ax.plot(Ms, [M**2 for M in Ms], "k--", label="paper: κM² / κ = M²")
    ax.plot(Ms, [2.0] * len(Ms), "k:", label="proven: 2κ / κ = 2")
    for name, marker in (("uniform", "o"), ("gaussian", "s"), ("gumbel", "^")):
        mine = sorted((r["M"], r["best_over_kappa"]) for r in rows if r["noise"] == name)
        if mine:
            ax.plot(*zip(*mine, strict=True), marker=marker, label=f"{name}: best constant / κ")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks(Ms, [str(M) for M in Ms])
    ax.minorticks_off()
    ax.set_xlabel("number of experts M")
    ax.set_ylabel("Lipschitz constant / κ  (‖·‖∞ → ‖·‖∞)")
    ax.set_title("Lemma 5.1: best constant found vs the paper's κM²")
    ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    write_text_atomic(path, buffer.getvalue())


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a comma list of integers >= 1, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"must be a comma list of integers >= 1, got {text!r}")
    return values


def _noise_list(text: str) -> list[str]:
    names = [v.strip() for v in text.split(",") if v.strip()]
    known = ("uniform", "gaussian", "gumbel")
    if not names or any(n not in known for n in names):
        raise argparse.ArgumentTypeError(f"must be a comma list of {', '.join(known)}, got {text!r}")
    return names


@register_command("tightness", "best Lipschitz constant of Lemma 5.1 found per (noise, M), beside κM²")
def configure_tightness(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    parser.description = (
        "Search the smallest valid constant L(M) = sup ‖Δp‖∞/‖Δh‖∞ of Lemma 5.1 / C.1 for each noise "
        "family and M (L-BFGS-B over the exact Jacobian from many starts, and Hypothesis target())."
    )
    parser.add_argument("lemma", choices=["lemma-5.1"], help="the lemma whose constant is searched")
    parser.add_argument("--M", type=_int_list, default=list(TIGHTNESS_M), help="e.g. 2,3,4,8,16,32,64")
    parser.add_argument("--noise", type=_noise_list, default=["uniform", "gaussian", "gumbel"])
    parser.add_argument("--starts", type=positive_int, default=8, help="optimiser starts per cell")
    parser.add_argument("--examples", type=positive_int, default=100, help="Hypothesis examples per cell")
    parser.add_argument("--seed", type=int, default=0, help="seed of starts and Hypothesis (default 0)")
    parser.add_argument("--json", metavar="PATH", help="write the rows as JSON")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG plot (log scale in M)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")

    def run(args: argparse.Namespace) -> int:
        if args.seed < 0:
            raise ValueError(f"--seed must be >= 0, got {args.seed}")
        noises = [dict(zip(("uniform", "gaussian", "gumbel"), FAMILIES, strict=True))[n] for n in args.noise]
        rows = tightness_rows(args.M, noises, args.starts, args.examples, args.seed, args.quiet)
        print(tightness_table(rows))
        if args.json:
            settings_used = {"M": args.M, "starts": args.starts, "examples": args.examples, "seed": args.seed}
            write_json_atomic(
                args.json,
                {
                    "lemma": args.lemma,
                    "rows": jsonable(rows),
                    "settings": settings_used,
                    "versions": versions(),
                },
            )
        if args.plot:
            tightness_plot(rows, args.plot)
        return 0

    return run
