"""docs/performance.md: the kernels, how they stay deterministic, and the committed benchmark numbers."""

from __future__ import annotations

from lab.docs.bench_targets import BENCH_TARGETS, target_rows
from lab.docs.markdown import code, fixed, num, page, pct, table
from lab.docs.results import BenchSummary, Results
from lab.docs.timing_section import timing_section

SUMMARY_COMMANDS = (
    "nox -s bench                                             # pytest-benchmark, saved under .benchmarks/\n"
    "python -m lab bench-report --summary results/bench/summary.json"
)


def kernel_names() -> list[str]:
    """The kernels `lab.kernels.backend` serves (the same names on the Numba and the NumPy side)."""
    from lab import kernels

    found = vars(kernels.backend("numba"))
    return sorted(k for k, v in found.items() if k != "name" and callable(v))


KERNELS_TEXT = """\
The hot loops are Numba kernels under `lab/kernels/`. Every kernel has a plain NumPy twin with the same
signature, written from the dense formulas of the model code; the tests compare each kernel with its
twin, and the benchmarks time them side by side in one group. `lab.kernels.backend("numba")` and
`backend("numpy")` return the two sets under the same names, so a caller chooses once. The kernels it
serves today: {names}.

The router's two products, h = sΘ and ∇Θ = sᵀ∂L/∂h with s the patch sums (`lab.kernels.router`),
are kernels too: with M = 8 experts a row of Θ is one 64-byte float64 vector. Their benchmark groups
(`router_logits`, `router_gradient`) time them beside one-thread BLAS, their NumPy twins. Both the dense
and the structured step use them.

The moment-loss gradient of Makkuva et al. (L4, eq. 6) has its own kernel beside a NumPy twin; the
gradient of L_log has none, because a single-pass Numba version was slower than NumPy's vectorised
code."""

DETERMINISM_TEXT = """\
## Determinism

A seeded result never depends on the number of threads that computed it, nor on which process
compiled the kernels:

- Parallel reductions split the samples into a fixed number of chunks (`CHUNKS`), independent of the
  thread count, reduce each chunk into its own buffer and add the buffers in order.
- Routing noise comes from a counter-based generator (SplitMix64 of the seed and the draw index), so
  draw (i, m) has the same value whichever thread makes it. The NumPy twin reproduces every
  uniform draw bit for bit; Gaussian and Gumbel draws pass through log and cos, where NumPy's SIMD
  loops and the C library Numba calls can differ by an ulp (seen on AVX-512 machines).
- Where the rounding of a BLAS product would depend on a row's position in a block (the patch-wise
  functions of Theorem 4.1, whose orbit identity is checked to the last bits), the lab contracts
  with `einsum` instead of BLAS.
- Kernels are compiled with `cache=True`, and the commands run them as loaded from that cache. A
  parallel kernel compiled in the running process and the same kernel loaded from the cache are not
  the same machine code (each is deterministic; the cached object is most likely optimised again
  once the loop's parallel body is linked into it). For CELU, GELU and tanh in float64 the gradients
  differ in their last bits, and a training run's accuracy can differ with them. So `replicate`,
  `sweep run` and `verify` first have a child process run every kernel they use
  (`lab.cli.kernel_cache`): any compiling happens there, and the command and its workers load.
  `verify` has the child train the model configurations only when a chosen check is registered with
  `training_kernels=True`; otherwise the child runs only the stand-alone kernels. A
  library call in a fresh environment still compiles in its own process; run one of these commands
  first to get the commands' numbers to the last bit. Benchmarks warm every kernel up before
  timing it.

Threads: the kernels use every core Numba is given. A sweep pins each worker to one thread (BLAS
through `threadpoolctl`, Numba through `numba.set_num_threads(1)`), so workers do not
oversubscribe the machine. When another process holds a core, the parallel kernels slow down
sharply; set `NUMBA_NUM_THREADS=1` then, or run grids through `python -m lab sweep`."""

BENCH_TEXT = """\
## Benchmarks

`benchmarks/` holds pytest-benchmark tests at the paper's problem size (App. A.2's n, P, d, M and J;
see `benchmarks/test_bench_kernels.py`). Each times the minimum over rounds after a warm-up call, so
JIT compilation is never timed, and asserts its result, so a fast wrong answer fails. Each kernel
sits in one group with its NumPy twin, and the same run measures the one-thread DGEMM rate of the
machine: a kernel's GFLOP/s divided by that rate ("fraction of DGEMM") is comparable across
machines and across noisy runs in a way milliseconds are not. `nox -s tests` runs the benchmarks
once as plain tests (`--benchmark-disable`), so they never rot; `nox -s bench` times them, saves
the run and fails when a minimum regresses beyond the threshold in `noxfile.py` against the
previous saved run.

The numbers below come from `results/bench/*.json`, small summaries of one saved run each, written by

```bash
{commands}
```

and committed. `python -m lab bench-report` alone prints the Markdown comparison of the last two
saved runs."""


