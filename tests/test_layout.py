"""The architecture's rules: `lab` never imports `checks`; registries are filled only from entry points."""

import ast
import importlib
import pkgutil
import re
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
    assert set(registry.DECLARATION_KINDS) == {k for k, v in kinds.items() if v}  # claims and papers too


def test_no_module_imports_another_for_its_side_effects():
    """A bare `import x  # noqa: F401` is how side-effect registration used to look."""
    for path in [*(ROOT / "lab").rglob("*.py"), *(ROOT / "checks").rglob("*.py")]:
        assert "noqa: F401" not in path.read_text(), path


# Test files named after a behaviour that spans modules rather than after one module; the committed
# records of past mutation runs (results/mutation/) name them, so they keep their names.
MIRROR_EXCEPTIONS = {
    "tests/chen2022/test_arithmetic.py": "structured against dense and float32 against float64 training",
    "tests/chen2022/test_arithmetic_floor.py": "the timing record's FLOP floor against the shapes built",
    "tests/core/test_findings_files.py": "every findings TOML of the lab against the committed records",
    "tests/core/test_invalid_inputs.py": "bad input to every public science function, on both backends",
    "tests/kernels/test_backend.py": "lab.kernels' __init__: the two backends' namespaces",
    "tests/kernels/test_kernels.py": "the routed kernels against their NumPy twins",
    "tests/makkuva2020/test_makkuva_fit.py": "lab.makkuva2020.fit",
    "tests/makkuva2020/test_makkuva_losses.py": "lab.makkuva2020.losses",
    "tests/makkuva2020/test_makkuva_model.py": "lab.makkuva2020.gated_regression",
    "tests/sweeps/test_store_state.py": "the run store (lab.core.store) as sweep status reads it",
}
MIRRORED = ("chen2022", "core", "kernels", "makkuva2020", "shazeer2017", "sweeps")


def _module_of(test: Path) -> Path | None:
    """lab/<package>/<module>.py for tests/<package>/test_<module>[_<aspect>].py, or None."""
    package, words = test.parent.relative_to(ROOT / "tests"), test.stem.removeprefix("test_").split("_")
    found = [ROOT / "lab" / package / f"{'_'.join(words[:n])}.py" for n in range(len(words), 0, -1)]
    return next((path for path in found if path.exists()), None)


def test_tests_mirror_the_source():
    """lab/<package>/<module>.py is tested in tests/<package>/test_<module>[_<aspect>].py (CONTRIBUTING)."""
    tests = [t for p in MIRRORED for t in sorted((ROOT / "tests" / p).rglob("test_*.py"))]
    unmatched = {t.relative_to(ROOT).as_posix() for t in tests if _module_of(t) is None}
    assert unmatched == set(MIRROR_EXCEPTIONS)


FACED = ("core", "kernels.bench", "chen2022", "makkuva2020", "shazeer2017", "sweeps", "docs", "cli")


@pytest.mark.parametrize("package", FACED)
def test_a_packages_public_face_lists_its_public_modules(package):
    """Each package's `__all__` is its public modules (no leading underscore), kept in step with the tree."""
    module = importlib.import_module(f"lab.{package}")
    public = sorted(m.name for m in pkgutil.iter_modules(module.__path__) if not m.name.startswith("_"))
    assert module.__all__ == public


def test_every_lab_name_the_docs_use_is_on_its_packages_face():
    """A dotted `lab.<package>.<name>` in docs/ names a module (or, for lab.kernels, a name) in `__all__`."""
    text = "\n".join(p.read_text() for p in sorted((ROOT / "docs").rglob("*.md")))
    named = set(re.findall(r"`(lab\.[a-z0-9_]+\.[a-z0-9_]+)", text))
    faces = {p: importlib.import_module(f"lab.{p}").__all__ for p in (*FACED, "kernels")}
    faces["kernels"] = [*faces["kernels"], "bench", *importlib.import_module("lab.kernels").KERNEL_MODULES]
    outside = sorted(n for n in named if n.split(".")[2] not in faces.get(n.split(".")[1], [n.split(".")[2]]))
    assert named and outside == []
