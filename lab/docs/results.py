"""The committed result files the docs are rendered from, read and checked before anything renders.

The folder's layout and the commands that write its files are on the index page (`index.md.j2`, "The
results folder"); beside them, `mutation/summary.json` and `mutants.json` (`nox -s mutation`) and the
sweep reports `sweeps/<name>.json` (`python -m lab sweep report sweeps/<name>.toml --out results/sweeps`).
Each kind of file has a schema (its fields and what each holds, nested as in the file) declared beside the
code that writes it (e.g. `lab.chen2022.timing.TIMING`; the mutation files' below, their writer being a test
tool) and applied by `lab.core.schema`: every problem with a file (missing when required, not JSON, a field
missing or not what its schema says) is a `ResultsError` whose message starts with the file's path and
names the field, so the command prints one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.chen2022.proof_chain import PROOF_CHAIN_ANALYSIS, PROOF_CHAIN_REPORT
from lab.chen2022.replicate_analysis import ANALYSIS_FORMAT, ANALYSIS_NAME, digest
from lab.chen2022.replicate_report import SUMMARY
from lab.chen2022.runs import ARITHMETIC, VARIANT_NAMES
from lab.chen2022.tables import TARGETS
from lab.chen2022.timing import TIMING, TIMING_FORMAT
from lab.chen2022.training import DTYPES
from lab.core.compare import COMPARISON_FILE, COMPARISON_FORMAT
from lab.core.schema import INT, NUMBER, OBJECT, TEXT, Each, Is, ResultsError, check, load, read_json
from lab.core.verify_file import read_verify_file
from lab.kernels.bench.compile_profile import BEFORE_NAME, COMPILE_PROFILE, PROFILE_FORMAT, PROFILE_NAME
from lab.kernels.bench.history import HISTORY_NAME, load_history
from lab.kernels.bench.report import BENCH_SUMMARY, SUMMARY_FORMAT
from lab.makkuva2020 import fig1_experiment as fig1
from lab.sweeps.report import SWEEP_REPORT

VERIFY_COMMAND = "python -m lab verify --seed 0 --json results/verify.json"


@dataclass(frozen=True)
class ReplicationFile:
    """One replication file: its target, variant, tier and the payload as `replicate` wrote it."""

    path: Path
    target: str
    variant: str
    tier: str
    payload: dict[str, Any]
    dtype: str = "float64"  # the experts' arithmetic (Chen et al.); files from before it are dense float64
    arithmetic: str = "dense"

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class Results:
    """Everything the docs read: verify records, replication files, benchmark summaries, mutation score."""

    verify: dict[str, Any]
    replications: list[ReplicationFile] = field(default_factory=list)
    bench: dict[str, dict[str, Any]] = field(default_factory=dict)  # benchmark summaries by file name
    mutation: tuple[dict[str, Any], list[dict[str, Any]]] | None = None  # the score, its mutants
    proof_chain: dict[str, Any] | None = None
    timing: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (file name, record)
    sweeps: dict[str, dict[str, Any]] = field(default_factory=dict)  # sweep reports by sweep name
    analysis: dict[str, Any] | None = None  # the replicate analysis beside the Chen et al. files, if any
    compile_profile: dict[str, Any] | None = None  # bench/compile_profile.json (`python -m lab kernels`)
    comparisons: dict[str, dict[str, Any]] = field(default_factory=dict)  # reproducing/*.json, by name
    bench_history: dict[str, Any] | None = None  # bench/history.json (`python -m lab bench-history`)
    compile_profile_before: dict[str, Any] | None = None  # bench/compile_profile_before.json, if kept

    @property
    def records(self) -> list[dict[str, Any]]:
        return self.verify["records"]


def record_by_key(results: Results, claim: str, key: str, page: str = "") -> dict[str, Any]:
    """The record of `claim` with `key` in the verify results; ResultsError in one line (naming the `page`
    that asks, if given) when there is none."""
    found = [r for r in results.records if r["claim"] == claim and r.get("key") == key]
    if len(found) != 1:
        problem = "no record" if not found else f"{len(found)} records"
        where = f"{page}: " if page else ""
        mine = [r for r in results.records if r["claim"] == claim]
        errors = [r["statement"] for r in mine if r.get("outcome") == "error"]
        why = f" (a check of {claim} errored: {errors[0]})" if errors and not found else ""
        raise ResultsError(f"{where}verify results: {problem} of claim {claim} with key {key!r}{why}")
    return found[0]


def load_replication(path: Path) -> ReplicationFile:
    """One `replicate --json` file: Makkuva et al.'s Fig. 1, or a Chen et al. table target the lab has."""
    data = read_json(path)
    if isinstance(data, dict) and data.get("target") == "makkuva-fig1":
        check(path, data, fig1.REPLICATION)
        return ReplicationFile(path, data["target"], "paper", data["tier"], data)
    if not (isinstance(data, dict) and isinstance(config := data.get("config"), dict) and "target" in config):
        raise ResultsError(f"{path}: not a replication file (no target named in it)")
    check(path, data, SUMMARY)
    arithmetic = {k: config[k] for k in ("dtype", "arithmetic") if k in config}  # else the defaults
    rep = ReplicationFile(path, config["target"], config["variant"], config["tier"], data, **arithmetic)
    for what, value, allowed in (
        ("replication target", rep.target, TARGETS),
        ("variant", rep.variant, VARIANT_NAMES),
        ("dtype", rep.dtype, DTYPES),
        ("arithmetic", rep.arithmetic, ARITHMETIC),
    ):
        if value not in allowed:
            raise ResultsError(f"{path}: unknown {what} {value!r}")
    return rep


