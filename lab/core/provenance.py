"""Where a result came from: the interpreter's and the numerical stack's versions, stored with reports."""

from __future__ import annotations

import ast
import functools
import hashlib
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def versions() -> dict[str, str]:
    """Versions of the interpreter and the numerical stack, for every JSON report."""
    found = {"python": platform.python_version()}
    for dist in ("moe-lab", "numpy", "scipy", "numba", "hypothesis"):
        try:
            found[dist] = version(dist)
        except PackageNotFoundError:
            found[dist] = "not installed"
    return found


SCIENCE_PACKAGES = ("lab.kernels", "lab.chen2022", "lab.makkuva2020", "lab.shazeer2017")
NUMERIC_LIBRARIES = ("numpy", "scipy", "numba")


_LAB_ROOT = Path(__file__).resolve().parents[1]


def _module_file(name: str) -> Path | None:
    """The source file of the `lab` module `name`, or None when `name` is not a module (an attribute)."""
    base = _LAB_ROOT.parent.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _lab_imports(path: Path) -> set[str]:
    """The `lab` modules (or module attributes) one source file imports; the lab uses absolute imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("lab.")}


def science_modules(root: str) -> list[str]:
    """`root` and every science module it imports, directly or not (the packages in SCIENCE_PACKAGES)."""
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        path = _module_file(name)
        if name in seen or path is None:
            continue
        seen.add(name)
        todo += [m for m in _lab_imports(path) if m.startswith(SCIENCE_PACKAGES)]
        if name == "lab.kernels":  # backend() loads its kernel modules by name, not by an import
            todo += [
                f"lab.kernels.{f.stem}" for f in sorted(path.parent.glob("*.py")) if f.stem != "__init__"
            ]
    return sorted(seen)


@functools.cache
def code_fingerprint(root: str) -> str:
    """SHA-256 over the source of `root`'s science modules and the numeric libraries' versions.

    A result keyed by it is reused only by the same code: a change to any science module that
    `root` depends on, or a new NumPy/SciPy/Numba, gives another fingerprint.
    """
    digest = hashlib.sha256()
    for name in science_modules(root):
        digest.update(name.encode() + b"\0" + _module_file(name).read_bytes() + b"\0")
    for dist in NUMERIC_LIBRARIES:
        digest.update(f"{dist}=={version(dist)}\0".encode())
    return digest.hexdigest()[:16]