TARGETS_TEXT = """\
### Targets

The structured path (Def. 3.1) has performance targets, judged below for each summary and never
asserted: each benchmark in `benchmarks/test_bench_structured.py` asserts only that its answer is
right. A ratio is taken within one run, the candidate and its reference called alternately, so the
load of a shared machine cancels out of it. The measures come from the benchmarks' `extra_info`,
which `python -m lab bench-report --summary` keeps; a summary written before it kept them shows
those targets as not measured. Beside a target stand the measures that bound it, taken in the same
alternating loop: the ratio of the two Algorithm 1 steps' dense products (the experts' one noise
patch and the router's h = sΘ and sᵀ∂h, against four patches and the same router; at equal FLOP rates
the steps' times stand in this ratio, so a threshold below it asks the dense path to run slower per
FLOP), Algorithm 1's structured step with its expert pass's time taken off (what is left is
the router's product and gradient, the routing and gate values, and the two updates, which no faster
expert kernel shortens: their share of the dense step is a floor under the ratio), a single CNN's pass
against one-thread DGEMM on the same noise products (how near OpenBLAS its kernel runs), and the
noise-patch kernel on one Numba thread, as each worker of `replicate --jobs 2` runs it (the target's
own measure divides the two-thread rate by two cores, so it also counts what the second thread loses)."""


def targets_definition() -> str:
    """The targets: what each asks of which benchmark, with its threshold (`BENCH_TARGETS`)."""
    rows = [(t.name, code(t.pattern), code(t.measure), t.bound, t.description) for t in BENCH_TARGETS]
    return TARGETS_TEXT + "\n\n" + table(("target", "benchmark", "measure", "threshold", "what"), rows)


def targets_table(benchmarks: list[dict]) -> str:
    """Each target against one summary's benchmarks: threshold, measured value, met or not."""
    rows = []
    for target, bench in target_rows(benchmarks):
        value = None if bench is None else target.measured(bench)
        context = "-" if bench is None else target.context_shown(bench)
        rows.append(
            (
                target.name,
                bench["name"] if bench else "-",
                target.bound,
                target.shown(value),
                target.status(value),
                context,
            )
        )
    return table(("target", "benchmark", "threshold", "measured", "status", "beside it"), rows)


def bench_section(summary: BenchSummary) -> str:
    """One summary: where and when it was measured, its benchmarks, and the targets judged on it."""
    data = summary.payload
    machine = data["machine"]
    facts = [
        f"CPU {machine.get('cpu') or 'unknown'}",
        *([f"{machine['cores']} cores"] if machine.get("cores") else []),
        *([machine["arch"]] if machine.get("arch") else []),
        *([machine["system"]] if machine.get("system") else []),
        *([f"Python {machine['python']}"] if machine.get("python") else []),
    ]
    commit = data.get("commit") or {}
    when = data.get("datetime")
    provenance = (
        f"From `{data.get('source', summary.name)}`"
        + (f", run at {when}" if when else "")
        + (f", commit `{str(commit['id'])[:12]}`" if commit.get("id") else "")
        + (" (uncommitted changes)" if commit.get("dirty") else "")
        + ". Machine: "
        + ", ".join(facts)
        + "."
    )
    if data.get("dgemm_gflops") is not None:
        provenance += f" One-thread DGEMM reference rate in this run: {num(data['dgemm_gflops'])} GFLOP/s."
    rows = [
        (
            b["name"],
            code(b["kernel"]),
            fixed(b.get("min_ms"), 3),
            fixed(b.get("median_ms"), 3),
            num(b.get("gflops")),
            pct(b.get("fraction_of_dgemm"), 0),
            f"{num(b['speedup_vs_numpy_twin'])}×" if b.get("speedup_vs_numpy_twin") else "-",
        )
        for b in data["benchmarks"]
    ]
    head = ("benchmark", "kernel", "min (ms)", "median (ms)", "GFLOP/s", "fraction of DGEMM", "vs NumPy twin")
    return (
        f"### `{summary.name}`\n\n{provenance}\n\n{table(head, rows)}\n\n"
        f"Targets in this run:\n\n{targets_table(data['benchmarks'])}"
    )


def performance_page(results: Results) -> str:
    """docs/performance.md."""
    parts = [
        KERNELS_TEXT.format(names=", ".join(code(n) for n in kernel_names())),
        DETERMINISM_TEXT,
        BENCH_TEXT.format(commands=SUMMARY_COMMANDS),
        targets_definition(),
    ]
    if results.bench:
        parts += [bench_section(s) for s in results.bench]
    else:
        parts.append(
            "**No benchmark summary committed yet** (`results/bench/` holds no summary). Run the two "
            "commands above on a quiet machine and commit `results/bench/summary.json`."
        )
    return page("Performance", *parts, timing_section(results))
