"""Makkuva et al. 2020, Fig. 1: L4 + L_log against ℓ2-SGD and EM from the same inits (Sec. 4, k = 3, d = 10).

Per initialisation: (1) online SGD on L4 (eq. 6) → Â; rows normalised and sign-resolved
(`lab.makkuva2020.fit.resolve_signs`); (2) projected GD on L_log (eq. 8) with A = Â and sample
splitting (Thm 4); (3) online SGD on ℓ2 in (A, W) from the same (A_0, W_0); (4) EM on a fixed
sample from the same (A_0, W_0). Curves are E_reg / E_gating against the number of samples
processed (SGD: steps × batch; EM: iterations × n); L4 + L_log's gating curve counts the L_log
stage only (iterations × n/T), its regressors being fixed at Â.
Step sizes, steps and sample sizes are not in the paper; `Fig1Config` states the lab's.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lab.core import plots, validate
from lab.core.errors import InputError
from lab.core.io import write_json_atomic, write_text_atomic
from lab.core.progress import Progress
from lab.core.records import jsonable
from lab.core.registry import register_replication
from lab.core.schema import INT, LIST, NUMBER, OBJECT, TEXT, Each
from lab.core.stats import clopper_pearson, interval_basis
from lab.makkuva2020.fit import (
    em,
    gating_error,
    init_params,
    projected_gd_l_log,
    regression_error,
    resolve_signs,
    sgd_l2,
    sgd_l4,
)
from lab.makkuva2020.gated_regression import GaussianInput, paper_model, rereferenced_gating, sample
from lab.makkuva2020.losses import L4Regularisers, output_transforms

__all__ = [
    "METHODS",
    "PAPER_CLAIM",
    "TIER_CONFIGS",
    "Fig1Config",
    "InitRun",
    "MethodRun",
    "fig1_table",
    "mean_errors",
    "plot_fig1",
    "recovery_summary",
    "replicate",
    "run_fig1",
    "run_init",
]

PAPER_CLAIM = (
    "Fig. 1 (Sec. 4, k = 3, 5 trials): SGD on L4 recovers the regressors while SGD on the l2 loss "
    "and EM get stuck in local optima (1a); L_log with A fixed at the L4 estimate learns the gating "
    "parameters considerably better than l2 and EM (1b); L4 recovers A* in all 5 trials (1c)."
)


@dataclass(frozen=True)
class Fig1Config:
    """The lab's settings for Fig. 1 (the paper gives k, d, σ, the batch size and the five trials only)."""

    k: int = 3
    d: int = 10
    sigma: float = 0.05
    reg: L4Regularisers = field(default_factory=lambda: L4Regularisers(mu=0.05, lam=4.0, delta=2.0))
    batch: int = 1024
    l4_lr: float = 0.006
    l2_lr: float = 0.2
    sgd_steps: int = 2000
    em_n: int = 20_000
    em_iters: int = 40
    log_T: int = 60
    log_per_step: int = 2000
    log_lr: float = 2.0
    R: float = 2.0
    sign_n: int = 20_000
    record_every: int = 50

    def __post_init__(self) -> None:
        counts = ("k", "d", "batch", "sgd_steps", "em_n", "em_iters", "log_T", "log_per_step", "sign_n")
        for name in (*counts, "record_every"):
            validate.integer(getattr(self, name), name, low=1)
        if self.k < 2 or self.d < 2 * self.k - 1:
            raise InputError(
                f"k must be >= 2 and d >= 2k - 1 (the paper's model), got k={self.k}, d={self.d}"
            )
        validate.real(self.sigma, "sigma", low=0.0)
        for name in ("l4_lr", "l2_lr", "log_lr", "R"):
            validate.real(getattr(self, name), name, low=0.0, low_open=True)
        validate.instance(self.reg, "reg", L4Regularisers)


TIER_CONFIGS = {"quick": Fig1Config(sgd_steps=1200, em_n=10_000, em_iters=20), "full": Fig1Config()}


@dataclass
class MethodRun:
    """One method on one initialisation: final errors and the error curves against samples processed."""

    e_reg: float
    e_gating: float
    samples_reg: np.ndarray
    curve_reg: np.ndarray
    samples_gating: np.ndarray
    curve_gating: np.ndarray


@dataclass
class InitRun:
    """All three methods from one (A_0, W_0), plus what D3 needs from the L_log stage."""

    ours: MethodRun
    l2: MethodRun
    em: MethodRun
    A_hat: np.ndarray
    perm: np.ndarray
    log_path: np.ndarray
    W_target: np.ndarray


