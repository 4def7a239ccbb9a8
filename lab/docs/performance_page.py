"""docs/performance.md from `templates/performance.md.j2`: the kernels, how they stay deterministic, the
committed benchmark summaries with the targets their writer judged, the kernels' compile profile and the
replication timings."""

from __future__ import annotations

from lab.docs.results import Results
from lab.docs.templating import render
from lab.docs.timing_section import timing_values
from lab.kernels.bench import history as bench_history
from lab.kernels.bench.compile_profile import COMMANDS
from lab.kernels.bench.targets import BENCH_TARGETS


def kernel_names() -> list[str]:
    """The kernels `lab.kernels.backend` serves (the same names on the Numba and the NumPy side)."""
    from lab import kernels

    found = vars(kernels.backend("numba"))
    return sorted(k for k, v in found.items() if k != "name" and callable(v))


def performance_page(results: Results) -> str:
    """docs/performance.md."""
    return render(
        "performance.md.j2",
        "performance.md",
        results,
        kernels=kernel_names(),
        targets=BENCH_TARGETS,
        compile_profile=results.compile_profile,
        compile_profile_before=results.compile_profile_before,
        history=results.bench_history,
        history_regressions=bench_history.regressions(results.bench_history) if results.bench_history else [],
        history_noise=bench_history.largest_move(results.bench_history) if results.bench_history else None,
        history_threshold=bench_history.THRESHOLD,
        compile_commands=COMMANDS,
        **timing_values(results),
    )
