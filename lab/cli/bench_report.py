"""`python -m lab bench-report`: Markdown regression report from pytest-benchmark's saved runs."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lab.core.io import write_text_atomic
from lab.core.registry import register_command


def saved_runs(folder: Path) -> list[Path]:
    """Saved benchmark runs (pytest-benchmark autosave files), oldest first."""
    return sorted(folder.glob("*/*.json"), key=lambda p: p.name)


def _minimum_ms(bench: dict) -> float:
    return 1e3 * bench["stats"]["min"]


def report(latest: dict, previous: dict | None) -> str:
    """Table: kernel, this run, previous run, change, speed-up over the NumPy twin, fraction of DGEMM."""
    before = {b["fullname"]: b for b in (previous or {}).get("benchmarks", [])}
    twins = {b["group"]: _minimum_ms(b) for b in latest["benchmarks"] if "[numpy]" in b["name"]}
    rows = [
        "| benchmark | kernel | this run (ms, min) | previous (ms) | change | speed-up vs NumPy twin "
        "| fraction of DGEMM |",
        "|---|---|---|---|---|---|---|",
    ]
    for bench in sorted(latest["benchmarks"], key=lambda b: (b["group"] or "", b["name"])):
        now = _minimum_ms(bench)
        old = before.get(bench["fullname"])
        old_ms = _minimum_ms(old) if old else None
        change = f"{100 * (now / old_ms - 1):+.1f} %" if old_ms else "-"
        twin = twins.get(bench["group"])
        speedup = f"{twin / now:.1f}×" if twin and "[numpy]" not in bench["name"] else "-"
        fraction = bench.get("extra_info", {}).get("fraction_of_dgemm")
        rows.append(
            f"| {bench['name']} | {bench.get('extra_info', {}).get('kernel', bench['group'])} | {now:.3f} | "
            f"{f'{old_ms:.3f}' if old_ms else '-'} | {change} | {speedup} | "
            f"{f'{100 * fraction:.0f} %' if fraction is not None else '-'} |"
        )
    machine = latest.get("machine_info", {})
    cpu = machine.get("cpu", {}).get("brand_raw", "unknown CPU")
    head = f"Benchmarks on {cpu}, {latest.get('datetime', '')}"
    return head + "\n\n" + "\n".join(rows) + "\n"


@register_command("bench-report", "Markdown report of the last saved benchmark run against the one before")
def configure(parser: argparse.ArgumentParser):
    parser.add_argument("--storage", default=".benchmarks", help="pytest-benchmark storage folder")
    parser.add_argument("--out", metavar="PATH", help="also write the report here")

    def run(args: argparse.Namespace) -> int:
        runs = saved_runs(Path(args.storage))
        if not runs:
            raise ValueError(f"--storage: no saved benchmark runs under {args.storage!r}; run `nox -s bench`")
        latest = json.loads(runs[-1].read_text())
        previous = json.loads(runs[-2].read_text()) if len(runs) > 1 else None
        text = report(latest, previous)
        print(text)
        if args.out:
            write_text_atomic(args.out, text)
        return 0

    return run