def _joint_curves(traj, W_star, A_star, samples_per_step) -> MethodRun:
    errs = [regression_error(a, A_star) for a in traj.A]
    gating = [gating_error(w, W_star, e[1]) for w, e in zip(traj.W, errs, strict=True)]
    x = traj.steps * samples_per_step
    reg_curve = np.array([e[0] for e in errs])
    return MethodRun(reg_curve[-1], gating[-1], x, reg_curve, x, np.array(gating))


def run_init(config: Fig1Config, seed: int) -> InitRun:
    """The three methods of Fig. 1 from the initialisation and data streams derived from `seed` (int >= 0)."""
    validate.instance(config, "config", Fig1Config)
    validate.integer(seed, "seed", low=0)
    model = paper_model(config.k, config.d, config.sigma)
    inputs = GaussianInput(config.d)
    streams = np.random.default_rng(seed).spawn(5)
    A0, W0 = init_params(config.k, config.d, streams[0])
    tr = output_transforms(config.sigma)
    l4 = sgd_l4(
        A0,
        model,
        inputs,
        tr,
        config.reg,
        streams[1],
        config.l4_lr,
        config.sgd_steps,
        config.batch,
        config.record_every,
    )
    fresh = sample(model, inputs, config.sign_n + config.log_T * config.log_per_step, streams[2])
    A_hat = resolve_signs(l4.A[-1], fresh.x[: config.sign_n], fresh.y[: config.sign_n])
    e_reg, perm = regression_error(A_hat, model.A)
    W_target = rereferenced_gating(model.W, perm)
    path = projected_gd_l_log(
        W0,
        A_hat,
        fresh.x[config.sign_n :],
        fresh.y[config.sign_n :],
        config.sigma,
        config.R,
        config.log_lr,
        config.log_T,
    )
    gating_curve = np.array([gating_error(w, model.W, perm) for w in path])
    ours = MethodRun(
        e_reg,
        gating_curve[-1],
        l4.steps * config.batch,
        np.array([regression_error(a, model.A)[0] for a in l4.A]),
        np.arange(config.log_T + 1) * config.log_per_step,
        gating_curve,
    )
    l2 = sgd_l2(
        A0, W0, model, inputs, streams[3], config.l2_lr, config.sgd_steps, config.batch, config.record_every
    )
    em_data = sample(model, inputs, config.em_n, streams[4])
    em_run = em(A0, W0, em_data.x, em_data.y, config.em_iters)
    return InitRun(
        ours=ours,
        l2=_joint_curves(l2, model.W, model.A, config.batch),
        em=_joint_curves(em_run, model.W, model.A, config.em_n),
        A_hat=A_hat,
        perm=perm,
        log_path=path,
        W_target=W_target,
    )


def run_fig1(config: Fig1Config, seeds: list[int], progress: bool = False) -> list[InitRun]:
    """Run every initialisation (one seed each), with the lab's progress display when `progress`."""
    validate.instance(config, "config", Fig1Config)
    validate.integers(seeds, "seeds", ndim=1, labels="(number of inits,)", low=0)
    validate.flag(progress, "progress")
    runs = []
    with Progress(len(seeds), "makkuva-fig1 inits", enabled=progress, unit="init") as shown:
        for seed in seeds:
            runs.append(run_init(config, seed))
            shown.step()
    return runs


METHODS = (("ours", "L4 + L_log"), ("l2", "l2-SGD"), ("em", "EM"))
# an init is recovered when it ends with E_reg and E_gating both at most this (the lab's threshold)
RECOVERED_EPS = 0.05
STUCK_LEVEL = 0.99  # two-sided level of a method's stuck rate's Clopper–Pearson interval


ERRORS = {" ".join(key for key, _ in METHODS): {"e_reg e_gating": NUMBER}}  # each method's final errors
REPLICATION = {  # the schema of the file `replicate makkuva-fig1 --json` writes (what the docs read of it)
    "tier": TEXT,
    "seed": INT,
    "runs": Each(ERRORS, "run", least=1),
    "means": ERRORS,
    "config": OBJECT,
    "recovered_eps": NUMBER,
    "recovery": {
        " ".join(key for key, _ in METHODS): {"recovered inits": INT, "stuck_ci_99": LIST, "interval": OBJECT}
    },
}


def _runs(runs: object) -> list[InitRun]:
    """A non-empty list (or tuple) of `InitRun`s, as `run_fig1` returns."""
    if not isinstance(runs, list | tuple) or not runs:
        raise TypeError(f"runs must be a non-empty list of InitRun (from run_fig1), got {runs!r:.60}")
    for run in runs:
        validate.instance(run, "runs[i]", InitRun)
    return list(runs)


