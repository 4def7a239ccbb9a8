"""`python -m lab kernels --compile-profile`: what each kernel specialization the lab uses costs to compile;
`--compile`: fill Numba's cache with them and with every kernel in both dtypes, as direct calls reach
them (the test session does, before its workers start).

The measuring is `lab.kernels.bench.compile_profile`'s; this adapter names what reaches the kernels, as the
commands reach them (`lab.cli.kernel_cache`): the stand-alone kernels (`_call_kernels`; every command
that calls `compile_in_child` runs them), the distinct training configurations of `every_training_config`
(replicate) and of `check_training_config` (verify), and those of the replicate-task sweeps under
`sweeps/` (sweep); the tests need the kernels that `tests/` and `benchmarks/` name
(`compile_profile.named_kernels`). It writes the summary JSON and draws its figure beside it (`--figure
JSON` redraws the figure from the JSON alone).
"""

from __future__ import annotations

import argparse
import datetime
import json
import pkgutil
from pathlib import Path
from typing import Any

from lab.core import plots
from lab.core.errors import InputError
from lab.core.io import check_writable, write_json_atomic
from lab.core.registry import register_command
from lab.core.schema import load

DEFAULT_OUT = "results/bench/compile_profile.json"  # `compile_profile.PROFILE_NAME`
NOT_DERIVED = [  # what the workloads below do not reach, said in the file
    "tests: kernel level only: every enumerated specialization of a kernel that tests/ or benchmarks/ "
    "name (directly or through an entry point) counts; specializations only tests compile (other dtypes "
    "or layouts) and kernels tests reach through the model code are not derived",
    "sweep: only the replicate-task sweeps under sweeps/; the other sweep tasks compile in their workers",
]


def kernel_modules() -> list[str]:
    """The Numba modules of `lab.kernels` (not the NumPy twins, not the `bench` package)."""
    from lab import kernels

    names = sorted(m.name for m in pkgutil.iter_modules(kernels.__path__) if not m.ispkg)
    return [f"lab.kernels.{n}" for n in names if not n.endswith("_numpy")]


def command_configs(sweeps: Path) -> list[tuple[str, list[dict]]]:
    """Each command with the training configurations it runs: replicate's, verify's, and each
    replicate-task sweep's under `sweeps`."""
    from lab.cli.kernel_cache import check_training_config, every_training_config
    from lab.core.tasks import task_type
    from lab.sweeps.sweep import expand, load_spec

    found = [("replicate", every_training_config()), ("verify", check_training_config())]
    for path in sorted(sweeps.glob("*.toml")):
        spec = load_spec(path)
        if task_type(spec.task).training_kernels:
            found.append(("sweep", [task.params for task in expand(spec)]))
    return found


def workloads(sweeps: Path) -> list:
    """The stand-alone kernels, then each distinct training configuration with the commands that run it."""
    from lab.cli.kernel_cache import _short, _where
    from lab.kernels.bench.compile_profile import Workload

    needs: dict[str, set[str]] = {}
    runner: dict[str, str] = {}
    for command, configs in command_configs(sweeps):
        for training, config in _short(configs):
            text = json.dumps(config, sort_keys=True)
            needs.setdefault(text, set()).add(command)
            runner[text] = _where(training.run)
    standalone = Workload(
        "stand-alone kernels", "lab.cli.kernel_cache:_call_kernels", (), ("verify", "replicate", "sweep")
    )
    return [standalone] + [
        Workload(text, runner[text], (json.loads(text),), tuple(sorted(commands)))
        for text, commands in needs.items()
    ]


def tests_need(modules: list[str], roots: list[Path]) -> dict[str, set[str]]:
    """The kernels tests and benchmarks name: {kernel: {"tests"}}."""
    from lab.kernels.bench.compile_profile import named_kernels

    sources = [str(p) for root in roots for p in sorted(root.rglob("*.py"))]
    return {k: {"tests"} for found in named_kernels(sources, modules).values() for k in found}


