"""The layers in pyproject.toml's import-linter contracts hold, and a backward import breaks them."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lint(tree: Path) -> subprocess.CompletedProcess:
    command = [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"]
    return subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)


def test_a_backward_import_even_a_lazy_one_breaks_the_layers(tmp_path):
    for package in ("lab", "checks"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    kept = _lint(tmp_path)
    assert kept.returncode == 0, kept.stdout
    backward = tmp_path / "lab" / "core" / "backward.py"
    lazy = "def f():\n    from lab.chen2022 import model\n\n    return model\n"
    backward.write_text(f'"""A core module that reaches up into a paper."""\n\n\n{lazy}')
    broken = _lint(tmp_path)
    assert broken.returncode == 1
    assert "lab.core.backward -> lab.chen2022.model" in broken.stdout