def fig1_table(runs: list[InitRun]) -> str:
    """Markdown table of final E_reg / E_gating per init and method, with the mean row."""
    runs = _runs(runs)
    head = "| init | " + " | ".join(f"{name} E_reg | {name} E_gating" for _, name in METHODS) + " |"
    rows = [head, "|---" * (1 + 2 * len(METHODS)) + "|"]
    for i, run in enumerate(runs):
        cells = [f"{getattr(run, key).e_reg:.2e} | {getattr(run, key).e_gating:.2e}" for key, _ in METHODS]
        rows.append(f"| {i} | " + " | ".join(cells) + " |")
    means = [
        f"{np.mean([getattr(r, key).e_reg for r in runs]):.2e} | "
        f"{np.mean([getattr(r, key).e_gating for r in runs]):.2e}"
        for key, _ in METHODS
    ]
    rows.append("| mean | " + " | ".join(means) + " |")
    return "\n".join(rows)


def mean_errors(runs: list[dict]) -> dict[str, dict[str, float]]:
    """Per method, the mean over inits of the final E_reg and E_gating of runs as the replication file
    stores them (`{method: {"e_reg": ..., "e_gating": ...}}`); the file stores it under "means"."""
    if not isinstance(runs, list) or not runs or not all(isinstance(run, dict) for run in runs):
        raise TypeError(f"runs must be a non-empty list of stored runs (dicts), got {runs!r:.60}")
    means: dict[str, dict[str, float]] = {}
    for key, _ in METHODS:
        means[key] = {}
        for error in ("e_reg", "e_gating"):
            stored = [run[key].get(error) if isinstance(run.get(key), dict) else None for run in runs]
            found = [validate.real(v, f"runs[{i}].{key}.{error}") for i, v in enumerate(stored)]
            means[key][error] = float(np.mean(found))
    return means


def _recovery_counts(runs: list[InitRun], eps: float = RECOVERED_EPS) -> dict[str, dict]:
    """Per method: the inits it ends recovered in (E_reg and E_gating <= eps, a finite number >= 0) and
    the `STUCK_LEVEL` Clopper–Pearson interval of its stuck rate (the fraction of inits not recovered),
    with its basis (`interval`)."""
    runs = _runs(runs)
    validate.real(eps, "eps", low=0.0)
    out = {}
    for key, _ in METHODS:
        ok = sum(getattr(r, key).e_reg <= eps and getattr(r, key).e_gating <= eps for r in runs)
        out[key] = {
            "recovered": ok,
            "inits": len(runs),
            "stuck_ci_99": list(clopper_pearson(len(runs) - ok, len(runs), STUCK_LEVEL)),
            "interval": interval_basis("Clopper–Pearson", STUCK_LEVEL, len(runs), of="inits"),
        }
    return out


def recovery_summary(runs: list[InitRun], eps: float = RECOVERED_EPS) -> str:
    """How many inits each method ends recovered in (E_reg and E_gating <= eps); eps a finite number >= 0."""
    counts_by_method = _recovery_counts(runs, eps)
    parts = []
    for key, name in METHODS:
        counts = counts_by_method[key]
        parts.append(
            f"{name} recovers A* and W* (E_reg, E_gating <= {eps}) in {counts['recovered']}/{len(runs)} "
            f"inits (stuck rate's {100 * STUCK_LEVEL:g} % interval [{counts['stuck_ci_99'][0]:.3g}, "
            f"{counts['stuck_ci_99'][1]:.3g}])"
        )
    return "; ".join(parts) + "."


FIGURE_NAME = "makkuva_fig1.png"  # the figure `replicate makkuva-fig1` draws into --out
# Fig. 1's panels: (title, the curves' keys in a stored method run, the methods drawn); (c) shows one method,
# each init in its own colour
FIG1_PANELS = (
    ("(a) regressors: E_reg", ("samples_reg", "curve_reg"), METHODS),
    ("(b) gating: E_gating (L4 + L_log: the L_log stage)", ("samples_gating", "curve_gating"), METHODS),
    ("(c) L4: E_reg of each init", ("samples_reg", "curve_reg"), METHODS[:1]),
)
FLOOR = 1e-12  # errors drawn at least this on the log axes (an exact zero has no logarithm)


def plot_fig1(runs: list[InitRun], path: Path) -> None:
    """Fig. 1 (a)–(c) of `runs` as PNG at `path`, drawn from the runs as the replication file stores them."""
    runs = _runs(runs)
    validate.instance(path, "path", (str, Path))
    plots.save_figure(_fig1_figure(jsonable(_stored_runs(runs))), path)


def _stored_runs(runs: list[InitRun]) -> list[dict]:
    """The runs as the replication file stores them: per method its final errors and error curves."""
    return [{key: asdict(getattr(r, key)) for key, _ in METHODS} | {"perm": r.perm} for r in runs]


