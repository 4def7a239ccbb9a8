"""docs/replications.md: each replication file under results/replicate beside the paper's numbers."""

from __future__ import annotations

import inspect

import numpy as np

from lab.chen2022 import replicate as chen
from lab.chen2022.choices import declared
from lab.chen2022.replicate_report import format_cells, summary_cells
from lab.chen2022.runs import ARITHMETIC, VARIANTS
from lab.chen2022.tables import Cell
from lab.chen2022.training import DTYPES
from lab.docs.dtype_comparison import dtype_comparisons
from lab.docs.markdown import anchor, fixed, interval, num, page, table
from lab.docs.results import Replication, Results, ResultsError
from lab.makkuva2020 import fig1

PAPER_SEEDS = 10  # Chen et al. average every cell over ten runs (App. A.2)
MAKKUVA_TARGET = "makkuva-fig1"
MAKKUVA_INITS = 20  # the committed Fig. 1 replication: enough inits for a 99 % interval narrower than 0.35
MAKKUVA_STATED = ("k", "d", "sigma", "batch")  # the `Fig1Config` values Sec. 4 states


def recovery_threshold() -> float:
    """The E_reg / E_gating threshold the lab calls "recovered" (`fig1.recovery_summary`'s default)."""
    return float(inspect.signature(fig1.recovery_summary).parameters["eps"].default)


def command(target: str, variant: str = "paper", dtype: str = "float64") -> str:
    """The command that writes a target's replication file into results/replicate at the paper's protocol."""
    seeds = PAPER_SEEDS if target != MAKKUVA_TARGET else MAKKUVA_INITS
    extra = (f" --variant {variant}" if variant != "paper" else "") + (
        f" --dtype {dtype}" if dtype != "float64" else ""
    )
    return f"python -m lab replicate {target} --seeds {seeds}{extra} --out results/replicate"


def known_targets() -> list[str]:
    return [*chen.TARGETS, MAKKUVA_TARGET]


def check_targets(results: Results) -> None:
    """Refuse a replication file naming a target the lab does not have."""
    for rep in results.replications:
        if rep.target not in known_targets():
            raise ResultsError(f"{rep.path}: unknown replication target {rep.target!r}")
        if rep.target == MAKKUVA_TARGET:
            continue
        for field, value, allowed in (
            ("variant", rep.variant, VARIANTS),
            ("dtype", rep.dtype, DTYPES),
            ("arithmetic", rep.arithmetic, ARITHMETIC),
        ):
            if value not in allowed:
                raise ResultsError(f"{rep.path}: unknown {field} {value!r}")


def _caveats(rep: Replication, seeds: int) -> list[str]:
    notes = []
    if rep.tier != "full":
        notes.append(
            f"**Not the paper's protocol:** tier `{rep.tier}` uses smaller data sets or fewer steps than "
            "the paper; it shows that the pipeline runs, not what the paper's numbers would be."
        )
    if rep.target != MAKKUVA_TARGET and seeds < PAPER_SEEDS:
        notes.append(
            f"The paper averages {PAPER_SEEDS} runs per cell; this file has {seeds} per cell "
            "(a standard deviation needs at least two)."
        )
    return notes


def _chen_section(rep: Replication) -> str:
    config = rep.payload["config"]
    runs = rep.payload["runs"]
    seeds = sorted({r["seed"] for r in runs})
    settings = sorted({r["setting"] for r in runs})
    sizes = config.get("train_sizes")
    head = (
        f"#### `{rep.name}`: variant `{rep.variant}`, tier `{rep.tier}`, experts' arithmetic "
        f"`{rep.arithmetic}` in `{rep.dtype}`\n\n"
        f"{len(runs)} runs; settings {', '.join(map(str, settings))}; seeds "
        f"{', '.join(map(str, seeds))}"
        + (f"; {sizes[0]} training and {sizes[1]} test samples" if sizes else "")
        + ". Test accuracy routes "
        + ("with Unif[0,1] noise (as the authors' code)" if rep.variant == "reference-code" else "noise-free")
        + " for the MoEs; the dispatch entropy comes from the training set's noisy routes at the last "
        "step. Mean ± sample standard deviation over seeds; `diff` is the lab's mean minus the paper's."
    )
    parts = [
        head,
        *_caveats(rep, len(seeds)),
        format_cells(rep.target, summary_cells(rep.payload)),
        _time_note(rep),
    ]
    return "\n\n".join(part for part in parts if part)


