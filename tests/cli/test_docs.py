"""docs/ is rendered from results/: the committed pages equal a fresh render; bad results stop it cleanly."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lab.chen2022 import replicate as chen
from lab.chen2022.proof_chain import PROOF_CHAIN_FITTED, proof_chain_analysis, report_runs
from lab.chen2022.replicate import write_analysis
from lab.chen2022.replicate_report import summary_statistics
from lab.cli.main import main
from lab.core.stats import interval_basis
from lab.docs.render import differences, figure_source, linked_figures, render_all
from lab.kernels.bench.report import MEASURES, summary
from lab.makkuva2020.fig1_experiment import mean_errors

REPO = Path(__file__).resolve().parents[2]
RESULTS, DOCS, SWEEPS = REPO / "results", REPO / "docs", REPO / "sweeps"


def test_committed_docs_equal_a_fresh_render():
    # Fails when a number in docs/ was edited by hand, or results/ or the templates changed without
    # rerunning `python -m lab docs`.
    lines = differences(render_all(RESULTS, SWEEPS), DOCS)
    assert not lines, "docs/ is out of date; run `python -m lab docs`:\n" + "\n".join(lines)


def _table1_payload(tier: str = "full") -> dict:
    configs = chen.expand("table1", [1], 2, tier=tier)
    runs = []
    for i, config in enumerate(configs):
        moe = config["model"].startswith("moe")
        runs.append(
            config
            | {
                "test_accuracy": 90.0 + i,
                "dispatch_entropy": 0.25 + 0.125 * i if moe else None,
                "steps": 1500 if moe else 800,
            }
        )
    return {
        "runs": runs,
        "config": {
            "target": "table1",
            "settings": [1],
            "seeds": 2,
            "seed": 0,
            "variant": "paper",
            "tier": tier,
        },
    }


def _bench_run() -> dict:
    def bench(name, group, ms, extra):
        stats = {"min": ms / 1e3, "median": 1.5 * ms / 1e3, "rounds": 7}
        return {
            "name": name,
            "fullname": f"b.py::{name}",
            "group": group,
            "stats": stats,
            "extra_info": extra,
        }

    numba_info = {"kernel": "routed_forward", "flops": 1e9, "dgemm_gflops": 50.0, "gflops": 250.0}
    return {
        "datetime": "2026-01-01T00:00:00",
        "machine_info": {"cpu": {"brand_raw": "Test CPU", "count": 2}, "python_version": "3.11.7"},
        "commit_info": {"id": "0123456789abcdef", "branch": "main", "dirty": False},
        "benchmarks": [
            bench(
                "test_routed_forward[numba]", "routed_forward", 4.0, numba_info | {"fraction_of_dgemm": 0.625}
            ),
            bench("test_routed_forward[numpy]", "routed_forward", 400.0, {"kernel": "routed_forward"}),
        ],
    }


_STEP_BOUND = {"ratio_to_dense_without_experts": 0.125, "expert_pass_ms": 1.5}
_SINGLE_GEMM = {"fraction_of_dgemm_same_shape_per_core": 0.75}


def _structured_run() -> dict:
    """The routed-forward run and the structured benchmarks: the step meets its targets, two others miss."""
    run = _bench_run()
    for name, ms, extra in (
        (
            "test_algorithm1_step[numba-structured]",
            2.5,
            {"ratio_to_dense": 0.25, "flop_ratio_to_dense": 0.2} | _STEP_BOUND,
        ),
        ("test_single_cnn_pass[paper-structured]", 40.0, {"ratio_to_dense": 0.2} | _SINGLE_GEMM),
        ("test_single_cnn_pass[reference-code-structured]", 50.0, {"ratio_to_dense": 0.4}),
        (
            "test_noise_patch_kernel[numba]",
            1.0,
            {"fraction_of_dgemm_same_shape_per_core": 0.5, "threads": 2}
            | {"fraction_of_dgemm_same_shape_one_thread": 0.625},
        ),
        ("test_noise_patch_kernel_float32[numba]", 0.5, {"fraction_of_sgemm_same_shape_per_core": 0.7}),
    ):
        stats = {"min": ms / 1e3}
        run["benchmarks"].append(
            {"name": name, "fullname": f"b.py::{name}", "group": "s", "stats": stats, "extra_info": extra}
        )
    return run


def _with_measures(measures) -> str:
    """The fixture's summary with `measures` set on its first benchmark."""
    data = summary(_bench_run(), "0001_run.json")
    data["benchmarks"][0]["measures"] = measures
    return json.dumps(data)