def _fig1_figure(stored: list[dict]) -> object:
    """Fig. 1 laid out as the paper's (a)–(c) from stored runs (the replication file's `runs`): error against
    samples processed (log axes, from the first recorded step), every init's curve faint, the median over
    inits bold."""
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for ax, (title, (xs, ys), methods) in zip(axes, FIG1_PANELS, strict=True):
        per_init = len(methods) == 1
        for (key, name), colour in zip(methods, plt.cm.tab10.colors, strict=False):
            x = np.asarray(stored[0][key][xs], dtype=float)[1:]
            curves = np.maximum([np.asarray(run[key][ys], dtype=float)[1:] for run in stored], FLOOR)
            for i, curve in enumerate(curves):
                faint = plt.cm.tab20.colors[i % 20] if per_init else colour
                ax.plot(x, curve, color=faint, lw=0.7, alpha=0.7 if per_init else 0.3)
            bold = "black" if per_init else colour
            ax.plot(x, np.median(curves, axis=0), color=bold, lw=2.2, label=f"{name}: median over inits")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("samples processed")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("error")
    fig.suptitle(
        f"Makkuva et al. Fig. 1 replicated: each of {len(stored)} inits (faint), their median (bold)",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


@register_replication("makkuva-fig1", "Makkuva et al. Fig. 1: L4 + L_log vs l2-SGD and EM (table + PNG)")
def replicate(args) -> int:
    """`python -m lab replicate makkuva-fig1`: table, PNG and (with --json) every run, beside the claim."""
    if getattr(args, "figure_only", False):
        return _redraw(args)
    with threadpool_limits(limits=1, user_api="blas"):
        return _replicate(args)


def _redraw(args) -> int:
    """`replicate makkuva-fig1 --figure-only`: Fig. 1 redrawn into --out from the replication file (--json,
    else OUT/makkuva_fig1.json) alone, computing nothing."""
    source = Path(args.json) if args.json else Path(args.out) / "makkuva_fig1.json"
    if not source.is_file():
        raise InputError(f"{source}: missing (write it with `python -m lab replicate makkuva-fig1 --json`)")
    if not plots.available():
        raise InputError(plots.PLOTS_HINT)
    plots.save_figure(_fig1_figure(json.loads(source.read_text())["runs"]), Path(args.out) / FIGURE_NAME)
    print(f"wrote {Path(args.out) / FIGURE_NAME}")
    return 0


def _replicate(args) -> int:
    if args.seeds < 2:
        raise InputError(f"--seeds must be >= 2 initialisations for a mean, got {args.seeds}")
    if args.variant != "paper":
        raise InputError(
            f"--variant must be 'paper' for makkuva-fig1 (no reference code exists), got {args.variant!r}"
        )
    if (args.dtype, args.arithmetic) != ("float64", "structured"):
        raise InputError(
            "--dtype and --arithmetic choose Chen et al.'s experts' arithmetic; makkuva-fig1 runs in "
            f"float64 with its own kernels, got --dtype {args.dtype} --arithmetic {args.arithmetic}"
        )
    config = TIER_CONFIGS[args.tier]
    seeds = [int(s) for s in np.random.SeedSequence(args.seed).generate_state(args.seeds)]
    runs = run_fig1(config, seeds, progress=not args.quiet)
    out = Path(args.out)
    table = fig1_table(runs)
    text = (
        f"# Makkuva et al. Fig. 1 replication ({args.tier} tier, {args.seeds} inits, seed {args.seed})\n\n"
        f"Paper's claim: {PAPER_CLAIM}\n\nLab's reading: {recovery_summary(runs)}\n\n"
        "Final errors (E_reg, E_gating as in Sec. 4; E_gating matched by the regressors' permutation, "
        f"against the re-referenced W*):\n\n{table}\n\nFigure: {FIGURE_NAME}. Settings: {asdict(config)}\n"
    )
    write_text_atomic(out / "makkuva_fig1.md", text)
    if args.json:
        stored = _stored_runs(runs)
        write_json_atomic(
            args.json,
            jsonable(
                {
                    "target": "makkuva-fig1",
                    "paper_claim": PAPER_CLAIM,
                    "config": asdict(config),
                    "seed": args.seed,
                    "tier": args.tier,
                    "recovered_eps": RECOVERED_EPS,
                    "recovery": _recovery_counts(runs),
                    "means": mean_errors(stored),
                    "runs": stored,
                }
            ),
        )
    if plots.available():
        plot_fig1(runs, out / FIGURE_NAME)
    elif not args.quiet:
        print(plots.PLOTS_HINT, file=sys.stderr)
    if not args.quiet:
        print(text)
    return 0
