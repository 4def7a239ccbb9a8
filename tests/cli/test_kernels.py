"""`python -m lab kernels`: the figure redrawn from a written compile profile alone, a damaged one refused;
`--compile` hands every command's run configurations to the compile children."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lab.cli.main import main
from lab.kernels.bench import compile_profile as cp

ROWS = [
    {"kernel": "k.outer", "signature": "array(float64, 1d, C)", "seconds": 3.0, "self_seconds": 2.0,
     "share": 0.8, "reached": "entry", "needs": ["verify", "replicate"], "callees": ["k.inner(float64)"]},
    {"kernel": "k.inner", "signature": "float64", "seconds": 0.5, "self_seconds": 0.5, "share": 0.2,
     "reached": "callee", "needs": ["verify", "replicate", "tests"], "callees": []},
]  # fmt: skip
PROFILE = {
    "format": cp.PROFILE_FORMAT,
    "date": "2025-01-01",
    "machine": {"cpu": "Fake", "cores": 2, "python": "3.11", "numba": "0", "llvmlite": "0", "llvm": "1"},
    "method": {"children": 2, "import_seconds": 1.0, "warmup_seconds": 0.5, "complete": True},
    "rows": ROWS,
    "totals": cp.totals(ROWS),
    "missing": [],
}


def test_the_figure_is_redrawn_beside_the_profile_from_it_alone(tmp_path: Path):
    pytest.importorskip("matplotlib")
    path = tmp_path / cp.PROFILE_NAME
    path.write_text(json.dumps(PROFILE))
    assert main(["kernels", "--figure", str(path)]) == 0
    assert path.with_suffix(".png").read_bytes().startswith(b"\x89PNG")


def test_a_damaged_profile_is_one_line_and_exit_status_2(tmp_path: Path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / cp.PROFILE_NAME
    path.write_text(json.dumps(PROFILE | {"totals": {"all": "lots"}}))
    assert main(["kernels", "--figure", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.endswith(
        f"{path}: totals: field 'all' must be a finite number, got 'lots'"
    )
    assert not path.with_suffix(".png").exists()


def test_compile_hands_every_commands_configurations_to_the_compile_children(monkeypatch, capsys):
    """`--compile` fills the cache through `compile_in_child` with replicate's, verify's and the
    replicate-task sweeps' run configurations and every kernel in both dtypes, and prints one line."""
    from lab.cli import kernels

    given: list[tuple[list[dict], bool]] = []
    monkeypatch.setattr(
        "lab.cli.kernel_cache.compile_in_child", lambda configs, every=False: given.append((configs, every))
    )
    assert main(["kernels", "--compile"]) == 0
    expected = [c for _, found in kernels.command_configs(Path("sweeps")) for c in found]
    assert given == [(expected, True)]
    commands = {command for command, _ in kernels.command_configs(Path("sweeps"))}
    assert commands == {"replicate", "verify", "sweep"}
    out = capsys.readouterr().out.strip()
    distinct = {json.dumps(c, sort_keys=True) for c in expected}  # each configuration counted once
    assert len(distinct) < len(expected)  # verify's configurations are replicate's too
    assert "\n" not in out and f"{len(distinct)} run configurations" in out