def _time_note(rep: Replication) -> str:
    """The runs' own training seconds, summed, beside the wall time of the invocation that last wrote
    the file (which trains only the runs it does not find on disk, so it can be a fraction of a second)."""
    seconds = [r["seconds"] for r in rep.payload["runs"] if isinstance(r.get("seconds"), int | float)]
    wall = rep.payload["config"].get("wall_seconds")
    parts = []
    if seconds:
        parts.append(
            f"Training time of its runs: {fixed(sum(seconds) / 60, 1)} min (the run records' `seconds`, "
            "summed)."
        )
    if isinstance(wall, int | float):
        parts.append(
            f"The invocation that last wrote the file took {num(wall)} s of wall time; it trains only "
            "the runs it does not find on disk."
        )
    return " ".join(parts)


def _makkuva_section(rep: Replication) -> str:
    runs = rep.payload["runs"]
    rows = []
    for i, run in enumerate(runs):
        rows.append((i, *(num(run[key][f]) for key, _ in fig1.METHODS for f in ("e_reg", "e_gating"))))
    means = []
    for key, _ in fig1.METHODS:
        means += [num(float(np.mean([r[key][f] for r in runs]))) for f in ("e_reg", "e_gating")]
    rows.append(("mean", *means))
    head = ["init"] + [f"{name} {what}" for _, name in fig1.METHODS for what in ("E_reg", "E_gating")]
    claim = rep.payload.get("paper_claim")
    config = rep.payload.get("config", {})
    return "\n\n".join(
        [
            f"#### `{rep.name}`: tier `{rep.tier}`, seed {rep.payload['seed']}, {len(runs)} inits",
            *_caveats(rep, len(runs)),
            *([f"The paper's claim, as the file states it: {claim}"] if claim else []),
            table(head, rows),
            _makkuva_recovery(rep),
            "The paper gives k = 3, d = 10, σ = 0.05, g = Id, 5 trials and the batch size 1024 for L4 "
            "(Sec. 4; the lab uses it for l2-SGD too); every other value is the lab's (`Fig1Config`), as "
            "the file records it: "
            + ", ".join(
                f"{name} = {value}" for name, value in _flat(config).items() if name not in MAKKUVA_STATED
            )
            + ". Sec. 4 names EM without saying which EM; the lab's (WLS experts, IRLS gates, σ² "
            "estimated) is in `lab/makkuva2020/fit.py`.",
        ]
    )


def _flat(config: dict) -> dict:
    """A run configuration with nested groups spelled `group.name` (the regularisers `reg.mu`, …)."""
    out = {}
    for name, value in config.items():
        if isinstance(value, dict):
            out |= {f"{name}.{inner}": v for inner, v in value.items()}
        else:
            out[name] = value
    return out


def _makkuva_recovery(rep: Replication) -> str:
    """Inits each method ends recovered in, with the stuck rate's 99 % interval (both stored by the run)."""
    stored = rep.payload["recovery"]
    parts = [
        f"{name}: {stored[key]['recovered']} of {stored[key]['inits']}, stuck rate "
        f"{interval(stored[key]['stuck_ci_99'])}"
        for key, name in fig1.METHODS
    ]
    return (
        f"Inits ending recovered (E_reg and E_gating ≤ {num(recovery_threshold())}, the lab's threshold), "
        f"and the 99 % Clopper–Pearson interval of the rate at which each method ends stuck: "
        f"{'; '.join(parts)}."
    )


