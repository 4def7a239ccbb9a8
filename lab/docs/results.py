"""The committed result files the docs are rendered from, read and checked before anything renders.

Layout of the results folder (default `results/`):

- `verify.json`: the output of `python -m lab verify --seed 0 --json results/verify.json` (required);
- `replicate/*.json`: one file per replication run of `python -m lab replicate TARGET --json ...`
  (optional; the run store `replicate/runs.sqlite`, `*.md` and `*.png` beside them are not read), and
  `replicate/analysis.json`, the statistics over several of them that the same command rewrites beside
  them (`lab.chen2022.replicate_analysis`; refused when a summary changed since);
- `bench/*.json`: benchmark summaries written by `python -m lab bench-report --summary ...` (optional);
- `timing/*.json`: timings of `python -m lab replicate ... --timing PATH` invocations (optional);
- `mutation/summary.json` and `mutation/mutants.json`: the mutation score of the checks and tests per
  module group, and every sampled mutant, written by `nox -s mutation` (optional, read together);
- `proof_chain/proof_chain.json`: the report of the d study of Theorem 4.2's proof, written by
  `python -m lab sweep report sweeps/proof_chain.toml --out results/proof_chain` (optional);
- `sweeps/<name>.json`: reports of the sensitivity and tightness sweeps, written by
  `python -m lab sweep report sweeps/<name>.toml --out results/sweeps` (optional), by sweep name.

Every problem with a file (missing when required, not JSON, a field missing or of the wrong type)
is a `ResultsError` whose message starts with the file's path, so the command prints one line.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lab.chen2022.replicate_analysis import ANALYSIS_FORMAT, ANALYSIS_NAME, digest
from lab.chen2022.tables import TARGETS
from lab.cli.bench_report import SUMMARY_FORMAT
from lab.cli.timing import TIMING_FORMAT
from lab.core.errors import InputError
from lab.core.records import KINDS, VERDICTS

VERIFY_COMMAND = "python -m lab verify --seed 0 --json results/verify.json"


class ResultsError(InputError):
    """A results file is missing or damaged; the message names it."""


@dataclass(frozen=True)
class Replication:
    """One replication file: its target, variant, tier and the payload as `replicate` wrote it."""

    path: Path
    target: str
    variant: str
    tier: str
    payload: dict[str, Any]
    dtype: str = "float64"  # the experts' arithmetic (Chen et al.); files from before it are dense float64
    arithmetic: str = "dense"
    analysis: dict[str, Any] | None = None  # the replicate analysis beside the file, if any

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class BenchSummary:
    """One benchmark summary (see `lab.cli.bench_report.summary`)."""

    path: Path
    payload: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name


@dataclass(frozen=True)
class MutationRun:
    """The mutation score (`mutation/summary.json`) and its sampled mutants (`mutation/mutants.json`)."""

    summary: dict[str, Any]
    mutants: list[dict[str, Any]]


@dataclass(frozen=True)
class Results:
    """Everything the docs read: verify records, replication files, benchmark summaries, mutation score."""

    verify: dict[str, Any]
    replications: list[Replication] = field(default_factory=list)
    bench: list[BenchSummary] = field(default_factory=list)
    mutation: MutationRun | None = None
    proof_chain: dict[str, Any] | None = None
    timing: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (file name, record)
    sweeps: dict[str, dict[str, Any]] = field(default_factory=dict)  # sweep reports by sweep name

    @property
    def records(self) -> list[dict[str, Any]]:
        return self.verify["records"]


def record_by_key(results: Results, claim: str, key: str) -> dict[str, Any]:
    """The record of `claim` with `key` in the verify results; ResultsError in one line when there is none."""
    found = [r for r in results.records if r["claim"] == claim and r.get("key") == key]
    if len(found) != 1:
        problem = "no record" if not found else f"{len(found)} records"
        raise ResultsError(f"verify results: {problem} of claim {claim} with key {key!r}")
    return found[0]


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsError(f"{path}: missing") from None
    except OSError as exc:
        raise ResultsError(f"{path}: cannot be read ({exc.strerror})") from None
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc})") from None


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number a result may hold")


def _need(path: Path, obj: Any, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise ResultsError(f"{path}: {where}field {key!r} is missing")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise ResultsError(f"{path}: {where}field {key!r} has the wrong type ({type(value).__name__})")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _number_or_none(path: Path, obj: dict, key: str, where: str) -> None:
    value = obj.get(key)
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ResultsError(f"{path}: {where}field {key!r} must be a finite number or null, got {value!r}")


def load_verify(path: Path) -> dict[str, Any]:
    """`verify.json`, with every record's fields checked against the record vocabulary."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected a JSON object with 'records'")
    records = _need(path, data, "records", list)
    _need(path, data, "seed", int)
    _need(path, data, "tier", str)
    if not records:
        raise ResultsError(f"{path}: holds no records")
    for i, record in enumerate(records):
        where = f"record {i}: "
        for key in ("claim", "statement", "kind", "verdict", "outcome"):
            _need(path, record, key, str, where)
        _need(path, record, "params", dict, where)
        if record["kind"] not in KINDS:
            raise ResultsError(f"{path}: {where}kind {record['kind']!r} is not one of {KINDS}")
        if record["verdict"] not in VERDICTS:
            raise ResultsError(f"{path}: {where}verdict {record['verdict']!r} is not one of {VERDICTS}")
        for key in ("measured", "bound", "slack"):
            _number_or_none(path, record, key, where)
        ci = record.get("ci")
        if ci is not None and (
            not isinstance(ci, list) or len(ci) != 2 or not all(isinstance(v, int | float) for v in ci)
        ):
            raise ResultsError(f"{path}: {where}field 'ci' must be null or [low, high], got {ci!r}")
        for key in ("finding", "note"):
            if record.get(key) is not None and not isinstance(record[key], str):
                raise ResultsError(f"{path}: {where}field {key!r} must be text or null")
    return data