def _proof_chain_report(ds=(50, 100, 200), seeds=2, **override) -> dict:
    """A small synthetic d study: every quantity the findings read, as d^−1/2."""
    runs = []
    for d in ds:
        for seed in range(seeds):
            metrics = {"T1": 20, "T2": 0, "routing_follows_professions": 0.0, "professions_predict": 0.0}
            metrics |= {"routed_share_end": 0.5}
            metrics |= {"alignment_T1_over_eta_T1": 1.0}
            metrics |= {key: (1.0 + 0.1 * seed) * d**-0.5 for key in PROOF_CHAIN_FITTED} | override
            runs.append({"params": {"d": d, "M": 8, "eta": 0.02, "seed": seed}, "metrics": metrics})
    report = {"task": "proof-chain", "task_tables": "", "runs": runs}
    stats = {key: {"mean": 1.0, "std": 0.1} for key in runs[0]["metrics"]}
    groups = [{"fields": {"d": d}, "metrics": stats} for d in ds]  # the writer's mean and sd per d
    fittable = not override and len(ds) > 1  # a damaged study is refused before its fits are read
    analysis = proof_chain_analysis({}, report_runs(report)) if fittable else {}
    return report | {"groups": groups, "analysis": analysis}


def _fig1_payload() -> dict:
    """A Fig. 1 file as `replicate makkuva-fig1` writes it: two inits, l2-SGD stuck in both."""
    runs = [
        {
            key: {"e_reg": 0.001 * (i + 1), "e_gating": 0.5 if key == "l2" else 0.002}
            for key in ("ours", "l2", "em")
        }
        for i in range(2)
    ]
    return {
        "target": "makkuva-fig1",
        "paper_claim": "EM gets stuck.",
        "seed": 0,
        "tier": "full",
        "config": json.loads((RESULTS / "replicate" / "makkuva_fig1.json").read_text())["config"],
        "recovered_eps": 0.05,
        "recovery": {
            key: {
                "recovered": 2 if key != "l2" else 0,
                "inits": 2,
                "stuck_ci_99": [0.0, 0.93],
                "interval": interval_basis("Clopper–Pearson", 0.99, 2, of="inits"),
            }
            for key in ("ours", "l2", "em")
        },
        "means": mean_errors(runs),  # as the writer stores them
        "runs": runs,
    }


def _without_counts(report: dict) -> dict:
    """The report as written before its analysis held the counts per d."""
    return report | {"analysis": {k: v for k, v in report["analysis"].items() if k != "counts"}}


def _write(folder: Path, name: str, payload: dict) -> None:
    """A summary as `replicate` writes it (its statistics beside its runs), and the analysis beside it."""
    statistics = summary_statistics(payload["config"]["target"], payload["runs"])
    (folder / "replicate" / f"{name}.json").write_text(json.dumps(payload | statistics))
    write_analysis(folder / "replicate")


@pytest.fixture
def results(tmp_path):
    folder = tmp_path / "results"
    (folder / "replicate").mkdir(parents=True)
    (folder / "bench").mkdir()
    shutil.copy(RESULTS / "verify.json", folder / "verify.json")
    shutil.copytree(RESULTS / "proof_chain", folder / "proof_chain")
    _write(folder, "table1", _table1_payload())
    (folder / "replicate" / "makkuva-fig1.json").write_text(json.dumps(_fig1_payload()))
    for figure in ("table1.png", "makkuva_fig1.png"):  # the renderer asks only that a linked figure exists
        (folder / "replicate" / figure).write_bytes(b"drawn with its file")
    (folder / "bench" / "summary.json").write_text(json.dumps(summary(_bench_run(), "0001_run.json")))
    (folder / "bench" / "summary.png").write_bytes(b"drawn with its file")
    (folder / "figures").mkdir()
    (folder / "figures" / "theorem41.png").write_bytes(b"drawn from verify.json")  # B2's claim figure
    return folder


def _docs(results: Path, out: Path, *extra: str) -> int:
    return main(["docs", "--results", str(results), "--out", str(out), "--sweeps", str(SWEEPS), *extra])