def load_analysis(path: Path, summaries: list[Path]) -> dict[str, Any] | None:
    """The replicate analysis beside the Chen et al. `summaries` (None when there are none), refused when
    it is missing or was computed from other summaries, or from other texts of them."""
    if not summaries:
        return None
    if not path.exists():
        rewrite = f"`python -m lab replicate TARGET --out {path.parent}` writes it"
        raise ResultsError(f"{path}: no such file; {rewrite}")
    tables = Is("a list, an object or null", lambda v: v is None or isinstance(v, list | dict))
    schema = {"summaries": OBJECT, "precision stalled same_init agreement": tables}
    data = load(path, schema, "a replicate analysis", format=ANALYSIS_FORMAT)
    held = {p.name: digest(p.read_text(encoding="utf-8")) for p in summaries}
    stored = data["summaries"]
    if stale := sorted(name for name in stored.keys() | held.keys() if stored.get(name) != held.get(name)):
        raise ResultsError(
            f"{path}: computed from other summaries than its folder holds ({', '.join(stale)}); "
            f"`python -m lab replicate TARGET --out {path.parent}` rewrites it"
        )
    return data


def load_bench(path: Path) -> dict[str, Any]:
    """One benchmark summary written by `python -m lab bench-report --summary`."""
    return load(path, BENCH_SUMMARY, "a benchmark summary", format=SUMMARY_FORMAT)


def load_compile_profile(path: Path) -> dict[str, Any] | None:
    """The compile profile written by `python -m lab kernels --compile-profile` (None when not committed)."""
    return load(path, COMPILE_PROFILE, "a compile profile", format=PROFILE_FORMAT) if path.exists() else None


def load_timing(path: Path) -> dict[str, Any]:
    """One timing record written by `python -m lab replicate ... --timing PATH`."""
    return load(path, TIMING, "a replicate timing", format=TIMING_FORMAT)