def draw_figure(data: dict[str, Any], path: Path) -> Path:
    """Horizontal bars of `self_seconds`, largest first, coloured by the commands that need each row."""
    plt = plots.pyplot()
    rows = data["rows"]
    groups = sorted({", ".join(r["needs"]) or "none" for r in rows}, key=lambda g: (-len(g), g))
    colours = {g: plt.get_cmap("tab10")(i % 10) for i, g in enumerate(groups)}
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.19 * len(rows)))
    labels = [  # numbered as the page's table
        f"{i}. {r['kernel']}({r['signature'][:56]}{'…' if len(r['signature']) > 56 else ''})"
        for i, r in enumerate(rows, 1)
    ]
    ax.barh(range(len(rows)), [r["self_seconds"] for r in rows],
            color=[colours[", ".join(r["needs"]) or "none"] for r in rows])  # fmt: skip
    ax.set_yticks(range(len(rows)), labels, fontsize=5.5)
    ax.set_ylim(len(rows) - 0.4, -0.6)  # largest on top
    ax.set_xlabel("compile CPU seconds (self, empty cache)")
    machine, total = data["machine"], data["totals"]["all"]
    ax.set_title(f"{len(rows)} specializations, {total:.0f} CPU s in all; {machine['cpu']}, "
                 f"Numba {machine['numba']}, LLVM {machine['llvm']}", fontsize=8)  # fmt: skip
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[g]) for g in groups]
    ax.legend(handles, groups, title="needed by", fontsize=7, title_fontsize=7, loc="lower right")
    fig.tight_layout()
    plots.save_figure(fig, path)
    return path


def _profile(args: argparse.Namespace) -> int:
    from lab.kernels.bench import compile_profile as cp

    check_writable(args.out, "--out")
    modules = kernel_modules()
    by_kernel = tests_need(modules, [Path("tests"), Path("benchmarks")])
    raw = cp.measure(modules, workloads(Path(args.sweeps)), by_kernel, args.budget)
    reached = {spec[0] for spec in raw["needs"]}
    unreached = sorted(k for k in by_kernel if k not in reached)
    missing = NOT_DERIVED + [f"tests name {k}, which no command's workload reaches" for k in unreached]
    date = datetime.date.today().isoformat()
    data = cp.summary(raw, date, missing)
    write_json_atomic(args.out, data)
    print(f"wrote {args.out}: {len(data['rows'])} specializations, {data['totals']['all']:.1f} CPU s")
    if plots.available():
        print(f"wrote {draw_figure(data, Path(args.out).with_suffix('.png'))}")
    else:
        print(plots.PLOTS_HINT)
    return 0


def _compile(args: argparse.Namespace) -> int:
    from lab.cli.kernel_cache import compile_in_child

    configs = [config for _, found in command_configs(Path(args.sweeps)) for config in found]
    compile_in_child(configs, every=True)
    distinct = len({json.dumps(config, sort_keys=True) for config in configs})  # verify's are replicate's too
    print(f"Numba's cache holds the kernels of {distinct} run configurations and every kernel in both dtypes")
    return 0


def _figure(args: argparse.Namespace) -> int:
    from lab.kernels.bench.compile_profile import COMPILE_PROFILE, PROFILE_FORMAT

    if not plots.available():
        raise InputError(plots.PLOTS_HINT)
    path = Path(args.figure)
    data = load(path, COMPILE_PROFILE, "a compile profile", format=PROFILE_FORMAT)  # else one line naming it
    print(f"wrote {draw_figure(data, path.with_suffix('.png'))}")
    return 0


@register_command(
    "kernels",
    "Profile what each kernel specialization costs to compile from an empty cache, or fill the cache",
)
def configure(parser: argparse.ArgumentParser):
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--compile-profile",
        action="store_true",
        help="compile every kernel specialization the lab uses, each alone in a fresh child on an empty "
        "Numba cache; write the summary JSON and its figure beside it",
    )
    what.add_argument(
        "--compile",
        action="store_true",
        help="compile into Numba's cache every kernel the commands use, and every kernel in float64 and "
        "float32 (two child processes), so that later processes, such as the test workers, load them",
    )
    what.add_argument("--figure", metavar="JSON", help="only redraw the figure beside a written profile")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"the summary JSON (default {DEFAULT_OUT})")
    parser.add_argument("--sweeps", default="sweeps", help="the folder of sweep specs (default sweeps)")
    parser.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="stop starting children once they have spent this much CPU; the rest is listed as missing",
    )
    return lambda args: (
        _profile(args) if args.compile_profile else _compile(args) if args.compile else _figure(args)
    )