def test_render_from_a_results_folder_then_check(results, tmp_path, capsys):
    out = tmp_path / "docs"
    assert _docs(results, out) == 0
    pages = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.md"))
    assert pages == sorted(render_all(results, SWEEPS))
    replications = (out / "replications.md").read_text()
    assert "90.50 ± 0.71" in replications  # single (linear): runs 0 and 1 of setting 1 → 90, 91
    assert "No committed runs yet" in replications and "replicate table3 --seeds 10" in replications
    assert "| mean | 0.0015 | 0.002 | 0.0015 | 0.5 | 0.0015 | 0.002 |" in replications
    performance = (out / "performance.md").read_text()
    assert (
        "| test_routed_forward[numba] | `routed_forward` | 4.000 | 6.000 | 250 | 62 % | 100× |" in performance
    )
    findings = (out / "findings.md").read_text()
    assert "`routed_forward` 62.5 %" in findings
    assert "Of the 2 nonlinear-MoE runs in `table1.json`" in findings  # accuracies 96 and 97
    assert "0 end below 95 % (rate 0.0 %, 95 % Clopper–Pearson [0.0 %, 84.2 %]" in findings
    assert "routed_forward" not in (out / "index.md").read_text()

    capsys.readouterr()
    assert _docs(results, out, "--check") == 0
    assert "all 11 pages are current" in capsys.readouterr().out

    edited = out / "claims" / "chen2022.md"
    edited.write_text(edited.read_text().replace("| holds |", "| violated |", 1))
    (out / "sweeps.md").unlink()
    (out / "notes.md").write_text("hand-written\n")
    assert _docs(results, out, "--check") == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert any(str(edited) in line and "differs" in line for line in lines)
    assert any(str(out / "sweeps.md") in line and "missing" in line for line in lines)
    assert any(str(out / "notes.md") in line for line in lines)
    assert edited.read_text().count("| violated |") > 0  # --check writes nothing


def test_a_page_without_results_says_so(results, tmp_path):
    (results / "bench" / "summary.json").unlink()
    (results / "proof_chain" / "proof_chain.json").unlink()
    for path in (results / "replicate").glob("*.json"):
        path.unlink()
    pages = render_all(results, SWEEPS)
    assert "No benchmark summary committed yet" in pages["performance.md"]
    assert "Targets without committed runs: `table1`, `table3`" in pages["replications.md"]
    assert "do not hold this measurement yet" in pages["findings.md"]
    assert "Not committed yet: `python -m lab sweep run sweeps/proof_chain.toml`" in pages["findings.md"]


def test_the_targets_table_judges_the_measures_of_a_summary(results):
    (results / "bench" / "summary.json").write_text(json.dumps(summary(_structured_run(), "0002_run.json")))
    performance = render_all(results, SWEEPS)["performance.md"]
    step, cnn = "test_algorithm1_step[numba-structured]", "512-filter single CNN, structured ÷ dense"
    for row in (
        f"| Algorithm 1 step, structured ÷ dense, against its FLOP ratio | {step} | ≤ 1.3 × | 1.25 × | met |",
        f"| Algorithm 1 step, structured time | {step} | ≤ 3 ms | 2.5 ms | met |",
        f"| {cnn} | test_single_cnn_pass[paper-structured] | ≤ 30 % | 20 % | met |",
        f"| {cnn} | test_single_cnn_pass[reference-code-structured] | ≤ 30 % | 40 % | not met |",
        "| Noise-patch kernel, fraction of DGEMM per core | test_noise_patch_kernel[numba] | ≥ 60 % | 50 % "
        "| not met |",
        "| Noise-patch kernel in float32, fraction of SGEMM per core "
        "| test_noise_patch_kernel_float32[numba] | ≥ 60 % | 70 % | met |",
    ):
        assert row in performance


def test_the_targets_table_shows_what_bounds_a_target_beside_it(results):
    (results / "bench" / "summary.json").write_text(json.dumps(summary(_structured_run(), "0002_run.json")))
    performance = render_all(results, SWEEPS)["performance.md"]
    step = "| Algorithm 1 step, structured ÷ dense, against its FLOP ratio "
    step += "| test_algorithm1_step[numba-structured] | ≤ 1.3 × | 1.25 ×"
    bound = "12.5 % with the expert pass's time taken off the step (router, gate and updates left)"
    flop = "20 % the steps' dense products, structured ÷ dense: the ratio at equal FLOP rates"
    assert (
        f"{step} | met | 25 % the time ratio itself, structured ÷ dense; {flop}; {bound}; 1.5 ms"
        in performance
    )
    single = "| test_single_cnn_pass[paper-structured] | ≤ 30 % | 20 % | met "
    assert (
        single + "| 75 % of one-thread DGEMM's rate on the pass's noise products, per core |" in performance
    )
    assert "| test_single_cnn_pass[reference-code-structured] | ≤ 30 % | 40 % | not met | - |" in performance
    assert (
        "| test_noise_patch_kernel[numba] | ≥ 60 % | 50 % | not met | 62.5 % on one Numba thread |"
        in performance
    )