def _chen_replication(path: Path, data: dict) -> Replication:
    config = _need(path, data, "config", dict)
    target = _need(path, config, "target", str, "config: ")
    variant = _need(path, config, "variant", str, "config: ")
    tier = _need(path, config, "tier", str, "config: ")
    _need(path, config, "seeds", int, "config: ")
    runs = _need(path, data, "runs", list)
    if not runs:
        raise ResultsError(f"{path}: holds no runs")
    for i, run in enumerate(runs):
        where = f"run {i}: "
        _need(path, run, "model", str, where)
        _need(path, run, "setting", int, where)
        _need(path, run, "seed", int, where)
        _need(path, run, "steps", int, where)
        accuracy = _need(path, run, "test_accuracy", (int, float), where)
        if not math.isfinite(accuracy):
            raise ResultsError(f"{path}: {where}test_accuracy is not finite")
        _number_or_none(path, run, "dispatch_entropy", where)
    arithmetic = {k: config[k] for k in ("dtype", "arithmetic") if k in config}  # else the defaults
    return Replication(path, target, variant, tier, data, **arithmetic)


def _makkuva_replication(path: Path, data: dict) -> Replication:
    tier = _need(path, data, "tier", str)
    _need(path, data, "seed", int)
    runs = _need(path, data, "runs", list)
    if len(runs) < 1:
        raise ResultsError(f"{path}: holds no runs")
    for i, run in enumerate(runs):
        for method in ("ours", "l2", "em"):
            errors = _need(path, run, method, dict, f"run {i}: ")
            for key in ("e_reg", "e_gating"):
                _need(path, errors, key, (int, float), f"run {i}: {method}: ")
    _need(path, data, "config", dict)
    _need(path, data, "recovered_eps", (int, float))
    recovery = _need(path, data, "recovery", dict)
    for method in ("ours", "l2", "em"):
        counts = _need(path, recovery, method, dict, "recovery: ")
        for key, kind in (("recovered", int), ("inits", int), ("stuck_ci_99", list)):
            _need(path, counts, key, kind, f"recovery: {method}: ")
    return Replication(path, data["target"], "paper", tier, data)


