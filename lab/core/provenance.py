"""Where a result came from: the numerical stack's versions, and a fingerprint of the code's meaning.

`code_fingerprint(root)` hashes the syntax trees of `root` and of every science module it imports,
with docstrings, comments and formatting removed: a docstring edit or a reformatting keeps every
result current, while a changed operator, constant or call in a module the result depends on makes
it stale. Package versions are not part of it: each result records them (`versions()`), and another
NumPy, SciPy or Numba changes a training run's last bits of rounding (its BLAS and vectorised
reductions sum in another order), which can move an accuracy by a test sample or two but not a
verdict the lab states with its margins; so a machine whose pip resolves other versions reuses the
committed results instead of finding every one stale, and the lock file (`constraints.txt`) pins the
versions that made them.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import platform
import re
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, distributions, version
from pathlib import Path
from typing import NamedTuple


def versions(plugins: Iterable[str] = ()) -> dict[str, str]:
    """Versions of the interpreter and the numerical stack, for every JSON report; and of each installed
    distribution named in `plugins` as its metadata names it (the packages whose checks ran, as
    `lab.core.registry.origin` names them; a name no distribution has is left out)."""
    found = dict(_stack())
    wanted = set(plugins) - set(found)
    if wanted:  # reading every distribution's metadata took about 13 ms a call: only when asked
        found |= dict(
            sorted((d.metadata["Name"], d.version) for d in distributions() if d.metadata["Name"] in wanted)
        )
    return found


@functools.cache
def _stack() -> tuple[tuple[str, str], ...]:
    """The interpreter's and the numerical stack's versions, read once per process: a process keeps the
    modules it imported (every training run of `replicate` stamps its record with them)."""
    found = [("python", platform.python_version())]
    for dist in ("moe-lab", "numpy", "scipy", "numba", "hypothesis"):
        try:
            found.append((dist, version(dist)))
        except PackageNotFoundError:
            found.append((dist, "not installed"))
    return tuple(found)


def environment() -> dict[str, str]:
    """What else sets a run's last bits: CPU, the SIMD level NumPy dispatches to, the CPU Numba compiles
    for, the BLAS library with its kernel, and the threads of BLAS and Numba (each "unknown" if unread)."""
    import numba  # here, not at the top: a fingerprint needs no Numba
    from threadpoolctl import threadpool_info

    blas = sorted(  # in a fixed order: threadpoolctl lists them as each process happened to load them
        (lib for lib in threadpool_info() if lib.get("user_api") == "blas"),
        key=lambda lib: [str(lib.get(k)) for k in ("internal_api", "version", "architecture", "filepath")],
    )
    return {
        "cpu": cpu_model(),
        "simd": _numpy_simd(),
        "numba_cpu": _numba_cpu(),
        "blas": "; ".join(f"{b['internal_api']} {b['version']} ({b['architecture']})" for b in blas)
        or "unknown",
        "blas_threads": "; ".join(str(b["num_threads"]) for b in blas) or "unknown",
        "numba_threads": str(numba.get_num_threads()),
    }


def cpu_model() -> str:
    """The CPU's model name (Linux's /proc/cpuinfo, else what `platform` knows)."""
    try:
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
    except OSError:
        found = None
    return found.group(1).strip() if found else platform.processor() or platform.machine() or "unknown"


def _numpy_simd() -> str:
    """The highest SIMD target NumPy dispatches to on this CPU (its baseline if it dispatches to none)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x, which the lock file does not pin
        return "unknown"
    running = [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)]
    return (running or umath.__cpu_baseline__ or ["unknown"])[-1]


def _numba_cpu() -> str:
    """The CPU LLVM compiles Numba's kernels for (its name says the vector instructions it may use): the
    host's, or the one NUMBA_CPU_NAME names."""
    from llvmlite import binding
    from numba.core import config

    return config.CPU_NAME or binding.get_host_cpu_name()


_LAB_ROOT = Path(__file__).resolve().parents[1]
MACHINERY = ("core", "sweeps", "cli", "docs")  # the lab's generic layers: a result depends on none of them
# every other package of `lab` is science: the kernels and each paper's package
SCIENCE_PACKAGES = tuple(
    f"lab.{path.parent.name}"
    for path in sorted(_LAB_ROOT.glob("*/__init__.py"))
    if path.parent.name not in MACHINERY
)


def _module_file(name: str) -> Path | None:
    """The source file of the `lab` module `name`, or None when `name` is not a module (an attribute)."""
    base = _LAB_ROOT.parent.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


class Source(NamedTuple):
    """What the fingerprint reads of one source file: the `lab` modules (or module attributes) it imports
    (the lab uses absolute imports), and its meaning (`meaning`)."""

    imports: frozenset[str]
    meaning: str


def _source(path: Path) -> Source:
    """`Source` of the file at `path`, parsed once per state of the file (path, inode, modification and
    change times in ns, size), however many roots' fingerprints include it."""
    stat = path.stat()
    return _parsed(str(path), stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)


@functools.lru_cache(maxsize=1024)
def _parsed(path: str, *state: int) -> Source:
    """`Source` of the file at `path` in one state (`_source`): one parse for its imports and meaning."""
    tree = ast.parse(Path(path).read_text())
    found = set()
    for node in ast.walk(tree):  # before `_without_docstrings` edits the tree
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    imports = frozenset(name for name in found if name.startswith("lab."))
    return Source(imports, _without_docstrings(tree))


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
        todo += [m for m in _source(path).imports if m.startswith(SCIENCE_PACKAGES)]
        if name == "lab.kernels":  # backend() loads its kernel modules by name, not by an import
            todo += [
                f"lab.kernels.{f.stem}" for f in sorted(path.parent.glob("*.py")) if f.stem != "__init__"
            ]
    return sorted(seen)


def meaning(source: str) -> str:
    """The syntax tree of Python `source` without docstrings, comments, formatting or line numbers."""
    return _without_docstrings(ast.parse(source))


def _without_docstrings(tree: ast.Module) -> str:
    """`meaning` of a parsed module (its tree loses its docstrings)."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree, include_attributes=False)


@functools.cache
def code_fingerprint(root: str) -> str:
    """SHA-256 over the meaning (`meaning`) of `root`'s science modules; see the module docstring."""
    digest = hashlib.sha256()
    for name in science_modules(root):
        digest.update(name.encode() + b"\0" + _source(_module_file(name)).meaning.encode() + b"\0")
    return digest.hexdigest()[:16]