def test_the_findings_say_what_bounds_the_step_target(results):
    run = _structured_run()
    (results / "bench" / "summary.json").write_text(json.dumps(summary(run, "0002_run.json")))
    findings = render_all(results, SWEEPS)["findings.md"]
    assert (
        "structured step takes 25 % of the dense step; its expert pass takes 12.5 %, and the rest of the "
        "step alone 12.5 % (same run, calls alternating)"
    ) in findings
    assert "so the time ratio is 1.25× the ratio of the arithmetic" in findings
    assert "at most 1.3× that ratio (26 % of the dense step): it is met." in findings
    assert "at one-thread DGEMM's speed" not in findings  # the summary has no DGEMM or dense step
    step = next(b for b in run["benchmarks"] if b["name"] == "test_algorithm1_step[numba-structured]")
    step["extra_info"] |= {"ratio_to_dense_without_experts": 0.3, "ratio_to_dense": 0.3}
    for name, ms in (("test_dgemm_of_the_same_shape", 2.0), ("test_algorithm1_step[numba-dense]", 10.0)):
        stats = {"min": ms / 1e3}
        run["benchmarks"].append(
            {"name": name, "fullname": name, "group": "s", "stats": stats, "extra_info": {}}
        )
    (results / "bench" / "summary.json").write_text(json.dumps(summary(run, "0002_run.json")))
    findings = render_all(results, SWEEPS)["findings.md"]
    assert "(26 % of the dense step): it is not met, and no faster expert kernel can meet it" in findings
    assert "at one-thread DGEMM's speed on each of 2 cores, would take 10 % of the dense step" in findings


def test_the_peak_multiply_add_rate_is_named_apart_from_the_kernels(results):
    run = _bench_run()
    for dtype, rate in (("float64", 100.0), ("float32", 200.0)):
        extra = {"kernel": f"peak_fma_{dtype}", "gflops": rate, "fraction_of_dgemm": rate / 50.0}
        name = f"test_peak_multiply_add_rate[{dtype}]"
        stats = {"min": 1e-3, "median": 1e-3, "rounds": 20}
        run["benchmarks"].append(
            {"name": name, "fullname": name, "group": "peak", "stats": stats, "extra_info": extra}
        )
    (results / "bench" / "summary.json").write_text(json.dumps(summary(run, "0002_run.json")))
    findings = render_all(results, SWEEPS)["findings.md"]
    assert "per kernel in the committed benchmark summary ([performance](performance.md))" in findings
    assert "`routed_forward` " in findings
    assert "`peak_fma_" not in findings  # a rate, not one of the kernels
    assert "is 100 GFLOP/s in float64 (2× DGEMM's), 200 GFLOP/s in float32 (4× DGEMM's)." in findings


def test_a_summary_without_measures_renders_its_targets_as_not_measured(results):
    performance = render_all(results, SWEEPS)["performance.md"]  # the routed-forward run only
    assert (
        "| Algorithm 1 step, structured ÷ dense, against its FLOP ratio | - | ≤ 1.3 × | - | not measured |"
        in performance
    )
    run = _structured_run()
    for bench in run["benchmarks"]:  # as run before the benchmarks recorded their measures
        bench["extra_info"] = {k: v for k, v in bench["extra_info"].items() if k not in MEASURES}
    (results / "bench" / "summary.json").write_text(json.dumps(summary(run, "0002_run.json")))
    performance = render_all(results, SWEEPS)["performance.md"]
    step = "test_algorithm1_step[numba-structured]"
    assert (
        f"| Algorithm 1 step, structured ÷ dense, against its FLOP ratio | {step} | ≤ 1.3 × | - "
        "| not measured |" in performance
    )
    assert f"| Algorithm 1 step, structured time | {step} | ≤ 3 ms | 2.5 ms | met |" in performance
    assert "| ≥ 60 % | - | not measured |" in performance


