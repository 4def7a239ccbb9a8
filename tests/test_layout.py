"""The architecture's rules: `lab` never imports `checks`; registries are filled only from entry points."""

import ast
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from lab.core import registry

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 550  # "about 500 lines" per module


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("path", sorted((ROOT / "lab").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_lab_never_imports_checks(path):
    assert not {m for m in _imports(path) if m == "checks" or m.startswith("checks.")}


def test_importing_all_of_lab_loads_no_checks():
    code = (
        "import importlib, pkgutil, sys, lab\n"
        "for m in pkgutil.walk_packages(lab.__path__, 'lab.'):\n"
        "    if m.name != 'lab.__main__': importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n == 'checks' or n.startswith('checks.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    "path",
    sorted([*(ROOT / "lab").rglob("*.py"), *(ROOT / "checks").rglob("*.py")]),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_modules_stay_small(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES


def test_every_registry_is_filled_from_the_plugin_entry_points():
    advertised = {entry.value for entry in entry_points(group=registry.PLUGIN_GROUP)}
    assert {"lab.chen2022", "lab.makkuva2020", "lab.sweeps", "lab.cli", "checks"} <= advertised
    kinds = registry.load_plugins()
    assert set(registry.KINDS) == {k for k, v in kinds.items() if v}  # claims and papers too


def test_no_module_imports_another_for_its_side_effects():
    """A bare `import x  # noqa: F401` is how side-effect registration used to look."""
    for path in [*(ROOT / "lab").rglob("*.py"), *(ROOT / "checks").rglob("*.py")]:
        assert "noqa: F401" not in path.read_text(), path