def choices_table(target: str) -> str:
    """The values a target's runs use, per variant, and where each comes from (`lab_choices.toml`)."""
    rows = [
        (
            f"`{c.name}`",
            c.values["paper"],
            c.values["reference-code"],
            c.source if c.source == "paper" else f"**{c.source}**",
            c.reason,
        )
        for c in declared(target)
    ]
    return (
        "Values the runs use, and where each comes from (`lab/chen2022/lab_choices.toml`; the values are "
        "read from the runs' configurations). A value marked **lab** is the lab's choice, not the paper's; a "
        "reference-code value that differs from the stated model's is the authors' code's:\n\n"
        + table(("value", "stated model", "reference code", "source", "where stated, or why"), rows)
    )


def _target_section(target: str, help_text: str, files: list[Replication]) -> str:
    parts = [anchor(target), f"### {target}: {help_text}"]
    if target != MAKKUVA_TARGET:
        parts.append(choices_table(target))
    if not files:
        parts.append(
            "No committed runs yet. The paper's protocol (full tier, the stated model):\n\n"
            f"```bash\n{command(target)}\n```"
        )
    for rep in files:
        parts.append(_makkuva_section(rep) if target == MAKKUVA_TARGET else _chen_section(rep))
    if target != MAKKUVA_TARGET:
        parts += dtype_comparisons(files)
        missing = [v for v in VARIANTS if files and v not in {r.variant for r in files}]
        for variant in missing:
            parts.append(
                f"No committed runs of the `{variant}` variant; they come from `{command(target, variant)}`."
            )
    return "\n\n".join(parts)


def replications_page(results: Results) -> str:
    """docs/replications.md."""
    check_targets(results)
    present = list(results.replications)
    order = {"full": 0}
    by_target = {
        t: sorted(
            (r for r in present if r.target == t),
            key=lambda r: (r.variant != "paper", order.get(r.tier, 1), r.dtype != "float64", r.name),
        )
        for t in known_targets()
    }
    empty = [t for t, files in by_target.items() if not files]
    intro = (
        "Each table is rendered from one file under `results/replicate/`, written by "
        "`python -m lab replicate TARGET --seeds 10 --out results/replicate` (`TARGET.json`, suffixed by "
        "`_reference-code` or `_float32` for the other variant or precision). "
        "For Chen et al. the lab's mean over seeds sits beside the paper's value for every cell; the "
        f"paper's values are constants of `{Cell.__module__.replace('.', '/')}.py`. Two variants "
        "exist: `paper` trains the model as the paper states it, `reference-code` switches on every "
        "departure of the authors' published code (input scaling, biases, two-logit readout, uniform "
        "init, early stopping, noisy test routing). The experts run on Def. 3.1's structure "
        "(`--arithmetic structured`, equal to the dense kernels up to rounding) in float64 unless a "
        "file says otherwise; `--dtype float32` runs them in single precision, as the authors' code "
        "does.\n\n"
        "The paper's protocol is the `full` tier (the training and test sizes of App. A.2) with "
        f"{PAPER_SEEDS} seeds per cell. Runs resume: each finished run is kept in the run store "
        "`results/replicate/runs.sqlite` (git-ignored), so raising `--seeds` later only computes the missing "
        "seeds; the committed summaries hold every run the pages read."
    )
    status = table(
        ("target", "what", "committed files"),
        [
            (f"[{t}](#{t})", _help(t), ", ".join(f"`{r.name}`" for r in files) or "none yet")
            for t, files in by_target.items()
        ],
    )
    if empty:
        status += "\n\nTargets without committed runs: " + ", ".join(f"`{t}`" for t in empty) + "."
    chen_parts = [_target_section(t, chen.TARGET_HELP[t], by_target[t]) for t in chen.TARGETS]
    makkuva = _target_section(MAKKUVA_TARGET, _help(MAKKUVA_TARGET), by_target[MAKKUVA_TARGET])
    return page(
        "Replications",
        intro,
        status,
        "## Chen et al. 2022: the synthetic tables",
        *chen_parts,
        "## Makkuva et al. 2020: Fig. 1",
        makkuva,
    )


def _help(target: str) -> str:
    if target == MAKKUVA_TARGET:
        return "Fig. 1: L4 + L_log against ℓ2-SGD and EM from the same inits"
    return chen.TARGET_HELP[target]