def test_quick_tier_runs_are_labelled_and_not_used_as_evidence(results):
    _write(results, "table1", _table1_payload("quick"))
    pages = render_all(results, SWEEPS)
    assert "**Not the paper's protocol:** tier `quick`" in pages["replications.md"]
    assert "Committed at a smaller tier only (`table1.json`)" in pages["findings.md"]


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("verify.json", "{", "not valid JSON"),
        ("verify.json", None, "missing"),
        ("verify.json", json.dumps({"records": [{"claim": "B4"}], "seed": 0, "tier": "quick"}), "record 0"),
        ("replicate/table1.json", json.dumps({"runs": []}), "not a replication file"),
        ("replicate/table1.json", json.dumps(_table1_payload() | {"runs": [{"model": "x"}]}), "run 0"),
        ("bench/summary.json", json.dumps({"format": "other"}), "not a benchmark summary"),
        (
            "bench/summary.json",
            json.dumps(
                {k: v for k, v in summary(_bench_run(), "0001_run.json").items() if k != "statistics"}
            ),
            "field 'statistics' is missing",
        ),
        (
            "bench/summary.json",
            json.dumps({k: v for k, v in summary(_bench_run(), "0001_run.json").items() if k != "targets"}),
            "field 'targets' is missing",
        ),
        ("bench/summary.json", _with_measures([0.25]), "benchmark 0: field 'measures' must be an object"),
        (
            "bench/summary.json",
            _with_measures({"ratio_to_dense": "fast"}),
            "benchmark 0: measures: field 'ratio_to_dense' must be a finite number, got 'fast'",
        ),
        ("replicate/table1.json", '{"runs": [NaN]}', "not valid JSON"),
        (
            "replicate/makkuva-fig1.json",
            json.dumps({k: v for k, v in _fig1_payload().items() if k != "means"}),
            "field 'means' is missing",
        ),
        (
            "mutation/summary.json",
            json.dumps(
                json.loads((RESULTS / "mutation" / "summary.json").read_text()) | {"first_draw": {"k": None}}
            ),
            "first_draw: field 'k' must be an integer, got None",
        ),
        ("proof_chain/proof_chain.json", json.dumps({"task": "other"}), "not a report of the proof-chain"),
        (
            "proof_chain/proof_chain.json",
            json.dumps(
                {"task": "proof-chain", "task_tables": "", "runs": [{"params": {"d": 50}, "metrics": {}}]}
            ),
            "run 0: metrics: field 'T1' is missing",
        ),
        (
            "proof_chain/proof_chain.json",
            json.dumps(_proof_chain_report(center_only_gap_end=0.0)),
            "run 0: metrics: field 'center_only_gap_end' must be positive and finite, got 0.0",
        ),
        (
            "proof_chain/proof_chain.json",
            json.dumps(_proof_chain_report(ds=(50,), seeds=3)),
            "a power law in d needs at least 3 runs at two or more values of d",
        ),
        (
            "proof_chain/proof_chain.json",
            json.dumps(_without_counts(_proof_chain_report())),
            "analysis: field 'counts' is missing",
        ),
    ],
)
def test_a_damaged_results_file_is_one_line_naming_it(results, tmp_path, capsys, name, content, message):
    path = results / name
    if content is None:
        path.unlink()
    else:
        path.parent.mkdir(exist_ok=True)
        path.write_text(content)
    out = tmp_path / "docs"
    assert _docs(results, out) == 2
    assert _docs(results, out, "--check") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and err[0] == err[1]
    assert str(path) in err[0] and message in err[0] and "Traceback" not in err[0]
    assert not out.exists()


def _rekey(results: Path, claim: str, old: str, new: str) -> None:
    """Give the record of `claim` with key `old` the key `new` in the folder's verify.json."""
    path = results / "verify.json"
    data = json.loads(path.read_text())
    (record,) = [r for r in data["records"] if (r["claim"], r["key"]) == (claim, old)]
    record["key"] = new
    path.write_text(json.dumps(data))


def test_a_key_a_template_names_missing_from_the_results_is_one_line(results, tmp_path, capsys):
    _rekey(results, "B2", "attained", "reached")
    out = tmp_path / "docs"
    assert _docs(results, out) == 2
    assert _docs(results, out, "--check") == 2
    said = (
        "python -m lab docs: error: claims/chen2022.md: verify results: no record of claim B2 "
        "with key 'attained'"
    )
    assert capsys.readouterr().err.strip().splitlines() == [said, said]
    assert not out.exists()


def test_a_key_a_finding_names_missing_from_the_results_is_one_line(results):
    from lab.docs.findings_data import findings_page
    from lab.docs.results import ResultsError, load_results

    _rekey(results, "B2", "attained", "reached")  # Theorem 4.1's finding reads B2's record `attained`
    with pytest.raises(ResultsError) as refused:
        findings_page(load_results(results))
    assert str(refused.value) == "findings.md: verify results: no record of claim B2 with key 'attained'"


def test_a_finding_on_a_claim_the_results_never_ran_says_how_to_run_it(results):
    path = results / "verify.json"
    data = json.loads(path.read_text())
    data["records"] = [r for r in data["records"] if r["claim"] != "D6"]
    path.write_text(json.dumps(data))
    findings = render_all(results, SWEEPS)["findings.md"]
    absent = "the D6 records, not in these results yet"
    assert f"### Eq. (4) and the GRU\n\nEvidence: **proven** ({absent}); **measured** ({absent})." in findings
    assert "python -m lab verify --only D6 --seed 0 --json results/verify.json" in findings


def test_a_record_its_claims_description_does_not_list_follows_the_listed_ones(results):
    path = results / "verify.json"
    data = json.loads(path.read_text())
    first = next(r for r in data["records"] if r["claim"] == "B1")
    data["records"].insert(0, first | {"key": "unlisted", "statement": "a record no description lists"})
    path.write_text(json.dumps(data))
    page = render_all(results, SWEEPS)["claims/chen2022.md"]
    assert "| [B1](#b1) | Theorem 4.1: the orbit identity | 4 |" in page
    assert "| 4 | premise | a record no description lists | " in page