MUTATION_FORMAT = "moe-lab mutation summary 1"
GROUP_SCORE = {
    "group": TEXT,
    "mutants_total sampled killed survived equivalent timeout": INT,
    "kill_rate? ci_low? ci_high?": NUMBER,
}
MUTATION_FIELDS = tuple(name.removesuffix("?") for names in GROUP_SCORE for name in names.split())
MUTATION = {
    "tool tool_version date commit_before": TEXT,
    "seed workers": INT,
    "sample_sizes first_draw?": Each(INT),
    "session_wall_seconds? mean_seconds_per_mutant? rerun_wall_seconds? level?": NUMBER,
    "selection": OBJECT,
    "groups": Each(GROUP_SCORE, "groups"),
    "before": Each(GROUP_SCORE, "before"),
}
MUTANTS = {
    "mutants": Each({"id group module operator outcome_before outcome_after": TEXT, "line": INT}, "mutant")
}


def load_mutation(folder: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """`mutation/summary.json` with `mutation/mutants.json` (None when no summary is committed)."""
    path = folder / "summary.json"
    if not path.exists():
        return None
    data = load(path, MUTATION, "a mutation summary", format=MUTATION_FORMAT)
    for name in ("groups", "before"):
        for i, entry in enumerate(data[name]):
            if tuple(entry) != MUTATION_FIELDS:
                raise ResultsError(f"{path}: {name} {i}: fields must be exactly {MUTATION_FIELDS}")
    return data, load(folder / "mutants.json", MUTANTS, "a list of mutants")["mutants"]


def load_comparison(path: Path) -> dict[str, Any]:
    """A committed comparison of a verify run with results/verify.json (`verify --compare-json`)."""
    return load(path, COMPARISON_FILE, "a verify comparison", format=COMPARISON_FORMAT)


def load_proof_chain(path: Path) -> dict[str, Any] | None:
    """The sweep report of `sweeps/proof_chain.toml` (None when not committed), checked for its runs at
    two or more values of d, then for the analysis across them."""
    if not path.exists():
        return None
    data = load(path, PROOF_CHAIN_REPORT, "a report of the proof-chain sweep", task="proof-chain")
    if len(data["runs"]) < 3 or len({run["params"]["d"] for run in data["runs"]}) < 2:
        raise ResultsError(f"{path}: a power law in d needs at least 3 runs at two or more values of d")
    check(path, data, {"analysis": PROOF_CHAIN_ANALYSIS})
    return data


def load_sweep_report(path: Path) -> dict[str, Any]:
    """A committed sweep report (`lab.sweeps.report.build_report`), checked for its groups and runs."""
    return load(path, SWEEP_REPORT, "a sweep report")


def load_results(folder: str | Path) -> Results:
    """Read and check every results file under `folder`; raises `ResultsError` naming a bad file."""
    root = Path(folder)
    if not root.is_dir():
        raise ResultsError(f"{root}: no such results folder")
    verify = read_verify_file(root / "verify.json")
    found = sorted(p for p in (root / "replicate").glob("*.json") if p.name != ANALYSIS_NAME)
    replications = [load_replication(p) for p in found]
    chen = [r.path for r in replications if r.target in TARGETS]
    analysis = load_analysis(root / "replicate" / ANALYSIS_NAME, chen)
    others = (PROFILE_NAME, BEFORE_NAME, HISTORY_NAME)
    bench = {p.name: load_bench(p) for p in sorted((root / "bench").glob("*.json")) if p.name not in others}
    history = (
        load_history(root / "bench" / HISTORY_NAME) if (root / "bench" / HISTORY_NAME).exists() else None
    )
    compiled = load_compile_profile(root / "bench" / PROFILE_NAME)
    compiled_before = load_compile_profile(root / "bench" / BEFORE_NAME)
    proof_chain = load_proof_chain(root / "proof_chain" / "proof_chain.json")
    timing = [(p.name, load_timing(p)) for p in sorted((root / "timing").glob("*.json"))]
    sweeps = {p.stem: load_sweep_report(p) for p in sorted((root / "sweeps").glob("*.json"))}
    mutation = load_mutation(root / "mutation")
    comparisons = {p.stem: load_comparison(p) for p in sorted((root / "reproducing").glob("*.json"))}
    return Results(
        verify,
        replications,
        bench,
        mutation,
        proof_chain,
        timing,
        sweeps,
        analysis,
        compiled,
        comparisons,
        history,
        compiled_before,
    )