def load_replication(path: Path) -> Replication:
    """One `replicate --json` file: a Chen et al. table target or Makkuva et al.'s Fig. 1."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: expected a JSON object written by `python -m lab replicate`")
    if data.get("target") == "makkuva-fig1":
        return _makkuva_replication(path, data)
    if isinstance(data.get("config"), dict) and "target" in data["config"]:
        return _chen_replication(path, data)
    raise ResultsError(f"{path}: not a replication file (no target named in it)")


def load_analysis(path: Path, summaries: list[Path]) -> dict[str, Any] | None:
    """The replicate analysis beside the Chen et al. `summaries` (None when there is none), refused when it
    was computed from other summaries, or from other texts of them."""
    if not path.exists():
        return None
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("format") != ANALYSIS_FORMAT:
        raise ResultsError(f"{path}: not a replicate analysis (expected format {ANALYSIS_FORMAT!r})")
    digests = _need(path, data, "summaries", dict)
    held = {p.name: digest(p.read_text(encoding="utf-8")) for p in summaries}
    if stale := sorted(name for name in digests.keys() | held.keys() if digests.get(name) != held.get(name)):
        raise ResultsError(
            f"{path}: computed from other summaries than its folder holds ({', '.join(stale)}); "
            f"`python -m lab replicate TARGET --out {path.parent}` rewrites it"
        )
    for key in ("precision", "stalled", "same_init"):
        _need(path, data, key, (list, dict, type(None)))
    return data


def load_bench(path: Path) -> BenchSummary:
    """One benchmark summary written by `python -m lab bench-report --summary`."""
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("format") != SUMMARY_FORMAT:
        raise ResultsError(f"{path}: not a benchmark summary (expected format {SUMMARY_FORMAT!r})")
    _need(path, data, "machine", dict)
    benches = _need(path, data, "benchmarks", list)
    for i, bench in enumerate(benches):
        where = f"benchmark {i}: "
        _need(path, bench, "name", str, where)
        _need(path, bench, "kernel", str, where)
        for key in ("min_ms", "median_ms", "gflops", "fraction_of_dgemm", "speedup_vs_numpy_twin"):
            _number_or_none(path, bench, key, where)
        _bench_measures(path, bench, where)
    _number_or_none(path, data, "dgemm_gflops", "")
    return BenchSummary(path, data)


def _bench_measures(path: Path, bench: dict, where: str) -> None:
    """Check the optional `measures` of a benchmark: finite numbers by name (older summaries lack it)."""
    measures = bench.get("measures", {})
    if not isinstance(measures, dict):
        raise ResultsError(f"{path}: {where}field 'measures' must be an object of numbers, got {measures!r}")
    for key, value in measures.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ResultsError(
                f"{path}: {where}measures: field {key!r} must be a finite number, got {value!r}"
            )


TIMING_FIELDS: dict[str, type | tuple[type, ...]] = {
    "command": str,
    "targets": list,
    "variant": str,
    "dtype": str,
    "seeds": int,
    "tier": str,
    "jobs": int,
    "cores": int,
    "threads": int,
    "run_files_at_start": int,
    "wall_seconds": (int, float),
    "cpu_seconds": (int, float),
    "code": str,
    "runs": list,
}
TIMING_RUN_FIELDS: dict[str, type | tuple[type, ...]] = {
    "model": str,
    "variant": str,
    "setting": int,
    "tier": str,
    "activation": str,
    "steps": int,
    "seconds": (int, float),
}


def load_timing(path: Path) -> dict[str, Any]:
    """One timing record written by `python -m lab replicate ... --timing PATH`."""
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("format") != TIMING_FORMAT:
        raise ResultsError(f"{path}: not a replicate timing (expected format {TIMING_FORMAT!r})")
    for key, kind in TIMING_FIELDS.items():
        _need(path, data, key, kind)
    for key in ("wall_seconds", "cpu_seconds", "cores", "jobs", "threads"):
        if not math.isfinite(data[key]) or data[key] <= 0:
            raise ResultsError(f"{path}: field {key!r} must be positive and finite, got {data[key]!r}")
    for i, run in enumerate(data["runs"]):
        for key, kind in TIMING_RUN_FIELDS.items():
            _need(path, run, key, kind, f"run {i}: ")
        for key in ("filters",) if run["model"].startswith("single") else ("M", "J"):
            _need(path, run, key, int, f"run {i}: ")  # the model's size, for its FLOP count
        if not math.isfinite(run["seconds"]) or run["seconds"] <= 0:
            raise ResultsError(f"{path}: run {i}: field 'seconds' must be positive, got {run['seconds']!r}")
    return data


MUTATION_FORMAT = "moe-lab mutation summary 1"
MUTATION_FIELDS = (
    "group",
    "mutants_total",
    "sampled",
    "killed",
    "survived",
    "equivalent",
    "timeout",
    "kill_rate",
    "ci_low",
    "ci_high",
)


def load_mutation(folder: Path) -> MutationRun | None:
    """`mutation/summary.json` with `mutation/mutants.json` (None when no summary is committed)."""
    path = folder / "summary.json"
    if not path.exists():
        return None
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("format") != MUTATION_FORMAT:
        raise ResultsError(f"{path}: not a mutation summary (expected format {MUTATION_FORMAT!r})")
    for key in ("tool", "tool_version", "date", "commit_before"):
        _need(path, data, key, str)
    for key in ("seed", "workers"):
        _need(path, data, key, int)
    for name in ("sample_sizes", "first_draw"):
        counts = data.get(name) or {}
        if name == "sample_sizes":
            counts = _need(path, data, name, dict)
        for group, n in counts.items():
            if not isinstance(n, int) or isinstance(n, bool):
                raise ResultsError(f"{path}: {name}.{group} must be an integer, got {n!r}")
    for key in ("session_wall_seconds", "mean_seconds_per_mutant", "rerun_wall_seconds", "level"):
        _number_or_none(path, data, key, "")
    _need(path, data, "selection", dict)
    for name in ("groups", "before"):
        entries = _need(path, data, name, list)
        for i, entry in enumerate(entries):
            where = f"{name} {i}: "
            if not isinstance(entry, dict) or tuple(entry) != MUTATION_FIELDS:
                raise ResultsError(f"{path}: {where}fields must be exactly {MUTATION_FIELDS}")
            _need(path, entry, "group", str, where)
            for key in MUTATION_FIELDS[1:7]:
                _need(path, entry, key, int, where)
            for key in MUTATION_FIELDS[7:]:
                _number_or_none(path, entry, key, where)
    mutants_path = folder / "mutants.json"
    listing = _read_json(mutants_path)
    mutants = _need(mutants_path, listing, "mutants", list)
    for i, mutant in enumerate(mutants):
        for key in ("id", "group", "module", "operator", "outcome_before", "outcome_after"):
            _need(mutants_path, mutant, key, str, f"mutant {i}: ")
        _need(mutants_path, mutant, "line", int, f"mutant {i}: ")
    return MutationRun(data, mutants)


PROOF_CHAIN_METRICS = ("T1", "T2", "routing_follows_professions", "professions_predict", "routed_share_end")
# Fitted as c·d^slope on log–log axes (the findings' exponents, the rates figure): positive in every run.
PROOF_CHAIN_RATES = (
    "h_inf_T1",
    "h_inf_T1_over_sigma0_1_5",
    "other_projection_T1_over_sigma0",
    "center_only_gap_end",
    "profession_spread_end",
)


def load_proof_chain(path: Path) -> dict[str, Any] | None:
    """The sweep report of `sweeps/proof_chain.toml` (None when not committed), checked for the fits in d."""
    if not path.exists():
        return None
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("task") != "proof-chain":
        raise ResultsError(f"{path}: not a report of the proof-chain sweep (task 'proof-chain')")
    _need(path, data, "task_tables", str)
    runs = _need(path, data, "runs", list)
    for i, run in enumerate(runs):
        where = f"run {i}: "
        _need(path, _need(path, run, "params", dict, where), "d", int, where)
        metrics = _need(path, run, "metrics", dict, where)
        for key in PROOF_CHAIN_METRICS:
            _need(path, metrics, key, (int, float), where)
        for key in PROOF_CHAIN_RATES:
            value = _need(path, metrics, key, (int, float), where)
            if not (0 < value < math.inf):
                raise ResultsError(f"{path}: {where}field {key!r} must be positive and finite, got {value!r}")
    if len(runs) < 3 or len({run["params"]["d"] for run in runs}) < 2:
        raise ResultsError(f"{path}: a power law in d needs at least 3 runs at two or more values of d")
    _need(path, data, "analysis", dict)  # the fits in d (lab.sweeps.proof_chain.proof_chain_fits)
    return data


def load_sweep_report(path: Path) -> dict[str, Any]:
    """A committed sweep report (`lab.sweeps.report.build_report`), checked for its groups and runs."""
    data = _read_json(path)
    for key, kind in (("sweep", str), ("task", str), ("groups", list), ("runs", list), ("counts", dict)):
        _need(path, data, key, kind)
    for i, run in enumerate(data["runs"]):
        _need(path, run, "params", dict, f"run {i}: ")
        _need(path, run, "metrics", dict, f"run {i}: ")
    return data


def load_results(folder: str | Path) -> Results:
    """Read and check every results file under `folder`; raises `ResultsError` naming a bad file."""
    root = Path(folder)
    if not root.is_dir():
        raise ResultsError(f"{root}: no such results folder")
    verify = load_verify(root / "verify.json")
    found = sorted(p for p in (root / "replicate").glob("*.json") if p.name != ANALYSIS_NAME)
    replications = [load_replication(p) for p in found]
    chen = [r.path for r in replications if r.target in TARGETS]
    analysis = load_analysis(root / "replicate" / ANALYSIS_NAME, chen)
    replications = [replace(r, analysis=analysis) for r in replications]
    bench = [load_bench(p) for p in sorted((root / "bench").glob("*.json"))]
    proof_chain = load_proof_chain(root / "proof_chain" / "proof_chain.json")
    timing = [(p.name, load_timing(p)) for p in sorted((root / "timing").glob("*.json"))]
    sweeps = {p.stem: load_sweep_report(p) for p in sorted((root / "sweeps").glob("*.json"))}
    return Results(verify, replications, bench, load_mutation(root / "mutation"), proof_chain, timing, sweeps)