def test_unknown_replication_target_is_refused(results, capsys):
    payload = _table1_payload()
    payload["config"]["target"] = "table99"
    empty = {key: [] for key in summary_statistics("table1", [])}  # table99 has no statistics to compute
    (results / "replicate" / "table1.json").write_text(json.dumps(payload | empty))
    write_analysis(results / "replicate")
    assert _docs(results, results.parent / "docs") == 2
    assert "unknown replication target 'table99'" in capsys.readouterr().err


def test_every_file_and_test_the_pages_name_exists():
    # The prose names files and tests; a rename elsewhere must not leave the docs pointing nowhere.
    pages = render_all(RESULTS, SWEEPS)
    text = "\n".join(pages.values())
    paths = set(re.findall(r"`((?:lab|checks|tests|benchmarks|sweeps)/[\w/.-]+\.(?:py|toml))`", text))
    assert paths, "expected the pages to name some files"
    assert [p for p in sorted(paths) if not (REPO / p).is_file()] == []
    for path, name in re.findall(r"pytest (tests/[\w/.-]+\.py) -k (\w+)", text):
        assert name in (REPO / path).read_text(), f"{path} has no test matching -k {name}"


def _anchors(text: str) -> set[str]:
    return set(re.findall(r'<a name="([\w-]+)"></a>', text))


def test_every_link_between_pages_and_from_the_readme_lands_on_an_anchor():
    pages = render_all(RESULTS, SWEEPS)
    sources = {f"docs/{name}": text for name, text in pages.items()}
    sources["README.md"] = (REPO / "README.md").read_text()
    broken = []
    for source, text in sources.items():
        for target, fragment in re.findall(r"\]\(([\w./-]+\.md)(?:#([\w-]+))?\)", text):
            resolved = (Path(source).parent / target).as_posix()
            resolved = re.sub(r"[^/]+/\.\./", "", resolved)
            if resolved.startswith("docs/"):
                page = pages.get(resolved.removeprefix("docs/"))
                if page is None or (fragment and fragment not in _anchors(page)):
                    broken.append(f"{source} -> {target}#{fragment}")
            elif not (REPO / resolved).is_file():
                broken.append(f"{source} -> {target}")
    assert broken == []


@pytest.mark.parametrize(("shift", "agree"), [(0.0, "3 of 4 cells agree"), (5.0, "0 of 4 cells agree")])
def test_float32_beside_float64_is_a_paired_comparison(results, tmp_path, shift, agree):
    """Same seeds in both precisions: noise-level differences agree; a shifted float32 file does not."""
    wide = _table1_payload()
    wide["runs"] = [r | {"test_accuracy": 90.0 + r["seed"]} for r in wide["runs"]]
    narrow = json.loads(json.dumps(wide))
    narrow["config"]["dtype"] = "float32"
    for i, run in enumerate(narrow["runs"]):
        run["dtype"] = "float32"
        # three cells differ by ±0.1 at the two seeds (mean 0, interval about ±1.3); one by +0.1 twice
        run["test_accuracy"] += shift + (0.1 if i < 2 or i % 2 else -0.1)
    _write(results, "table1_float32", narrow)
    _write(results, "table1", wide)
    page = render_all(results, SWEEPS)["replications.md"]
    assert "#### float32 beside float64, variant `paper`" in page
    assert agree in page


def test_float32_is_paired_with_the_float64_file_of_its_own_arithmetic(results):
    """A dense float64 file beside the structured pair is not compared with the structured float32 file."""
    wide = _table1_payload()
    wide["config"]["arithmetic"] = "structured"
    wide["runs"] = [r | {"test_accuracy": 90.0 + r["seed"]} for r in wide["runs"]]
    narrow = json.loads(json.dumps(wide))
    narrow["config"]["dtype"] = "float32"
    dense = json.loads(json.dumps(wide))
    dense["config"]["arithmetic"] = "dense"
    for run in dense["runs"]:
        run["test_accuracy"] += 5.0  # far outside seed noise: pairing with it would disagree everywhere
    for name, payload in (("table1", wide), ("table1_float32", narrow), ("table1_dense", dense)):
        _write(results, name, payload)
    page = render_all(results, SWEEPS)["replications.md"]
    assert "#### float32 beside float64, variant `paper`, arithmetic `structured`" in page
    assert "4 of 4 cells agree" in page
    assert "arithmetic `dense`\n" not in page


def test_stalled_runs_count_a_run_of_table1_and_table3_once(results):
    shared = _table1_payload()
    shared["config"]["target"] = "table3"
    _write(results, "table3", shared)
    findings = render_all(results, SWEEPS)["findings.md"]
    assert "Of the 2 nonlinear-MoE runs in `table1.json`, `table3.json`" in findings


@pytest.mark.parametrize(("shift", "below"), [(0.0, "below 0 in 0 of 1"), (-5.0, "below 0 in 1 of 1")])
def test_512_against_128_filters_is_paired_by_seed(results, shift, below):
    """Seed-to-seed spread cancels in the paired difference: only a shift of the 512-filter runs shows."""
    payload = _table1_payload()
    runs = []
    for config in chen.expand("table3", [1], 3):
        large = config.get("filters") == 512
        noise = 0.1 * (-1) ** config["seed"] if large else 0.0
        accuracy = 70.0 + 4 * config["seed"] + noise + (shift if large else 0.0)
        runs.append(config | {"test_accuracy": accuracy, "dispatch_entropy": None, "steps": 800})
    payload["runs"], payload["config"]["target"] = runs, "table3"
    _write(results, "table3", payload)
    findings = render_all(results, SWEEPS)["findings.md"]
    assert f"interval of the mean difference lies {below} settings" in findings
    assert "the paper's 512-filter row is below its 128-filter row in 1 of 1" in findings


def test_the_linear_singles_spread_is_given_per_filter_count(results):
    payload = _table1_payload()
    runs = []
    for config in chen.expand("table3", [1], 3):
        wide = config.get("filters") == 512
        loss = 0.5 + (0.4 * config["seed"] if wide else 0.01 * config["seed"])
        accuracy = 70.0 + (10.0 if wide else 1.0) * config["seed"]
        history = {"step": [0, 799], "loss": [0.69, loss], "train_accuracy": [0.5, 0.7]}
        runs.append(
            config | {"test_accuracy": accuracy, "history": history, "dispatch_entropy": None, "steps": 800}
        )
    payload["runs"], payload["config"]["target"] = runs, "table3"
    _write(results, "table3", payload)
    findings = render_all(results, SWEEPS)["findings.md"]
    assert "128 filters (3 runs): last training loss 0.50 to 0.52, largest seed sd of a setting's" in findings
    assert "512 filters (3 runs): last training loss 0.50 to 1.30, largest seed sd" in findings
    assert "accuracy 10.00 points" in findings and "(5.12 at 512 filters)" in findings
    payload["runs"] = [r for r in runs if r["seed"] == 0]  # one seed: no sd to give, and no NaN
    _write(results, "table3", payload)
    findings = render_all(results, SWEEPS)["findings.md"]
    assert "512 filters (1 runs): last training loss 0.50 to 0.50. Adam" in findings
    assert "nan points" not in findings


def test_same_init_levels_give_each_variants_span_beside_the_papers(results):
    for variant, level in (("paper", 75.0), ("reference-code", 95.0)):
        payload = _table1_payload()
        runs = [
            config | {"test_accuracy": level + config["seed"], "dispatch_entropy": None, "steps": 800}
            for config in chen.expand("table10", [1], 2, variant=variant)
        ]
        payload["runs"] = runs
        payload["config"] |= {"target": "table10", "variant": variant}
        name = "table10" if variant == "paper" else "table10_reference-code"
        _write(results, name, payload)
    findings = render_all(results, SWEEPS)["findings.md"]
    assert (
        "same-init MoEs reach 75.5–75.5 % under the stated model (6 cells, ≥ 2 seeds each) and "
        "95.5–95.5 % under the authors' code (6 cells, ≥ 2 seeds each), against the paper's 70.9–80.0 %"
    ) in findings


def test_the_reference_code_singles_stopping_points_are_read_from_their_steps(results):
    payload = _table1_payload()
    runs = []
    for config in chen.expand("table3", [1], 2, variant="reference-code"):
        stops = config["model"] == "single (linear)"
        steps = 501 + config["seed"] if stops else 801
        outcome = {"test_accuracy": 60.0 + 10 * config["seed"], "dispatch_entropy": None}
        runs.append(config | outcome | {"steps": steps, "stopped_early": stops})
    payload["runs"] = runs
    payload["config"] |= {"target": "table3", "variant": "reference-code"}
    _write(results, "table3_reference-code", payload)
    findings = render_all(results, SWEEPS)["findings.md"]
    assert "The authors' rule is first tested at step 500" in findings
    assert "| single (linear), 512 filters | 2 | 2 | 501–502–502 | 60.0–70.0 |" in findings
    assert "| single (nonlinear), 128 filters | 2 | 0 | 801–801–801 | 60.0–70.0 |" in findings


def test_a_missing_figure_is_one_line_naming_the_command_that_draws_it(results, tmp_path, capsys):
    """The renderer draws nothing: it asks that each figure a page links exists, never for its bytes."""
    out = tmp_path / "docs"
    figure = results / "proof_chain" / "proof_chain.png"
    command = f"python -m lab sweep figure {figure.with_suffix('.json')}"
    line = f"{figure}: missing figure (run `{command}` with matplotlib installed)"
    assert _docs(results, out) == 0
    figure.write_bytes(b"drawn by another matplotlib")
    assert _docs(results, out, "--check") == 0
    figure.unlink()
    capsys.readouterr()
    assert _docs(results, out, "--check") == 1
    assert capsys.readouterr().out.splitlines() == [line]
    assert _docs(results, out) == 1
    assert capsys.readouterr().out.splitlines()[1:] == [line]
    assert not figure.exists()
    (results / "proof_chain" / "proof_chain.json").unlink()  # without the d study no page links its figure
    assert _docs(results, out) == 0
    assert _docs(results, out, "--check") == 0


def test_a_missing_replication_figure_names_its_redraw_command(results, tmp_path, capsys):
    (results / "replicate" / "table1.png").unlink()
    assert _docs(results, tmp_path / "docs") == 1
    command = f"python -m lab replicate table1 --figure-only --out {results / 'replicate'}"
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"{results / 'replicate' / 'table1.png'}: missing figure (run `{command}` with matplotlib installed)"
    ]


def test_every_linked_figure_exists_and_its_json_is_committed():
    """Each figure a page links is in results/, beside the committed JSON its redraw command reads."""
    figures = linked_figures(render_all(RESULTS, SWEEPS))
    linked = {f.relative_to(RESULTS).as_posix() for f in figures}
    assert {"replicate/makkuva_fig1.png", *(f"replicate/table{n}.png" for n in (1, 3, 7, 10, 11))} <= linked
    assert all(f.is_file() for f in figures), [f for f in figures if not f.is_file()]
    sources = sorted({figure_source(f).relative_to(REPO).as_posix() for f in figures})
    if (REPO / ".git").exists():
        tracked = subprocess.run(
            ["git", "ls-files", "--", *sources], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.split()
        assert sorted(tracked) == sorted(sources)
    assert all((REPO / s).is_file() for s in sources)


def test_the_findings_link_the_committed_figures():
    findings = render_all(RESULTS, SWEEPS)["findings.md"]
    links = re.findall(r"\]\(([\w./-]+\.png)\)", findings)
    assert links and all((DOCS / link).resolve().is_file() for link in links)


def test_rounding_sensitivity_pairs_each_run_across_precision(results):
    payload = _table1_payload()
    runs = []
    for config in chen.expand("table3", [1], 3):
        runs.append(config | {"test_accuracy": 70.0 + config["seed"], "dispatch_entropy": None, "steps": 800})
    payload["runs"], payload["config"]["target"] = runs, "table3"
    _write(results, "table3", payload)
    assert 'name="rounding"' not in render_all(results, SWEEPS)["findings.md"]  # no float32 file: no pairs

    def moved(run):  # one 512-filter linear single run lands 30 points away in float32, the rest 0.1
        wide = run["model"] == "single (linear)" and run.get("filters") == 512 and run["seed"] == 1
        return run | {"test_accuracy": run["test_accuracy"] + (30.0 if wide else 0.1)}

    narrow = payload | {"runs": [moved(r) for r in runs], "config": payload["config"] | {"dtype": "float32"}}
    _write(results, "table3_float32", narrow)
    findings = render_all(results, SWEEPS)["findings.md"]
    assert "`table3_float32.json` repeats every run of `table3.json`" in findings
    assert "| single (linear), 512 filters | 3 | 0.10 | 30.00 | 1 | 1.00 |" in findings
    assert "| single (linear), 128 filters | 3 | 0.10 | 0.10 | 0 | 1.00 |" in findings
    assert (
        "The widest pair is single (linear), 512 filters, setting 1, seed 1: 71.00 % in float64" in findings
    )


def test_a_replication_gives_its_runs_training_time_beside_the_last_invocations_wall(results):
    payload = _table1_payload()
    payload["runs"] = [run | {"seconds": 45.0} for run in payload["runs"]]  # 8 runs: 6.0 min
    payload["config"]["wall_seconds"] = 0.05
    _write(results, "table1", payload)
    page = render_all(results, SWEEPS)["replications.md"]
    assert "Training time of its runs: 6.0 min (the run records' `seconds`, summed)." in page
    assert "The invocation that last wrote the file took 0.05 s of wall time" in page
